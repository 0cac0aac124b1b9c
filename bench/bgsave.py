"""Background snapshot cost, kvik-server against redis-server in the same run:
how long `BGSAVE` takes while clients write, how much memory it costs, and
what it does to the latency of a client that keeps writing.

For each key count, every server is started in a scratch directory of its
own with no save points and filled with KEYS pipelined `SET key:<i> <value>`
(VALUE_BYTES-byte values, the loader of bench/persistence.py). Then, REPEATS
rounds (the servers take turns within a round, the order rotating):

- two client processes start on their own sockets: the latency client, which
  SETs a random existing key, one request at a time, one every LAT_INTERVAL_US
  microseconds (paced; a request that is late starts at once), timing each
  with time.perf_counter_ns; and, with LOAD=1, the load client, which SETs
  random existing keys in pipelined batches of LOAD_BATCH commands at
  LOAD_RATE writes a second (0: as fast as it can);
- after WARMUP_SECONDS, the steady window: STEADY_SECONDS, VmRSS of the
  server sampled every 10 ms; its median is the pre-save RSS;
- then `BGSAVE`; the save window runs from sending it to the first
  `INFO persistence` poll (every 10 ms) that shows `rdb_bgsave_in_progress:0`
  once the save was seen running (or `rdb_saves` / `rdb_last_save_time` moved).
  Every 10 ms the server's VmRSS is sampled, and so are its child processes
  (from /proc/PID/task/*/children): their VmRSS and their private pages
  (Private_Clean + Private_Dirty of /proc/CHILD/smaps_rollup). A fork's child
  shares its pages with the parent until the parent writes them, so the
  summed RSS counts the dataset twice; parent growth + child private is the
  memory the save really added, and what redis reports as
  `rdb_last_cow_size`. Afterwards `rdb_last_bgsave_status`,
  `rdb_last_cow_size` (INFO persistence) and `latest_fork_usec` (INFO stats)
  are read, and dump.rdb must exist (it is removed before each BGSAVE) and
  not be empty.

A server that answers BGSAVE with an error is reported as "not supported".
Figures are medians over the rounds, each figure on its own.

    python3 bench/bgsave.py KVIK_BIN OUT_MD META [KEYS ...]

META: a file of key=value lines about the machine (bench/common.sh
machine_meta), or "-". Environment: SERVERS ["kvik redis"; also valkey],
REPEATS [3], VALUE_BYTES [64], THREADS [nproc] (kvik --threads),
STEADY_SECONDS [3], WARMUP_SECONDS [0.5], LOAD [1], LOAD_BATCH [16],
LOAD_RATE [20000], LAT_INTERVAL_US [500], SAVE_TIMEOUT [600], COMMAND
(the command line shown in the report).
"""

import array
import math
import multiprocessing
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_report import HOST, Client, encode, free_port, load_keys, wait_ready  # noqa: E402

TICK = 0.010
BINARY = {"redis": "redis-server", "valkey": "valkey-server"}


def env_int(name, default):
    return int(os.environ.get(name, str(default)))


def env_float(name, default):
    return float(os.environ.get(name, str(default)))


# --- servers -----------------------------------------------------------------

class Server:
    def __init__(self, name, kvik_bin, directory, threads):
        self.name, self.dir = name, directory
        self.port = free_port()
        self.log = os.path.join(directory, "server.log")
        if name == "kvik":
            args = [kvik_bin, "--bind", "127.0.0.1", "--port", str(self.port), "--threads", str(threads)]
        else:
            args = [BINARY[name], "--bind", "127.0.0.1", "--port", str(self.port), "--daemonize", "no"]
        args += ["--save", "", "--appendonly", "no", "--dir", directory, "--logfile", self.log]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_ready(self.port, 60):
            self.proc.kill()
            raise RuntimeError("%s did not start in %s; its log: %s" % (name, directory, tail(self.log)))
        self.pid = self.proc.pid
        self.client = Client(self.port, timeout=600)

    def info(self, section):
        return parse_info(self.client.call("INFO", section), "%s: INFO %s" % (self.name, section))

    def stop(self):
        try:
            self.client.sock.sendall(encode(("SHUTDOWN", "NOSAVE")))
            self.client.close()
        except OSError:
            pass
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def parse_info(reply, what):
    """The fields of an INFO reply, as a dict; `what` names it in the error
    when the reply is not one."""
    if not isinstance(reply, bytes):
        raise RuntimeError("%s failed: %r" % (what, reply))
    out = {}
    for line in reply.decode(errors="replace").splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def end_clients(procs):
    """Wait for the client processes told to stop; kill those that do not."""
    for p in procs:
        p.join(30)
        if p.exitcode is None:
            p.kill()
            p.join()


