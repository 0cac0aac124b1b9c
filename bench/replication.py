"""Replication, kvik against redis-server in the same run: three figures,
each in a section of the report of its own.

**Full resync time** (section `sync`): how long a replica takes, from
`REPLICAOF` to serving, to copy a master of KEYS keys.

For each key count, three pairs, master -> replica, each in scratch
directories of its own with no save points:

- kvik -> redis-server and redis-server -> redis-server: the same replica,
  so the two differ in the master's side, both syncing diskless
  (`repl-diskless-sync yes`, the default, with `repl-diskless-sync-delay 0`
  so that neither waits for more replicas; kvik: a fork-free snapshot
  streamed to the socket as it is made; redis-server 7.0: a forked child
  writing the RDB to the socket);
- redis-server -> kvik against redis-server -> redis-server: the same master,
  so the two differ in the replica's side (reading and loading the RDB).

The master is filled with KEYS pipelined `SET key:<i> <value>` (VALUE_BYTES
bytes, bench/server_report.py's loader). Each round starts a fresh replica,
sends it `REPLICAOF`, and polls its `INFO replication` every 10 ms until it
shows `master_link_status:up` and `master_sync_in_progress:0`; then its
`DBSIZE` must be KEYS. The figure is the median over REPEATS rounds (the
pairs take turns within a round).

**The master while a replica syncs** (section `load`): what a full resync
costs the clients of the master. The same two masters (kvik-server and
redis-server, KEYS keys), each given a fresh redis-server replica every
round, so that only the master differs. bench/bgsave.py's two client
processes write to the master for the whole round: the load client
(pipelined batches of LOAD_BATCH `SET`s of random existing keys, at
LOAD_RATE writes a second; 0, the default, is as fast as the replies come
back) and the latency client (one `SET` every LAT_INTERVAL_US µs, each
timed). After WARMUP_SECONDS, the steady window: STEADY_SECONDS with no
replica attached. Then `REPLICAOF` goes to the replica, and the sync window
runs from sending it to the first 10 ms poll of the replica that shows the
link up and no sync in progress (as above). For each window:

- writes/s: both clients' writes completed in it (load batches by the time
  their last reply came, latency requests by the time they were sent),
  divided by its length;
- the master's CPU-seconds: utime + stime of /proc/PID/stat at both ends,
  plus cutime + cstime (children it has reaped) and the utime + stime of the
  children still there, so that redis-server's fork child counts with its
  parent (kvik does not fork); clock ticks of 1/CLK_TCK s. Over the window's
  length, the cores it kept busy;
- writes per master CPU-second: the first over the second. The clients,
  the replica and the master share the machine's cores; a load client that
  runs as fast as it can is held back by the CPU the server leaves it as
  much as by the server, and then this is the fair comparison. (The load
  client waits for each batch's replies, so it is also bound by round
  trips between processes, which are quicker when no core is idle: its
  writes/s can rise while the sync keeps the cores busy.) A sync window
  under SHORT_WINDOW seconds is flagged in the report;
- the latency client's p50 / p99 / max, requests started in the window.

during ÷ before is taken per round, then the median.

**Replication lag** (section `lag`): how far a connected replica trails a
master under a heavy write load. Pairs LAG_PAIRS (kvik -> kvik,
redis-server -> redis-server, kvik -> redis-server), each started fresh and
empty every round, the replica sent `REPLICAOF` and waited for as above.
Then LAG_BENCH (redis-benchmark, or kvik-benchmark, which takes the same
options) runs `-c LAG_CLIENTS -P LAG_PIPELINE -t set -n LAG_REQUESTS -r KEYS
-d VALUE_BYTES --csv` against the master. While it runs, every 10 ms, `INFO
replication` goes to the master and to the replica back to back, before
either reply is read, and one lag sample is the master's
`master_repl_offset` less the replica's `slave_repl_offset` (the stream it
has applied; `master_repl_offset` where a replica has no such line), 0 where
the replica was read later and had caught up. Samples taken before the
master's offset first moves (the benchmark still connecting) are left out.
The benchmark's exit is the end of the load: the master's offset is read
then, and the replica is polled every millisecond until its offset reaches
it; that wait is the catch-up time. requests/s is the benchmark's own
figure. Per round: p50, p99 and max of the samples; the figures are their
medians over the rounds.

kvik ÷ redis is always the ratio of the two medians.

    python3 bench/replication.py KVIK_BIN OUT_MD META [KEYS ...]

Environment: SECTIONS ["sync load lag"], REPEATS [3], VALUE_BYTES [64],
THREADS [nproc] (kvik --threads), SYNC_TIMEOUT [600] seconds, COMMAND (shown
in the report); for `load`: STEADY_SECONDS [3], WARMUP_SECONDS [0.5],
LOAD_BATCH [16], LOAD_RATE [0], LAT_INTERVAL_US [500]; for `lag`: LAG_PAIRS
["kvik:kvik redis:redis kvik:redis"], LAG_CLIENTS [50], LAG_PIPELINE [16],
LAG_REQUESTS [5000000], LAG_BENCH [redis-benchmark], CATCHUP_TIMEOUT [60]
seconds.
"""