def tail(path, lines=10):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --- /proc -------------------------------------------------------------------

def status_kb(pid, field):
    """A `kB` field of /proc/PID/status (0 for a process without it: a zombie)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def children(pid):
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def private_kb(pid):
    total = 0
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Private_Clean:") or line.startswith("Private_Dirty:"):
                    total += int(line.split()[1])
    except (OSError, ValueError):
        pass
    return total


def is_running(pid):
    """False once PID has exited (gone, or a zombie waiting to be reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


# --- clients (each in its own process) ---------------------------------------

def connect(port):
    sock = socket.create_connection((HOST, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_lines(sock, buf, n):
    """Read until buf holds n reply lines (every reply here is one line);
    return (replies bytes, rest, errors among them)."""
    while buf.count(b"\r\n") < n:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    end = 0
    for _ in range(n):
        end = buf.index(b"\r\n", end) + 2
    got, rest = buf[:end], buf[end:]
    errors = 0 if got == b"+OK\r\n" * n else sum(1 for line in got.split(b"\r\n") if line.startswith(b"-"))
    return rest, errors


def pace(next_t, interval_ns, now):
    """Sleep until the next request is due (`interval_ns` after the last
    one was); a client running late starts again from `now`. Returns when
    the following one is due."""
    next_t += interval_ns
    if next_t > now:
        time.sleep((next_t - now) / 1e9)
        return next_t
    return now


def latency_client(port, keys, value_bytes, interval_ns, ready, stop, out_path, seed):
    rng = random.Random(seed)
    value = b"l" * value_bytes
    cmds = [encode((b"SET", b"key:%d" % rng.randrange(keys), value)) for _ in range(8192)]
    sock = connect(port)
    starts, lats = array.array("q"), array.array("q")
    errors, i, buf = 0, 0, b""
    ready.set()
    clock = time.perf_counter_ns
    next_t = clock()
    while not stop.is_set():
        t0 = clock()
        sock.sendall(cmds[i & 8191])
        buf, e = read_lines(sock, buf, 1)
        t1 = clock()
        errors += e
        starts.append(t0)
        lats.append(t1 - t0)
        i += 1
        next_t = pace(next_t, interval_ns, t1)
    sock.close()
    with open(out_path, "wb") as f:
        array.array("q", [errors]).tofile(f)
        starts.tofile(f)
        lats.tofile(f)


def load_client(port, keys, value_bytes, batch, rate, ready, stop, out_path, seed):
    rng = random.Random(seed)
    value = b"w" * value_bytes
    batches = [b"".join(encode((b"SET", b"key:%d" % rng.randrange(keys), value)) for _ in range(batch))
               for _ in range(1024)]
    interval_ns = int(batch * 1e9 / rate) if rate > 0 else 0
    sock = connect(port)
    done = array.array("q")
    errors, i, buf = 0, 0, b""
    ready.set()
    clock = time.perf_counter_ns
    next_t = clock()
    while not stop.is_set():
        sock.sendall(batches[i & 1023])
        buf, e = read_lines(sock, buf, batch)
        t1 = clock()
        errors += e
        done.append(t1)
        i += 1
        if interval_ns:
            next_t = pace(next_t, interval_ns, t1)
    sock.close()
    with open(out_path, "wb") as f:
        array.array("q", [errors]).tofile(f)
        done.tofile(f)


def read_array(path):
    a = array.array("q")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


# --- one round -----------------------------------------------------------------

def percentiles(values):
    """p50, p99, p99.9, max (nearest rank) of values, or None when empty."""
    if not values:
        return None
    s = sorted(values)
    n = len(s)

    def rank(p):
        return s[min(n - 1, max(0, math.ceil(p * n) - 1))]
    return {"p50": rank(0.50), "p99": rank(0.99), "p999": rank(0.999), "max": s[-1], "n": n}


def sample_memory(pid):
    """(parent VmRSS kB, [(child pid, VmRSS kB, private kB, running)])."""
    kids = [(c, status_kb(c, "VmRSS:"), private_kb(c), is_running(c)) for c in children(pid)]
    return status_kb(pid, "VmRSS:"), kids


def saved_marks(info):
    return info.get("rdb_saves"), info.get("rdb_last_save_time")


def one_round(srv, keys, cfg, scratch, seq):
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    lat_ready, load_ready = ctx.Event(), ctx.Event()
    lat_out = os.path.join(scratch, "lat-%d.bin" % seq)
    load_out = os.path.join(scratch, "load-%d.bin" % seq)
    procs = [ctx.Process(target=latency_client, args=(
        srv.port, keys, cfg["value_bytes"], cfg["lat_interval_ns"], lat_ready, stop, lat_out, seq * 2 + 1))]
    if cfg["load"]:
        procs.append(ctx.Process(target=load_client, args=(
            srv.port, keys, cfg["value_bytes"], cfg["load_batch"], cfg["load_rate"], load_ready, stop,
            load_out, seq * 2 + 2)))
    else:
        load_ready.set()
    dump = os.path.join(srv.dir, "dump.rdb")
    if os.path.exists(dump):
        os.remove(dump)
    before = srv.info("persistence")
    marks = saved_marks(before)
    for p in procs:
        p.start()
    row = {"server": srv.name}
    try:
        if not (lat_ready.wait(30) and load_ready.wait(30)):
            raise RuntimeError("%s: the clients did not connect" % srv.name)
        time.sleep(cfg["warmup"])
        clock = time.perf_counter_ns
        steady0 = clock()
        rss_steady = []
        end = steady0 + int(cfg["steady"] * 1e9)
        while clock() < end:
            rss_steady.append(status_kb(srv.pid, "VmRSS:"))
            time.sleep(TICK)
        steady1 = clock()
        base_kb = statistics.median(rss_steady)
        save0 = clock()
        reply = srv.client.call("BGSAVE")
        reply_at = clock()
        if isinstance(reply, Exception) or reply is None:
            row.update(supported=False, error=str(reply))
            return row
        seen_running, done_at, peak = False, None, {"sum": 0, "private": 0, "parent": 0}
        child_end, child_pids = None, set()
        after = None
        deadline = reply_at + int(cfg["save_timeout"] * 1e9)
        grace_until = reply_at + int(2e9)
        next_tick = reply_at
        while True:
            parent_kb, kids = sample_memory(srv.pid)
            now = clock()
            for c, _, _, running in kids:
                child_pids.add(c)
                if not running and child_end is None:
                    child_end = now
            if child_pids and child_end is None and not any(k[0] in child_pids and k[3] for k in kids):
                child_end = now
            live = [k for k in kids if k[3]]
            peak["parent"] = max(peak["parent"], parent_kb - base_kb)
            peak["sum"] = max(peak["sum"], parent_kb + sum(k[1] for k in live) - base_kb)
            peak["private"] = max(peak["private"], parent_kb - base_kb + sum(k[2] for k in live))
            info = srv.info("persistence")
            running = info.get("rdb_bgsave_in_progress", "0") != "0"
            seen_running = seen_running or running
            if not running and (seen_running or saved_marks(info) != marks or clock() > grace_until):
                done_at = clock()
                after = info
                break
            if clock() > deadline:
                raise RuntimeError("%s: BGSAVE still running after %ss" % (srv.name, cfg["save_timeout"]))
            next_tick += int(TICK * 1e9)
            delay = next_tick - clock()
            if delay > 0:
                time.sleep(delay / 1e9)
            else:
                next_tick = clock()
    finally:
        stop.set()
        end_clients(procs)
    stats = srv.info("stats")
    lat = read_array(lat_out)
    lat_errors, n = lat[0], (len(lat) - 1) // 2
    starts, lats = lat[1:1 + n], lat[1 + n:]
    steady = [lats[i] / 1000 for i in range(n) if steady0 <= starts[i] < steady1]
    during = [lats[i] / 1000 for i in range(n) if save0 <= starts[i] <= done_at]
    load_rate = {"steady": None, "during": None}
    load_errors = 0
    if cfg["load"]:
        ld = read_array(load_out)
        load_errors, done = ld[0], ld[1:]
        for label, a, b in (("steady", steady0, steady1), ("during", save0, done_at)):
            count = sum(1 for t in done if a <= t < b)
            load_rate[label] = count * cfg["load_batch"] / ((b - a) / 1e9) if b > a else None
    size = os.path.getsize(dump) if os.path.exists(dump) else 0
    row.update(
        supported=True,
        save_s=(done_at - reply_at) / 1e9,
        reply_ms=(reply_at - save0) / 1e6,
        child_s=(child_end - reply_at) / 1e9 if child_end else None,
        confirmed=seen_running or saved_marks(after) != marks,
        status=after.get("rdb_last_bgsave_status", "?"),
        cow=int(after["rdb_last_cow_size"]) if after.get("rdb_last_cow_size", "").isdigit() else None,
        fork_us=int(stats["latest_fork_usec"]) if stats.get("latest_fork_usec", "").isdigit() else None,
        forked=bool(child_pids),
        base_bytes=base_kb * 1024,
        extra_sum=max(0, peak["sum"]) * 1024,
        extra_private=max(0, peak["private"]) * 1024,
        file_bytes=size,
        steady=percentiles(steady),
        during=percentiles(during),
        load_steady=load_rate["steady"],
        load_during=load_rate["during"],
        errors=lat_errors + load_errors,
    )
    if size == 0:
        row["status"] += " (no dump.rdb)" if not os.path.exists(dump) else " (empty dump.rdb)"
    return row


# --- medians and the report --------------------------------------------------

def med(rows, key, sub=None):
    vals = []
    for r in rows:
        v = r.get(key)
        if sub is not None:
            v = v.get(sub) if v else None
        if v is not None:
            vals.append(v)
    return statistics.median(vals) if vals else None


def summarize(rows):
    ok = [r for r in rows if r.get("supported")]
    if not ok:
        return {"supported": False, "error": rows[0].get("error") if rows else "no rounds"}
    s = {"supported": True, "rounds": len(ok)}
    for k in ("save_s", "reply_ms", "child_s", "cow", "fork_us", "base_bytes", "extra_sum", "extra_private",
              "file_bytes", "load_steady", "load_during"):
        s[k] = med(ok, k)
    for w in ("steady", "during"):
        s[w] = {p: med(ok, w, p) for p in ("p50", "p99", "p999", "max", "n")}
    s["status"] = ",".join(sorted({r["status"] for r in ok}))
    s["forked"] = any(r["forked"] for r in ok)
    s["unconfirmed"] = sum(1 for r in ok if not r["confirmed"])
    s["errors"] = sum(r["errors"] for r in ok)
    # Ratios per round, then the median, as for every other figure.
    for p in ("p99", "max"):
        ratios = [r["during"][p] / r["steady"][p] for r in ok if r["during"] and r["steady"] and r["steady"][p]]
        s["ratio_" + p] = statistics.median(ratios) if ratios else None
    return s


def mb(b):
    return "—" if b is None else "%.1f" % (b / 1e6)


def us(x):
    return "—" if x is None else "{:,.0f}".format(x)


def num(x):
    return "—" if x is None else "{:,.0f}".format(x)


def pct(part, whole):
    return "—" if part is None or not whole else "%.0f%%" % (100.0 * part / whole)


def ratio(x):
    return "—" if x is None else "%.1f×" % x


def read_meta(path):
    meta = {}
    if path and path != "-" and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
    return meta


def report(results, meta, cfg, counts, servers):
    lines = ["# Background snapshots: BGSAVE under write load, kvik-server vs redis-server", ""]
    lines += [
        "- Date: %s; machine: `%s`, %s cores, %s; load average at start: %s" % (
            meta.get("date", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())), meta.get("cpu", "?"),
            meta.get("cores", os.cpu_count()), meta.get("memtotal", "?"), meta.get("loadavg", "?")),
        "- Kernel: transparent huge pages `%s`, `vm.overcommit_memory=%s`" % (
            meta.get("thp", "?"), meta.get("overcommit", "?")),
    ]
    if "kvik" in servers:
        lines.append("- kvik-server: %s, `--threads %d --save '' --appendonly no`" % (
            meta.get("kvik_version", "?"), cfg["threads"]))
    for name in servers:
        if name != "kvik":
            lines.append("- %s: %s, `--save '' --appendonly no`" % (BINARY[name], meta.get(name + "_version", "?")))
    load = ("one load client: pipelined SET of random existing keys, %d per batch, %s" % (
        cfg["load_batch"], "%s writes/s offered" % num(cfg["load_rate"]) if cfg["load_rate"] else "unthrottled")
            if cfg["load"] else "no load client")
    lines += [
        "- Command: `%s`" % os.environ.get("COMMAND", "bench/bgsave.sh"),
        "- %d-byte values; medians of %d rounds; steady window %gs after %gs warm-up; %s; latency client: one "
        "SET of a random existing key at a time, one every %d µs." % (
            cfg["value_bytes"], cfg["repeats"], cfg["steady"], cfg["warmup"], load, cfg["lat_interval_ns"] // 1000),
        "- The clients (Python processes) and the 10 ms INFO/RSS poller share the machine's %s cores with the "
        "server under test (and redis's fork child): latencies include client scheduling, and are comparable "
        "between servers of the same run more than across machines." % meta.get("cores", os.cpu_count()),
        "",
        "How each figure is taken:",
        "",
        "- **save s**: from the BGSAVE reply to the first `INFO persistence` poll (every 10 ms) with "
        "`rdb_bgsave_in_progress:0`. redis notices its child's exit in `serverCron` (every 100 ms at `hz 10`), "
        "so its figure can be up to 0.1 s late; *child ran s* below is the fork child's own lifetime, seen in /proc.",
        "- **extra memory**: peak over the save of the server's VmRSS plus its children's VmRSS, minus the "
        "median VmRSS of the steady window (the dataset RSS, which the % is of). A fork child's RSS counts pages "
        "it still shares with the parent, so for redis this sum is mostly double counting; *extra private* "
        "(parent growth + the child's Private_Clean + Private_Dirty) and **cow/copy bytes** "
        "(`rdb_last_cow_size`: redis's pages copied on write; kvik's copy memory of its snapshot) are the "
        "memory the save really took.",
        "- **fork µs**: `latest_fork_usec` (INFO stats), the time the server stood still in fork().",
        "- **latency**: the latency client's requests, in µs, started in the steady window and in the save "
        "window (from sending BGSAVE to the end of the save, so the BGSAVE call itself is in it); "
        "during/steady is per round, then the median. The client is paced, and a request that comes due "
        "while the previous one is stalled starts when it returns: a stall shows once, in the max, "
        "not in the requests it held up (no coordinated-omission correction).",
    ]
    for keys in counts:
        got = results[keys]
        lines += ["", "## %s keys" % "{:,}".format(keys), "",
                  "| server | save s | extra memory MB | extra % of dataset RSS | cow/copy bytes | fork µs "
                  "| steady p50 | steady p99 | steady p99.9 | steady max "
                  "| during-save p50 | during-save p99 | during-save p99.9 | during-save max | p99 during/steady | max during/steady |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name in servers:
            s = got[name]
            label = BINARY.get(name, "kvik-server")
            if not s["supported"]:
                error = (s["error"] or "?").replace("|", "\\|").strip(" :")
                lines.append("| %s | not supported (%s) |%s" % (label, error, " |" * 14))
                continue
            st, du = s["steady"], s["during"]
            lines.append("| %s | %.3f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                label, s["save_s"], mb(s["extra_sum"]), pct(s["extra_sum"], s["base_bytes"]), num(s["cow"]),
                num(s["fork_us"]) if s["forked"] else "— (no fork)", us(st["p50"]), us(st["p99"]), us(st["p999"]), us(st["max"]),
                us(du["p50"]), us(du["p99"]), us(du["p999"]), us(du["max"]), ratio(s["ratio_p99"]),
                ratio(s["ratio_max"])))
        lines += ["", "| server | dataset RSS MB | extra private MB (%) | BGSAVE reply ms | child ran s "
                  "| status | dump.rdb bytes | load writes/s steady | load writes/s during save "
                  "| latency samples steady / save | error replies |",
                  "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
        for name in servers:
            s = got[name]
            if not s["supported"]:
                continue
            status = s["status"]
            if s["unconfirmed"]:
                status += " (%d rounds: never seen running)" % s["unconfirmed"]
            lines.append("| %s | %s | %s (%s) | %.2f | %s | %s | %s | %s | %s | %s / %s | %d |" % (
                BINARY.get(name, "kvik-server"), mb(s["base_bytes"]),
                mb(s["extra_private"]), pct(s["extra_private"], s["base_bytes"]), s["reply_ms"],
                "%.3f" % s["child_s"] if s["child_s"] is not None else "— (none seen)", status,
                num(s["file_bytes"]), num(s["load_steady"]), num(s["load_during"]),
                num(s["steady"]["n"]), num(s["during"]["n"]), s["errors"]))
    return lines


def main(argv):
    kvik_bin, out_md, meta_path = argv[1], argv[2], argv[3]
    counts = [int(k) for k in argv[4:]] or [1000000]
    servers = os.environ.get("SERVERS", "kvik redis").split()
    for name in servers:
        if name != "kvik" and name not in BINARY:
            raise SystemExit("unknown server %r (kvik, redis, valkey)" % name)
    cfg = {
        "repeats": env_int("REPEATS", 3),
        "value_bytes": env_int("VALUE_BYTES", 64),
        "threads": env_int("THREADS", os.cpu_count() or 1),
        "steady": env_float("STEADY_SECONDS", 3),
        "warmup": env_float("WARMUP_SECONDS", 0.5),
        "load": env_int("LOAD", 1) != 0,
        "load_batch": env_int("LOAD_BATCH", 16),
        "load_rate": env_int("LOAD_RATE", 20000),
        "lat_interval_ns": env_int("LAT_INTERVAL_US", 500) * 1000,
        "save_timeout": env_float("SAVE_TIMEOUT", 600),
    }
    meta = read_meta(meta_path)
    root = tempfile.mkdtemp(prefix="kvik-bgsave-")
    results = {}
    seq = 0
    try:
        for keys in counts:
            running = {}
            try:
                for name in servers:
                    directory = os.path.join(root, "%s-%d" % (name, keys))
                    os.makedirs(directory)
                    print("%d keys: starting and filling %s" % (keys, name), file=sys.stderr)
                    srv = Server(name, kvik_bin, directory, cfg["threads"])
                    running[name] = srv
                    load_keys(srv.client, keys, cfg["value_bytes"])
                rows = {name: [] for name in servers}
                for r in range(cfg["repeats"]):
                    order = servers[r % len(servers):] + servers[:r % len(servers)]
                    for name in order:
                        seq += 1
                        row = one_round(running[name], keys, cfg, root, seq)
                        rows[name].append(row)
                        if row["supported"]:
                            print("%d keys, round %d, %s: save %.3fs, extra %s MB (private %s MB), cow %s, "
                                  "p99 %s → %s µs, max %s → %s µs" % (
                                      keys, r + 1, name, row["save_s"], mb(row["extra_sum"]),
                                      mb(row["extra_private"]), num(row["cow"]),
                                      us(row["steady"]["p99"]), us((row["during"] or {}).get("p99")),
                                      us(row["steady"]["max"]), us((row["during"] or {}).get("max"))),
                                  file=sys.stderr)
                        else:
                            print("%d keys, round %d, %s: BGSAVE not supported (%s)" % (
                                keys, r + 1, name, row["error"]), file=sys.stderr)
                results[keys] = {name: summarize(rows[name]) for name in servers}
            finally:
                for srv in running.values():
                    srv.stop()
                for name in servers:
                    shutil.rmtree(os.path.join(root, "%s-%d" % (name, keys)), ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = report(results, meta, cfg, counts, servers)
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