import csv
import io
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bgsave  # noqa: E402
from server_report import Client, encode, free_port, load_keys, wait_ready  # noqa: E402

PAIRS = [("kvik", "redis"), ("redis", "redis"), ("redis", "kvik")]
SECTIONS = ("sync", "load", "lag")
CLK_TCK = os.sysconf("SC_CLK_TCK")
LABEL = {"kvik": "kvik", "redis": "redis"}
# Sync windows shorter than this (seconds) are flagged in the report.
SHORT_WINDOW = 0.5


class Server(bgsave.Server):
    """bgsave.py's server (its INFO and stop), started with the options of
    a replication run: a diskless sync without its delay."""

    def __init__(self, name, kvik_bin, directory, threads):
        self.name, self.dir = name, directory
        self.port = free_port()
        self.log = os.path.join(directory, "server.log")
        if name == "kvik":
            args = [kvik_bin, "--bind", "127.0.0.1", "--port", str(self.port), "--threads", str(threads)]
        else:
            args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--daemonize", "no"]
        args += ["--repl-diskless-sync-delay", "0"]
        args += ["--save", "", "--appendonly", "no", "--dir", directory, "--logfile", self.log]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_ready(self.port, 60):
            self.proc.kill()
            raise RuntimeError("%s did not start in %s" % (name, directory))
        self.pid = self.proc.pid
        self.client = Client(self.port, timeout=600)


def replicate(replica, master_port):
    reply = replica.client.call("REPLICAOF", "127.0.0.1", str(master_port))
    if isinstance(reply, Exception):
        raise RuntimeError("REPLICAOF: %s" % reply)


def await_sync(replica, started, timeout):
    """Poll the replica every 10 ms until it is synced; a deadline of
    `timeout` seconds after `started` (a perf_counter time)."""
    deadline = started + timeout
    while True:
        info = replica.info("replication")
        if info.get("master_link_status") == "up" and info.get("master_sync_in_progress") == "0":
            return
        if time.perf_counter() > deadline:
            raise RuntimeError("%s replica did not sync within %d s" % (replica.name, timeout))
        time.sleep(0.01)


def check_size(replica, keys):
    size = replica.client.call("DBSIZE")
    if int(size) != keys:
        raise RuntimeError("%s replica holds %r keys, not %d" % (replica.name, size, keys))


def sync_seconds(master, replica_name, kvik_bin, threads, keys, scratch, timeout):
    """Seconds from REPLICAOF to a serving replica of `master`."""
    directory = tempfile.mkdtemp(prefix="replica-", dir=scratch)
    replica = Server(replica_name, kvik_bin, directory, threads)
    try:
        started = time.perf_counter()
        replicate(replica, master.port)
        await_sync(replica, started, timeout)
        took = time.perf_counter() - started
        check_size(replica, keys)
        return took
    finally:
        replica.stop()
        shutil.rmtree(directory, ignore_errors=True)


# --- the master while a replica syncs -------------------------------------

def stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (field 3 on)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_seconds(pid):
    """CPU-seconds of PID and its children: its own utime + stime, the
    cutime + cstime of the children it has reaped, and the utime + stime of
    those it has not. A child reaped between reading the parent and reading
    the children would count in neither, so the parent is read again and
    the whole read repeated when its children's times moved."""
    for _ in range(5):
        own = stat_fields(pid)
        ticks = sum(int(x) for x in own[11:15])
        for c in bgsave.children(pid):
            try:
                kid = stat_fields(c)
                ticks += int(kid[11]) + int(kid[12])
            except (OSError, IndexError, ValueError):
                pass
        if stat_fields(pid)[13:15] == own[13:15]:
            break
    return ticks / CLK_TCK


def in_window(times, a, b):
    return sum(1 for t in times if a <= t < b)


def sync_under_load(master, kvik_bin, threads, keys, cfg, scratch, seq):
    """One round: the master's writes/s, CPU-seconds and latency in a
    steady window, then while a fresh redis-server replica syncs from it."""
    directory = tempfile.mkdtemp(prefix="replica-", dir=scratch)
    # Started before the clients, so that its start-up is in no window.
    replica = Server("redis", kvik_bin, directory, threads)
    ctx = multiprocessing.get_context("fork")
    stop, lat_ready, load_ready = ctx.Event(), ctx.Event(), ctx.Event()
    lat_out = os.path.join(scratch, "lat-%d.bin" % seq)
    load_out = os.path.join(scratch, "load-%d.bin" % seq)
    procs = [
        ctx.Process(target=bgsave.latency_client, args=(
            master.port, keys, cfg["value_bytes"], cfg["lat_interval_ns"], lat_ready, stop, lat_out, seq * 2 + 1)),
        ctx.Process(target=bgsave.load_client, args=(
            master.port, keys, cfg["value_bytes"], cfg["load_batch"], cfg["load_rate"], load_ready, stop,
            load_out, seq * 2 + 2)),
    ]
    clock = time.perf_counter_ns
    try:
        for p in procs:
            p.start()
        if not (lat_ready.wait(30) and load_ready.wait(30)):
            raise RuntimeError("%s: the clients did not connect" % master.name)
        time.sleep(cfg["warmup"])
        steady0, cpu0 = clock(), cpu_seconds(master.pid)
        time.sleep(cfg["steady"])
        steady1, cpu1 = clock(), cpu_seconds(master.pid)
        sync0, cpu2 = clock(), cpu_seconds(master.pid)
        replicate(replica, master.port)
        await_sync(replica, sync0 / 1e9, cfg["sync_timeout"])
        sync1, cpu3 = clock(), cpu_seconds(master.pid)
    finally:
        stop.set()
        bgsave.end_clients(procs)
    try:
        check_size(replica, keys)
    finally:
        replica.stop()
        shutil.rmtree(directory, ignore_errors=True)
    lat = bgsave.read_array(lat_out)
    lat_errors, n = lat[0], (len(lat) - 1) // 2
    starts, lats = lat[1:1 + n], lat[1 + n:]
    ld = bgsave.read_array(load_out)
    load_errors, done = ld[0], ld[1:]
    for path in (lat_out, load_out):
        os.remove(path)
    row = {"sync_s": (sync1 - sync0) / 1e9, "errors": lat_errors + load_errors}
    for label, a, b, cpu in (("before", steady0, steady1, cpu1 - cpu0), ("during", sync0, sync1, cpu3 - cpu2)):
        writes = in_window(done, a, b) * cfg["load_batch"] + in_window(starts, a, b)
        row["wps_" + label] = writes / ((b - a) / 1e9)
        row["cpu_" + label] = cpu
        row["cores_" + label] = cpu / ((b - a) / 1e9)
        row["wpc_" + label] = writes / cpu if cpu > 0 else None
        row["lat_" + label] = bgsave.percentiles([lats[i] / 1000 for i in range(n) if a <= starts[i] < b])
    row["drop"] = row["wps_during"] / row["wps_before"] if row["wps_before"] else None
    return row


def summarize_load(rows):
    def m(key, sub=None):
        return bgsave.med(rows, key, sub)
    s = {k: m(k) for k in ("sync_s", "wps_before", "wps_during", "drop", "cpu_before", "cpu_during",
                           "cores_before", "cores_during", "wpc_before", "wpc_during")}
    for w in ("before", "during"):
        for p in ("p50", "p99", "max", "n"):
            s["lat_%s_%s" % (w, p)] = m("lat_" + w, p)
    s["errors"] = sum(r["errors"] for r in rows)
    return s


# --- replication lag ---------------------------------------------------------

def parse_info(reply, who):
    return bgsave.parse_info(reply, "%s: INFO replication" % who)


def replica_offset(info):
    return int(info.get("slave_repl_offset", info.get("master_repl_offset", "-1")))


def offsets(master, replica):
    """(master offset, replica offset, replica link up): both INFO requests
    are sent before either reply is read, so that the two are close."""
    replica.client.sock.sendall(encode(("INFO", "replication")))
    master.client.sock.sendall(encode(("INFO", "replication")))
    rinfo = parse_info(replica.client.read_reply(), replica.name)
    minfo = parse_info(master.client.read_reply(), master.name)
    return int(minfo["master_repl_offset"]), replica_offset(rinfo), rinfo.get("master_link_status") == "up"


def parse_rps(text):
    """requests/s of the SET line of redis-benchmark's (or kvik-benchmark's) --csv output."""
    for fields in csv.reader(io.StringIO(text)):
        if fields and fields[0] == "SET" and len(fields) > 1:
            try:
                return float(fields[1])
            except ValueError:
                return None
    return None


def lag_round(pair, kvik_bin, threads, keys, cfg, scratch):
    dirs = [tempfile.mkdtemp(prefix="lag-%s-" % role, dir=scratch) for role in ("master", "replica")]
    servers = []
    try:
        master = Server(pair[0], kvik_bin, dirs[0], threads)
        servers.append(master)
        replica = Server(pair[1], kvik_bin, dirs[1], threads)
        servers.append(replica)
        started = time.perf_counter()
        replicate(replica, master.port)
        await_sync(replica, started, cfg["sync_timeout"])
        m0 = offsets(master, replica)[0]
        cmd = [cfg["lag_bench"], "-h", "127.0.0.1", "-p", str(master.port), "-c", str(cfg["lag_clients"]),
               "-P", str(cfg["lag_pipeline"]), "-t", "set", "-n", str(cfg["lag_requests"]), "-r", str(keys),
               "-d", str(cfg["value_bytes"]), "--csv"]
        clock = time.perf_counter
        bench = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ended = threading.Event()
        result = {}

        def wait_bench():
            result["out"], result["err"] = bench.communicate()
            result["end"] = clock()
            ended.set()
        waiter = threading.Thread(target=wait_bench, daemon=True)
        waiter.start()
        lags, down = [], 0
        next_tick = clock()
        while not ended.is_set():
            m_off, r_off, up = offsets(master, replica)
            if not up:
                down += 1
            if m_off > m0:
                lags.append(max(0, m_off - r_off))
            next_tick += bgsave.TICK
            ended.wait(max(0.0, next_tick - clock()))
        waiter.join()
        end = result["end"]
        if bench.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (cmd[0], bench.returncode, result["err"].strip()[-500:]))
        final = offsets(master, replica)[0]
        deadline = end + cfg["catchup_timeout"]
        while True:
            r_off = replica_offset(replica.info("replication"))
            now = clock()
            if r_off >= final:
                break
            if now > deadline:
                raise RuntimeError("%s -> %s: the replica is %d bytes behind %gs after the load" % (
                    pair[0], pair[1], final - r_off, cfg["catchup_timeout"]))
            time.sleep(0.001)
        stats = bgsave.percentiles(lags)
        return {
            "rps": parse_rps(result["out"]),
            "lag_p50": stats["p50"] if stats else None,
            "lag_p99": stats["p99"] if stats else None,
            "lag_max": stats["max"] if stats else None,
            "samples": len(lags),
            "down": down,
            "catchup_ms": (now - end) * 1e3,
        }
    finally:
        for s in servers:
            s.stop()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def summarize_lag(rows):
    s = {k: bgsave.med(rows, k) for k in ("rps", "lag_p50", "lag_p99", "lag_max", "samples", "catchup_ms")}
    s["down"] = sum(r["down"] for r in rows)
    return s


# --- the run -----------------------------------------------------------------

def env_pairs(text):
    pairs = []
    for word in text.split():
        m, _, r = word.partition(":")
        if m not in LABEL or r not in LABEL:
            raise SystemExit("LAG_PAIRS: %r is not MASTER:REPLICA of kvik and redis" % word)
        pairs.append((m, r))
    return pairs


def main(argv):
    kvik_bin, out_md, meta = argv[1], argv[2], argv[3]
    counts = [int(k) for k in argv[4:]] or [1_000_000]
    sections = os.environ.get("SECTIONS", " ".join(SECTIONS)).split()
    for s in sections:
        if s not in SECTIONS:
            raise SystemExit("SECTIONS: unknown %r (%s)" % (s, ", ".join(SECTIONS)))
    cfg = {
        "repeats": bgsave.env_int("REPEATS", 3),
        "value_bytes": bgsave.env_int("VALUE_BYTES", 64),
        "threads": bgsave.env_int("THREADS", os.cpu_count() or 1),
        "sync_timeout": bgsave.env_int("SYNC_TIMEOUT", 600),
        "steady": bgsave.env_float("STEADY_SECONDS", 3),
        "warmup": bgsave.env_float("WARMUP_SECONDS", 0.5),
        "load_batch": bgsave.env_int("LOAD_BATCH", 16),
        "load_rate": bgsave.env_int("LOAD_RATE", 0),
        "lat_interval_ns": bgsave.env_int("LAT_INTERVAL_US", 500) * 1000,
        "lag_pairs": env_pairs(os.environ.get("LAG_PAIRS", "kvik:kvik redis:redis kvik:redis")),
        "lag_clients": bgsave.env_int("LAG_CLIENTS", 50),
        "lag_pipeline": bgsave.env_int("LAG_PIPELINE", 16),
        "lag_requests": bgsave.env_int("LAG_REQUESTS", 5_000_000),
        "lag_bench": os.environ.get("LAG_BENCH", "redis-benchmark"),
        "catchup_timeout": bgsave.env_float("CATCHUP_TIMEOUT", 60),
    }
    repeats, value_bytes, threads, timeout = cfg["repeats"], cfg["value_bytes"], cfg["threads"], cfg["sync_timeout"]
    scratch = tempfile.mkdtemp(prefix="kvik-bench-repl-")
    rows, load_rows, lag_rows = [], [], []
    seq = 0
    try:
        for keys in counts:
            if "sync" not in sections and "load" not in sections:
                break
            masters = {}
            try:
                for name in ("kvik", "redis"):
                    directory = tempfile.mkdtemp(prefix="master-%s-" % name, dir=scratch)
                    masters[name] = Server(name, kvik_bin, directory, threads)
                    load_keys(masters[name].client, keys, value_bytes)
                if "sync" in sections:
                    times = {pair: [] for pair in PAIRS}
                    for r in range(repeats):
                        order = PAIRS[r % len(PAIRS):] + PAIRS[: r % len(PAIRS)]
                        for pair in order:
                            took = sync_seconds(masters[pair[0]], pair[1], kvik_bin, threads, keys, scratch, timeout)
                            times[pair].append(took)
                            print("%d keys, %s -> %s: %.3f s" % (keys, pair[0], pair[1], took), file=sys.stderr)
                    rows.append((keys, {pair: statistics.median(v) for pair, v in times.items()}))
                if "load" in sections:
                    names = ["kvik", "redis"]
                    got = {name: [] for name in names}
                    for r in range(repeats):
                        for name in names[r % 2:] + names[:r % 2]:
                            seq += 1
                            row = sync_under_load(masters[name], kvik_bin, threads, keys, cfg, scratch, seq)
                            got[name].append(row)
                            print("%d keys, %s master under load: sync %.3f s, writes/s %s -> %s, "
                                  "writes per CPU-s %s -> %s, p99 %s -> %s µs" % (
                                      keys, name, row["sync_s"], bgsave.num(row["wps_before"]),
                                      bgsave.num(row["wps_during"]), bgsave.num(row["wpc_before"]),
                                      bgsave.num(row["wpc_during"]), bgsave.us((row["lat_before"] or {}).get("p99")),
                                      bgsave.us((row["lat_during"] or {}).get("p99"))), file=sys.stderr)
                    load_rows.append((keys, {name: summarize_load(v) for name, v in got.items()}))
            finally:
                for m in masters.values():
                    m.stop()
        if "lag" in sections:
            pairs = cfg["lag_pairs"]
            for keys in counts:
                got = {pair: [] for pair in pairs}
                for r in range(repeats):
                    for pair in pairs[r % len(pairs):] + pairs[:r % len(pairs)]:
                        row = lag_round(pair, kvik_bin, threads, keys, cfg, scratch)
                        got[pair].append(row)
                        print("%d keys, %s -> %s under load: %s requests/s, lag p50 %s p99 %s max %s bytes, "
                              "catch-up %.1f ms" % (
                                  keys, pair[0], pair[1], bgsave.num(row["rps"]), bgsave.num(row["lag_p50"]),
                                  bgsave.num(row["lag_p99"]), bgsave.num(row["lag_max"]), row["catchup_ms"]),
                              file=sys.stderr)
                lag_rows.append((keys, {pair: summarize_lag(v) for pair, v in got.items()}))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_report(out_md, meta, rows, repeats, value_bytes, threads, load_rows, lag_rows, cfg)


# --- the report --------------------------------------------------------------

def div(a, b):
    return a / b if a is not None and b else None


def fixed(x, digits=2):
    return "—" if x is None else "%.*f" % (digits, x)


def write_report(out_md, meta, rows, repeats, value_bytes, threads, load_rows=(), lag_rows=(), cfg=None):
    lines = ["# Replication, kvik against redis-server", ""]
    lines.append("Written by `%s`. Medians of %d rounds; %d-byte values; kvik `--threads %d`. See bench/replication.py."
                 % (os.environ.get("COMMAND", "bench/replication.sh"), repeats, value_bytes, threads))
    lines.append("")
    cores = os.cpu_count()
    if meta != "-" and os.path.exists(meta):
        with open(meta) as f:
            got = [l.strip() for l in f if l.strip()]
        lines.append("Machine: " + ", ".join(got))
        lines.append("")
        cores = next((l.split("=", 1)[1] for l in got if l.startswith("cores=")), cores)
    if rows:
        lines += full_sync_section(rows)
    if load_rows:
        lines += load_section(load_rows, cfg, cores)
    if lag_rows:
        lines += lag_section(lag_rows, cfg, cores)
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def full_sync_section(rows):
    lines = ["## Full resync: time to a serving replica", ""]
    lines.append("Both masters sync diskless with `repl-diskless-sync-delay 0`: redis-server")
    lines.append("from a forked child, kvik from a thread, with no fork.")
    lines.append("")
    lines.append("| keys | kvik → redis | redis → redis | master kvik ÷ redis | redis → kvik | replica kvik ÷ redis |")
    lines.append("|---:|---:|---:|---:|---:|---:|")
    for keys, t in rows:
        kr, rr, rk = t[("kvik", "redis")], t[("redis", "redis")], t[("redis", "kvik")]
        lines.append("| %s | %.2f s | %.2f s | %.2f | %.2f s | %.2f |" % (
            format(keys, ","), kr, rr, kr / rr, rk, rk / rr))
    lines.append("")
    lines.append("A ratio below 1 means kvik is faster.")
    lines.append("")
    return lines


def load_section(load_rows, cfg, cores):
    offered = ("as fast as its replies come back" if not cfg["load_rate"]
               else "at %s writes/s" % bgsave.num(cfg["load_rate"]))
    lines = ["## The master's writes and latency while a replica syncs", ""]
    lines.append(
        "Each master, kvik-server or redis-server (filled with the keys of the row), gets a fresh redis-server "
        "replica every round, so that only the master differs. Two client processes write to it throughout "
        "(bench/bgsave.py's): a load client sending pipelined batches of %d `SET`s of random existing keys %s, "
        "and a latency client sending one `SET` every %d µs and timing it. After %g s of warm-up, the *before* "
        "window is %g s with no replica; the *sync* window runs from sending `REPLICAOF` to the replica to the "
        "first 10 ms poll of its `INFO replication` showing `master_link_status:up` and "
        "`master_sync_in_progress:0`. **writes/s** counts both clients' writes completed in a window over its "
        "length; **during ÷ before** is per round, then the median. The master's **CPU-s** is utime + stime "
        "from /proc/PID/stat over the window, its fork children's included (redis-server's sync child; kvik "
        "does not fork), in ticks of 1/%d s, so a window of well under a second gives a rough figure. On this "
        "%s-core machine the Python clients, the replica and the master compete for the same cores, and the "
        "load client is saturated: writes/s shows how much CPU a server leaves its client as much as how fast "
        "it is, and **writes per master CPU-s** (the window's writes over the master's CPU-seconds in it) is "
        "the fair comparison. The load client waits for each batch's replies, so it is bound by round trips "
        "between processes, and those are quicker when no core is left idle (an idle core, a virtual one "
        "especially, is slow to wake): writes/s can even rise in the sync window, when the replica and "
        "redis-server's fork child keep the cores busy. Latencies are the latency client's requests started in the window, in µs. "
        "kvik ÷ redis above 1 favours kvik in the writes rows, below 1 in the time, CPU and latency rows."
        % (cfg["load_batch"], offered, cfg["lat_interval_ns"] // 1000, cfg["warmup"], cfg["steady"], CLK_TCK,
           cores))
    lines.append("")
    lines.append("| keys | figure | kvik master | redis-server master | kvik ÷ redis |")
    lines.append("|---:|---|---:|---:|---:|")
    figures = [
        ("sync window, s", "sync_s", lambda x: fixed(x, 3)),
        ("writes/s before", "wps_before", bgsave.num),
        ("writes/s during sync", "wps_during", bgsave.num),
        ("writes/s during ÷ before", "drop", fixed),
        ("master CPU-s, before window", "cpu_before", fixed),
        ("master CPU-s, sync window", "cpu_during", fixed),
        ("master cores busy (CPU-s ÷ window), before", "cores_before", fixed),
        ("master cores busy (CPU-s ÷ window), during sync", "cores_during", fixed),
        ("writes per master CPU-s, before", "wpc_before", bgsave.num),
        ("writes per master CPU-s, during sync", "wpc_during", bgsave.num),
        ("latency p50 before, µs", "lat_before_p50", bgsave.us),
        ("latency p99 before, µs", "lat_before_p99", bgsave.us),
        ("latency max before, µs", "lat_before_max", bgsave.us),
        ("latency p50 during sync, µs", "lat_during_p50", bgsave.us),
        ("latency p99 during sync, µs", "lat_during_p99", bgsave.us),
        ("latency max during sync, µs", "lat_during_max", bgsave.us),
        ("latency samples before / during", None, None),
        ("error replies", "errors", bgsave.num),
    ]
    for keys, got in load_rows:
        k, r = got["kvik"], got["redis"]
        first = True
        for label, key, fmt in figures:
            cell = format(keys, ",") if first else ""
            first = False
            if key is None:
                lines.append("| %s | %s | %s / %s | %s / %s | |" % (
                    cell, label, bgsave.num(k["lat_before_n"]), bgsave.num(k["lat_during_n"]),
                    bgsave.num(r["lat_before_n"]), bgsave.num(r["lat_during_n"])))
                continue
            ratio = "" if key == "errors" else fixed(div(k[key], r[key]))
            lines.append("| %s | %s | %s | %s | %s |" % (cell, label, fmt(k[key]), fmt(r[key]), ratio))
    lines.append("")
    short = min(s["sync_s"] for _, got in load_rows for s in got.values())
    if short < SHORT_WINDOW:
        lines.append("A sync window here is as short as %.3f s: its writes/s and CPU figures rest on a few "
                     "scheduler slices and clock ticks, and say little; more keys make it longer." % short)
        lines.append("")
    return lines


def lag_section(lag_rows, cfg, cores):
    pairs = cfg["lag_pairs"]
    set_bytes = len(encode(("SET", "key:%012d" % 0, "x" * cfg["value_bytes"])))
    lines = ["## Replication lag under %d clients, pipeline %d" % (cfg["lag_clients"], cfg["lag_pipeline"]), ""]
    lines.append(
        "Each pair, master → replica, starts empty every round; the replica is sent `REPLICAOF` and waited for "
        "until synced. Then `%s -c %d -P %d -t set -n %s -r KEYS -d %d` writes to the master, and every 10 ms "
        "`INFO replication` goes to the master and to the replica back to back, before either reply is read: "
        "one **lag** sample is the master's `master_repl_offset` less the replica's `slave_repl_offset` (the "
        "replication stream it has applied), 0 where the replica, read a moment later, had caught up. Samples "
        "taken before the master's offset first moves (the benchmark still connecting) are left out. Lag is in "
        "bytes of the stream; one `SET` of this load is %d bytes of it, and the bracket gives the lag in `SET`s. "
        "**catch-up** runs from the benchmark's exit to the first 1 ms poll at which the replica's offset "
        "reaches the master's offset read at that exit: a few ms means the replica had kept up. A master's "
        "offset counts the stream it has made, so a write it has answered but not yet put in its stream is "
        "in neither offset. **requests/s** is the benchmark's own figure. p50, p99 and max are per round, then the median over the rounds. The "
        "benchmark and both servers share the %s cores, so a replica's lag also shows how much CPU its "
        "master and the load leave it. Each ÷ column is the pair's median over redis → redis's: above 1 "
        "favours kvik for requests/s, below 1 for lag and catch-up."
        % (os.path.basename(cfg["lag_bench"]), cfg["lag_clients"], cfg["lag_pipeline"],
           format(cfg["lag_requests"], ","), cfg["value_bytes"], set_bytes, cores))
    lines.append("")
    base = ("redis", "redis")
    if base in pairs:
        pairs = [base] + [p for p in pairs if p != base]
    head = ["keys", "figure"]
    for pair in pairs:
        head.append("%s → %s" % pair)
        if pair != base and base in pairs:
            head.append("%s → %s ÷ redis → redis" % pair)
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---:|---|" + "---:|" * (len(head) - 2))

    def in_sets(x):
        return "—" if x is None else "%s (%s)" % (bgsave.num(x), bgsave.num(x / set_bytes))
    figures = [
        ("load requests/s", "rps", bgsave.num),
        ("lag p50, bytes (SETs)", "lag_p50", in_sets),
        ("lag p99, bytes (SETs)", "lag_p99", in_sets),
        ("lag max, bytes (SETs)", "lag_max", in_sets),
        ("catch-up after the load, ms", "catchup_ms", lambda x: fixed(x, 1)),
        ("lag samples", "samples", bgsave.num),
        ("samples with the link down", "down", bgsave.num),
    ]
    for keys, got in lag_rows:
        first = True
        for label, key, fmt in figures:
            cells = [format(keys, ",") if first else "", label]
            first = False
            for pair in pairs:
                cells.append(fmt(got[pair][key]))
                if pair != base and base in pairs:
                    cells.append("" if key in ("samples", "down") else fixed(div(got[pair][key], got[base][key])))
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines


if __name__ == "__main__":
    main(sys.argv)
