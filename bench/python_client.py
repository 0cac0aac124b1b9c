"""Python clients side by side: redis-py with its pure-Python parser,
redis-py with hiredis, and kvik (`kvik.Redis`, redis-py's API over a native
connection and codec), each against kvik-server and redis-server, over a
Unix socket and over TCP on 127.0.0.1, in the same run. It repeats the
sections of the usual redis-py / hiredis / redis-cli comparison:

1. naive LPUSH: `r.lpush(key, value)` in a loop, one command per call, so
   every command pays a whole round trip and the client's per-call cost;
2. pipelined LPUSH: `p = r.pipeline(transaction=False)`, BATCH `p.lpush`
   calls, `p.execute()`, until OPS commands are sent;
3. popping OPS items off a list filled beforehand, two ways: `r.rpop(key)`
   one by one, and the LRANGE + LTRIM idiom, a transactional pipeline
   (`r.pipeline()`, MULTI/EXEC, as the idiom needs to be safe with other
   consumers) of `lrange(key, 0, BATCH - 1)` and `ltrim(key, BATCH, -1)`
   per BATCH items;
4. bulk load of OPS `LPUSH key value`: kvik's `r.bulk_load(commands,
   window=BULK_WINDOW)` (the commands a generator of argument tuples, made
   while it runs), redis-py's best effort (non-transactional pipelines of
   BULK_BATCH commands) and `redis-cli --pipe` reading a file of the same
   commands in RESP, written once before the rounds (the reference the
   Python clients are held to);
5. building commands: OPS `LPUSH key value` encoded to bytes, no server:
   redis-py's `Connection().pack_command("LPUSH", key, value)` (its
   PythonRespSerializer, or HiredisRespSerializer, i.e. hiredis's
   `pack_command`, where hiredis is importable: the report names the packer
   each client used) against `kvik._native.encode_command(("LPUSH", key,
   value))`.

The key is a str and the values are VALUE_BYTES bytes, as user code would
pass them; replies are not decoded (`decode_responses=False`), and every
client speaks RESP2 (`protocol=2`).

Every cell (one client × server × transport × measurement) runs in a fresh
Python process of its own, with the interpreter that has that client:
PYTHON (redis-py and kvik) or HIREDIS_PYTHON (the same redis-py version
with hiredis). The pure-Python redis-py process makes hiredis unimportable
before it imports redis and passes `parser_class=_RESP2Parser` to its
ConnectionPool, so it parses and packs in Python even where hiredis is
installed; the hiredis process keeps redis-py's default parser, which must
be `_HiredisParser` (`redis.utils.HIREDIS_AVAILABLE`), or the client is
reported as not available. Before each cell this script empties the list
(DEL) and, for section 3, fills it with OPS pipelined LPUSH over a socket
of its own; the cell's process connects and sends PING before the clock
starts, so neither the interpreter's start nor the connection is timed.
Afterwards the cell's own count (items popped, replies received) and LLEN
of the list must match, or the cell fails.

Figures of one cell, each taken around the timed loop only:

- **ops/s**: OPS ÷ the wall time of the loop (time.perf_counter); for
  `redis-cli --pipe`, from starting the process to its exit, so its start
  (a few ms) is in it; for section 3, items popped per second;
- **client CPU s**: time.process_time() of the client's process over the
  loop (all its threads; kvik's native code runs in the calling thread);
  for redis-cli, its user + system time (getrusage of the waited-for child);
- **client busy**: client CPU s ÷ wall s;
- **server CPU s**: utime + stime of the server process (all its threads)
  from /proc/PID/stat, read before and after the loop (clock ticks, 10 ms
  each where USER_HZ is 100: coarse for short cells);
- **ops per client CPU-s**: OPS ÷ client CPU s, what the client costs per
  command regardless of how the cores were shared.

REPEATS rounds; in each, for each section, the server/transport pairs and,
within each pair, the clients take turns, both orders rotated by one every
round. Every figure is the median over the rounds of that cell's figure;
the ratios (kvik ÷ redis-py + hiredis, kvik ÷ pure redis-py and, in
section 4, kvik ÷ redis-cli --pipe) are ratios of those medians. The goals
checked are the client's: naive LPUSH at least 1.5× redis-py + hiredis,
pipelined LPUSH at least 5×, bulk load at least as fast as redis-cli --pipe.

The client process, the server (kvik-server with THREADS threads) and the
kernel share the machine's cores: on two cores a client that is busy for
90% of the wall time or more is what limits the cell, so ops/s there
measures the client, which is the point of this benchmark; ops per client
CPU-second says the same without the server's share of the machine.

    python3 bench/python_client.py KVIK_BIN OUT_MD META
    PYTHON bench/python_client.py probe CLIENT         (one client's versions)
    PYTHON bench/python_client.py worker SPEC_JSON     (one cell)

KVIK_BIN may be empty when kvik is not in SERVERS. META: a file of key=value
lines about the machine (bench/common.sh servers_meta), or "-".
Environment (defaults in brackets): REPEATS [3], OPS [100000],
VALUE_BYTES [129], SERVERS ["kvik redis"], TRANSPORTS ["unix tcp"],
CLIENTS ["redis-py redis-py+hiredis kvik"], SECTIONS ["naive pipeline pop
bulk encode"], BATCH [1000], BULK_BATCH [10000], BULK_WINDOW [1000],
THREADS [2] (kvik-server --threads), PYTHON [the interpreter running this],
HIREDIS_PYTHON [] (empty: redis-py + hiredis not available; HIREDIS_MISSING
says why), REDIS_CLI [redis-cli], BENCH_TIMEOUT [900] (seconds one cell may
take), QUICK, COMMAND (the command line shown in the report).
"""

import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_report import HOST, Client, encode, free_port, wait_ready  # noqa: E402

KEY = "bench:python_client"
PY_CLIENTS = ["redis-py", "redis-py+hiredis", "kvik"]
REDIS_CLI = "redis-cli"
CLIENT_LABEL = {
    "redis-py": "redis-py (pure)",
    "redis-py+hiredis": "redis-py + hiredis",
    "kvik": "kvik",
    REDIS_CLI: "redis-cli --pipe",
}
SERVER_LABEL = {"kvik": "kvik-server", "redis": "redis-server"}
ALL_SECTIONS = ["naive", "pipeline", "pop", "bulk", "encode"]

# Per section: its title, its measurements (id, label), whether it needs a
# server, the extra client, and the goal (the client kvik is held to and
# the least ratio), or None.
SECTIONS = {
    "naive": {
        "title": "1. Naive LPUSH: one `r.lpush(key, value)` per command",
        "measures": [("lpush", "LPUSH")],
        "server": True,
        "goal": ("redis-py+hiredis", 1.5),
    },
    "pipeline": {
        "title": "2. Pipelined LPUSH: batches of BATCH in a non-transactional pipeline",
        "measures": [("lpush-pipeline", "pipelined LPUSH")],
        "server": True,
        "goal": ("redis-py+hiredis", 5.0),
    },
    "pop": {
        "title": "3. Popping a list: RPOP one by one, and LRANGE + LTRIM",
        "measures": [("rpop", "RPOP one by one"), ("lrange-ltrim", "LRANGE + LTRIM, BATCH a time")],
        "server": True,
        "goal": None,
    },
    "bulk": {
        "title": "4. Bulk load: kvik's bulk_load, redis-py's pipeline of BULK_BATCH, redis-cli --pipe",
        "measures": [("bulk", "bulk load")],
        "server": True,
        "extra": REDIS_CLI,
        "goal": (REDIS_CLI, 1.0),
    },
    "encode": {
        "title": "5. Building commands: OPS `LPUSH key value` encoded to bytes, no server",
        "measures": [("encode", "encode")],
        "server": False,
        "goal": None,
    },
}
# Measurements after which the list holds OPS items (the others empty it).
FILLS_LIST = {"lpush", "lpush-pipeline", "bulk"}
POPS_LIST = {"rpop", "lrange-ltrim"}
BUSY_CLIENT = 0.90


def env_int(name, default):
    return int(os.environ.get(name, str(default)))


def env_list(name, default):
    return os.environ.get(name, default).split()


def value_of(size):
    return (b"0123456789abcdef" * (size // 16 + 1))[:size]


# --- the cell's process --------------------------------------------------------

def block_hiredis(client):
    """In the pure-Python redis-py process, make hiredis unimportable before
    redis is imported: redis-py then picks its Python parser and packer."""
    if client == "redis-py":
        sys.modules["hiredis"] = None


def connection_kwargs(client):
    kw = {"protocol": 2}
    if client == "redis-py":
        from redis._parsers.resp2 import _RESP2Parser
        kw["parser_class"] = _RESP2Parser
    return kw


def make_client(spec):
    client = spec["client"]
    if client == "kvik":
        import kvik
        if spec["transport"] == "unix":
            return kvik.Redis(unix_socket_path=spec["path"], protocol=2)
        return kvik.Redis(host=HOST, port=spec["port"], protocol=2)
    import redis
    kw = connection_kwargs(client)
    if spec["transport"] == "unix":
        pool = redis.ConnectionPool(connection_class=redis.UnixDomainSocketConnection, path=spec["path"], **kw)
    else:
        pool = redis.ConnectionPool(host=HOST, port=spec["port"], **kw)
    return redis.Redis(connection_pool=pool)


def probe(client):
    """What the client is in this interpreter: versions, and for redis-py
    the parser and packer a new connection gets."""
    block_hiredis(client)
    import redis
    import redis.utils
    info = {"python": platform.python_version(), "redis_py": redis.__version__,
            "hiredis_available": bool(redis.utils.HIREDIS_AVAILABLE)}
    try:
        import hiredis
        info["hiredis"] = getattr(hiredis, "__version__", "?")
    except ImportError:
        info["hiredis"] = None
    if client == "kvik":
        import kvik._native  # noqa: F401
        from importlib import metadata
        info["kvik"] = metadata.version("kvik")
        info["parser"] = info["packer"] = "kvik._native"
    else:
        conn = redis.Connection(**connection_kwargs(client))
        info["parser"] = type(conn._parser).__name__
        info["packer"] = type(getattr(conn, "_command_packer", None)).__name__
        hiredis_parser = "Hiredis" in info["parser"]
        if client == "redis-py+hiredis" and not (info["hiredis_available"] and hiredis_parser):
            raise RuntimeError("hiredis is not what redis-py uses in this interpreter (parser %s)" % info["parser"])
        if client == "redis-py" and hiredis_parser:
            raise RuntimeError("redis-py picked hiredis's parser although hiredis was blocked")
    return info


def server_ticks(pid):
    """utime + stime of PID in clock ticks (fields 14 and 15 of
    /proc/PID/stat, after the command name, which may hold spaces)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def timed(run, server_pid):
    """Run `run()` (which returns how many operations it did) between two
    readings of the clocks; returns the cell's raw figures."""
    tick = os.sysconf("SC_CLK_TCK")
    s0 = server_ticks(server_pid) if server_pid else None
    t0 = time.perf_counter()
    c0 = time.process_time()
    done = run()
    c1 = time.process_time()
    t1 = time.perf_counter()
    s1 = server_ticks(server_pid) if server_pid else None
    return {"ops": done, "wall_s": t1 - t0, "cpu_s": c1 - c0,
            "server_cpu_s": (s1 - s0) / tick if server_pid else None}


def loop_lpush(r, key, value, n, spec):
    lpush = r.lpush

    def run():
        for _ in range(n):
            lpush(key, value)
        return n
    return run


def loop_pipeline(r, key, value, n, spec, batch=None, transaction=False):
    batch = batch or spec["batch"]

    def run():
        replies = 0
        for start in range(0, n, batch):
            p = r.pipeline(transaction=transaction)
            for _ in range(min(batch, n - start)):
                p.lpush(key, value)
            replies += len(p.execute())
        return replies
    return run


def loop_bulk(r, key, value, n, spec):
    if spec["client"] != "kvik":
        return loop_pipeline(r, key, value, n, spec, batch=spec["bulk_batch"])
    window = spec["bulk_window"]

    def run():
        replies, errors = r.bulk_load((("LPUSH", key, value) for _ in range(n)), window=window)
        if errors:
            raise RuntimeError("bulk_load: %d error replies, the first: %s" % (len(errors), errors[0]))
        return replies
    return run


def loop_rpop(r, key, value, n, spec):
    rpop = r.rpop

    def run():
        got = 0
        for _ in range(n):
            if rpop(key) is not None:
                got += 1
        return got
    return run


def loop_lrange_ltrim(r, key, value, n, spec):
    batch = spec["batch"]

    def run():
        got = 0
        while got < n:
            p = r.pipeline()
            p.lrange(key, 0, batch - 1)
            p.ltrim(key, batch, -1)
            items, _ = p.execute()
            if not items:
                break
            got += len(items)
        return got
    return run


def loop_encode(client, key, value, n):
    """The encoding loop and one command encoded, to check it."""
    if client == "kvik":
        from kvik._native import encode_command

        def run():
            for _ in range(n):
                encode_command(("LPUSH", key, value))
            return n
        return run, bytes(encode_command(("LPUSH", key, value)))
    import redis
    pack = redis.Connection(**connection_kwargs(client)).pack_command

    def run():
        for _ in range(n):
            pack("LPUSH", key, value)
        return n
    return run, b"".join(bytes(c) for c in pack("LPUSH", key, value))


LOOPS = {"lpush": loop_lpush, "lpush-pipeline": loop_pipeline, "bulk": loop_bulk,
         "rpop": loop_rpop, "lrange-ltrim": loop_lrange_ltrim}


def worker(spec):
    block_hiredis(spec["client"])
    n, value = spec["ops"], value_of(spec["value_bytes"])
    if spec["measure"] == "encode":
        run, one = loop_encode(spec["client"], KEY, value, n)
        if one != encode(("LPUSH", KEY, value)):
            raise RuntimeError("encoded LPUSH differs from RESP: %r" % one[:80])
        out = timed(run, None)
    else:
        r = make_client(spec)
        r.ping()
        out = timed(LOOPS[spec["measure"]](r, KEY, value, n, spec), spec["server_pid"])
        r.close()
    if out["ops"] != n:
        raise RuntimeError("%s did %d operations, not %d" % (spec["measure"], out["ops"], n))
    return out


# --- servers -------------------------------------------------------------------

class Server:
    def __init__(self, name, kvik_bin, directory, threads):
        self.name, self.dir = name, directory
        self.port = free_port()
        self.path = os.path.join(directory, "server.sock")
        self.log = os.path.join(directory, "server.log")
        if name == "kvik":
            args = [kvik_bin, "--threads", str(threads)]
        elif name == "redis":
            args = ["redis-server", "--daemonize", "no"]
        else:
            raise SystemExit("unknown server %r (kvik, redis)" % name)
        args += ["--bind", HOST, "--port", str(self.port), "--unixsocket", self.path, "--unixsocketperm", "700",
                 "--save", "", "--appendonly", "no", "--dir", directory, "--logfile", self.log]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        if not wait_ready(self.port, 60) or not self._await_socket(deadline):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("%s did not start (TCP %d, %s); its log: %s" % (name, self.port, self.path, tail(self.log)))
        self.pid = self.proc.pid

    def _await_socket(self, deadline):
        while time.monotonic() < deadline:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(2)
                    s.connect(self.path)
                    s.sendall(encode(("PING",)))
                    if s.recv(64).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def tail(path, lines=10):
    """The last lines of a server's log (bgsave.py's)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bgsave

    return bgsave.tail(path, lines)


def fill_list(port, n, value, batch=1000):
    """n LPUSH of the list over a socket of this script's own, pipelined."""
    c = Client(port, timeout=120)
    try:
        for start in range(0, n, batch):
            k = min(batch, n - start)
            c.sock.sendall(encode(("LPUSH", KEY, value)) * k)
            for _ in range(k):
                reply = c.read_reply()
                if isinstance(reply, Exception):
                    raise RuntimeError("filling the list: %s" % reply)
    finally:
        c.close()


def call(port, *args):
    c = Client(port, timeout=60)
    try:
        reply = c.call(*args)
    finally:
        c.close()
    if isinstance(reply, Exception):
        raise RuntimeError("%s: %s" % (" ".join(args), reply))
    return reply


# --- one cell ------------------------------------------------------------------

def run_worker(python, spec, timeout):
    proc = subprocess.run([python, os.path.abspath(__file__), "worker", json.dumps(spec)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError(err[-1] if err else "exit status %d" % proc.returncode)
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def run_redis_cli(srv, transport, proto_file, n, timeout, cli):
    """`redis-cli --pipe` from the protocol file; wall and CPU of the whole
    process (RUSAGE_CHILDREN: every other child of this script has been
    waited for, or is a server still running)."""
    where = ["-s", srv.path] if transport == "unix" else ["-h", HOST, "-p", str(srv.port)]
    tick = os.sysconf("SC_CLK_TCK")
    with open(proto_file, "rb") as f:
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s0 = server_ticks(srv.pid)
        t0 = time.perf_counter()
        proc = subprocess.run([cli] + where + ["--pipe"], stdin=f, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
        t1 = time.perf_counter()
        s1 = server_ticks(srv.pid)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = proc.stdout.decode(errors="replace")
    summary = [line for line in text.splitlines() if line.startswith("errors:")]
    if proc.returncode != 0 or not summary:
        raise RuntimeError("redis-cli --pipe: exit %d: %s" % (proc.returncode, " | ".join(text.splitlines()[-3:])))
    parts = dict(p.strip().split(": ") for p in summary[-1].split(","))
    if int(parts.get("errors", -1)) != 0 or int(parts.get("replies", -1)) != n:
        raise RuntimeError("redis-cli --pipe: %s" % summary[-1])
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {"ops": n, "wall_s": t1 - t0, "cpu_s": cpu, "server_cpu_s": (s1 - s0) / tick}


def run_cell(cfg, measure, client, srv, transport):
    """One cell: the list prepared, the client's run, the list checked."""
    n = cfg["ops"]
    spec = {"client": client, "measure": measure, "ops": n, "value_bytes": cfg["value_bytes"],
            "batch": cfg["batch"], "bulk_batch": cfg["bulk_batch"], "bulk_window": cfg["bulk_window"]}
    if srv is None:
        return run_worker(cfg["python"][client], spec, cfg["timeout"])
    call(srv.port, "DEL", KEY)
    if measure in POPS_LIST:
        fill_list(srv.port, n, value_of(cfg["value_bytes"]))
    if client == REDIS_CLI:
        out = run_redis_cli(srv, transport, cfg["proto_file"], n, cfg["timeout"], cfg["redis_cli"])
    else:
        spec.update(transport=transport, port=srv.port, path=srv.path, server_pid=srv.pid)
        out = run_worker(cfg["python"][client], spec, cfg["timeout"])
    want = n if measure in FILLS_LIST else 0
    got = int(call(srv.port, "LLEN", KEY))
    if got != want:
        raise RuntimeError("LLEN is %d after %s, not %d" % (got, measure, want))
    return out


# --- medians and the report ----------------------------------------------------

def summarize(rows):
    """Medians of a cell's rounds; `failed` holds the errors of the rounds
    that failed (a cell with no good round has no figures)."""
    ok = [r for r in rows if "error" not in r]
    s = {"rounds": len(ok), "failed": [r["error"] for r in rows if "error" in r]}
    if not ok:
        return s

    def med(f):
        vals = [v for v in (f(r) for r in ok) if v is not None]
        return statistics.median(vals) if vals else None
    s["ops_s"] = med(lambda r: r["ops"] / r["wall_s"] if r["wall_s"] > 0 else None)
    s["wall_s"] = med(lambda r: r["wall_s"])
    s["cpu_s"] = med(lambda r: r["cpu_s"])
    s["busy"] = med(lambda r: r["cpu_s"] / r["wall_s"] if r["wall_s"] > 0 else None)
    s["server_cpu_s"] = med(lambda r: r.get("server_cpu_s"))
    s["ops_cpu_s"] = med(lambda r: r["ops"] / r["cpu_s"] if r["cpu_s"] > 0 else None)
    return s


def num(x):
    return "—" if x is None else "{:,.0f}".format(x)


def secs(x):
    return "—" if x is None else "%.3f" % x


def pct(x):
    return "—" if x is None else "%.0f%%" % (100.0 * x)


def ratio_of(a, b):
    """a ÷ b from two summaries' ops/s medians, or None."""
    if not a or not b or a.get("ops_s") is None or not b.get("ops_s"):
        return None
    return a["ops_s"] / b["ops_s"]


def fmt_ratio(x):
    return "—" if x is None else "%.2f×" % x


def goal_cell(x, least):
    if x is None:
        return "—"
    return "%s (≥ %g×)" % ("met" if x >= least else "missed", least)


def clients_of(section, clients):
    extra = SECTIONS[section].get("extra")
    return clients + ([extra] if extra else [])


def cell_text(s, available):
    if not available:
        return "not available"
    if s is None:
        return "—"
    if s.get("ops_s") is None:
        return "failed"
    return num(s["ops_s"])


def table(head, aligns, rows):
    """A Markdown table; aligns: "l" or "r" per column."""
    out = ["| " + " | ".join(head) + " |", "|" + "".join("---:|" if a == "r" else "---|" for a in aligns)]
    return out + ["| " + " | ".join(row) + " |" for row in rows]


def section_lines(section, results, cfg, targets, clients, available):
    """The two tables of one section: ops/s with the ratios, then every
    cell's CPU figures. `results[(measure, server, transport, client)]`
    is a summary; `available[client]` says whether the client ran."""
    spec = SECTIONS[section]
    n = lambda x: "{:,}".format(x)  # noqa: E731
    title = (spec["title"].replace("BULK_BATCH", n(cfg["bulk_batch"])).replace("BATCH", n(cfg["batch"]))
             .replace("OPS", n(cfg["ops"])))
    measures = [(m, label.replace("BATCH", n(cfg["batch"]))) for m, label in spec["measures"]]
    many = len(measures) > 1
    cols = clients_of(section, clients)
    has_server = spec["server"]
    if not has_server:
        targets = [(None, None)]
    goal = spec["goal"] if spec["goal"] and spec["goal"][0] in cols and "kvik" in cols else None
    ratio_cols = [c for c in ("redis-py+hiredis", "redis-py", REDIS_CLI) if c in cols and "kvik" in cols]

    def lead(m_label, srv, transport):
        return ([m_label] if many else []) + ([SERVER_LABEL.get(srv, srv), transport] if has_server else [])
    lead_head = (["measurement"] if many else []) + (["server", "transport"] if has_server else [])

    lines = ["", "## " + title, ""]
    if section == "bulk":
        lines += ["redis-py and redis-py + hiredis: non-transactional pipelines of %s; kvik: `bulk_load(..., "
                  "window=%s)`; redis-cli: `--pipe` from a file of the same %s commands, timed from starting the "
                  "process to its exit (its start-up, a few ms, is in it: it weighs on small OPS)." % (
                      n(cfg["bulk_batch"]), n(cfg["bulk_window"]), n(cfg["ops"])), ""]
    if section == "encode":
        packers = ["%s: `%s`" % (CLIENT_LABEL[c], cfg["probes"].get(c, {}).get("packer", "?"))
                   for c in cols if available.get(c)]
        if packers:
            lines += ["Packers: " + "; ".join(packers) + ".", ""]
    head = lead_head + ["%s ops/s" % CLIENT_LABEL[c] for c in cols]
    head += ["kvik ÷ %s" % CLIENT_LABEL[c] for c in ratio_cols]
    aligns = ["l"] * len(lead_head) + ["r"] * (len(cols) + len(ratio_cols))
    if goal:
        head.append("goal: kvik ≥ %g× %s" % (goal[1], CLIENT_LABEL[goal[0]]))
        aligns.append("l")
    rows = []
    for m, label in measures:
        for srv, transport in targets:
            got = {c: results.get((m, srv, transport, c)) for c in cols}
            row = lead(label, srv, transport) + [cell_text(got[c], available.get(c, True)) for c in cols]
            row += [fmt_ratio(ratio_of(got["kvik"], got[c])) if available.get(c, True) else "—" for c in ratio_cols]
            if goal:
                row.append(goal_cell(ratio_of(got["kvik"], got[goal[0]]), goal[1])
                           if available.get(goal[0], True) else "—")
            rows.append(row)
    lines += table(head, aligns, rows)

    head = lead_head + ["client", "ops/s", "wall s", "client CPU s", "client busy"]
    head += (["server CPU s"] if has_server else []) + ["ops per client CPU-s"]
    aligns = ["l"] * (len(lead_head) + 1) + ["r"] * (len(head) - len(lead_head) - 1)
    rows = []
    for m, label in measures:
        for srv, transport in targets:
            for c in cols:
                s = results.get((m, srv, transport, c))
                if not available.get(c, True) or s is None:
                    continue
                busy = pct(s.get("busy"))
                if has_server and s.get("busy") is not None and s["busy"] >= BUSY_CLIENT:
                    busy += " (client-bound)"
                row = lead(label, srv, transport) + [CLIENT_LABEL[c], cell_text(s, True), secs(s.get("wall_s")),
                                                     secs(s.get("cpu_s")), busy]
                row += ([secs(s.get("server_cpu_s"))] if has_server else []) + [num(s.get("ops_cpu_s"))]
                rows.append(row)
    lines += [""] + table(head, aligns, rows)
    return lines


def report(results, meta, cfg, sections, targets, clients, available):
    servers = []
    for srv, _ in targets:
        if srv not in servers:
            servers.append(srv)
    lines = ["# Python clients: redis-py, redis-py + hiredis and kvik against kvik-server and redis-server", ""]
    lines.append("- Date: %s; machine: `%s`, %s cores, %s; load average at start: %s" % (
        meta.get("date", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())), meta.get("cpu", "?"),
        meta.get("cores", os.cpu_count()), meta.get("memtotal", "?"), meta.get("loadavg", "?")))
    if "kvik" in servers:
        lines.append("- kvik-server: %s, `--threads %d --save '' --appendonly no`" % (
            meta.get("kvik_version", "?"), cfg["threads"]))
    if "redis" in servers:
        lines.append("- redis-server: %s, `--save '' --appendonly no`" % meta.get("redis_version", "?"))
    lines.append("- Both on a fresh TCP port of 127.0.0.1 and a Unix socket (`--unixsocketperm 700`)")
    for c in clients + ([REDIS_CLI] if "bulk" in sections else []):
        p = cfg["probes"].get(c, {})
        if not available.get(c):
            lines.append("- %s: not available (%s)" % (CLIENT_LABEL[c], p.get("reason", "?")))
        elif c == REDIS_CLI:
            lines.append("- redis-cli: %s" % p.get("version", "?"))
        elif c == "kvik":
            lines.append("- kvik (Python): %s, on redis-py %s, Python %s" % (
                p.get("kvik", "?"), p.get("redis_py", "?"), p.get("python", "?")))
        else:
            lines.append("- %s: redis-py %s%s, Python %s; parser `%s`, packer `%s`" % (
                CLIENT_LABEL[c], p.get("redis_py", "?"),
                ", hiredis %s" % p["hiredis"] if c == "redis-py+hiredis" and p.get("hiredis") else "",
                p.get("python", "?"), p.get("parser", "?"), p.get("packer", "?")))
    lines += [
        "- Command: `%s`" % os.environ.get("COMMAND", "bench/python_client.sh"),
        "- %s operations per cell, %d-byte values, key `%s`; medians of %d round%s; clients and servers take "
        "turns within a round, the order rotating; ratios are of the medians." % (
            "{:,}".format(cfg["ops"]), cfg["value_bytes"], KEY, cfg["repeats"], "" if cfg["repeats"] == 1 else "s"),
    ]
    if cfg.get("quick"):
        lines.append("- QUICK=1: a check that the benchmark works, not a measurement.")
    lines += [
        "",
        "Every cell runs in a Python process of its own (one interpreter start per cell, not timed), which "
        "connects and sends PING before the clock starts. **ops/s** is the operations of the cell over the wall "
        "time of its loop; **client CPU s** is `time.process_time()` of that process over the loop "
        "(redis-cli: its user + system time from getrusage), **client busy** that over the wall time, "
        "**server CPU s** the server process's utime + stime (/proc/PID/stat, all threads, 10 ms ticks) over "
        "the same loop, and **ops per client CPU-s** the operations over the client's CPU time. Each is the "
        "median of the rounds' figures.",
        "",
        "The client, the server and the kernel share the machine's %s cores. Where the client is busy for "
        "%d%% of the wall time or more (marked *client-bound*), the client is what limits the cell, so its "
        "ops/s measures the client's speed, which is what this benchmark is for: ops/s is the headline, and "
        "ops per client CPU-second the same comparison without the server's share of the cores." % (
            meta.get("cores", os.cpu_count()), int(BUSY_CLIENT * 100)),
    ]
    for section in sections:
        lines += section_lines(section, results.get(section, {}), cfg, targets, clients, available)
    failures = []
    for section in sections:
        for key, s in sorted(results.get(section, {}).items(), key=lambda kv: str(kv[0])):
            for e in s.get("failed", []):
                failures.append("%s %s: %s" % (section, " / ".join(str(k) for k in key if k), e))
    if failures:
        lines += ["", "## Failures", ""] + ["- " + f.replace("|", "\\|") for f in failures]
    return lines


# --- the run -------------------------------------------------------------------

def rotate(items, r):
    if not items:
        return items
    r %= len(items)
    return items[r:] + items[:r]


def probe_clients(clients, pythons, cli_needed, cli):
    """Each client's versions, by running its own interpreter; a client
    that cannot run is marked not available, with the reason."""
    probes, available = {}, {}
    for c in clients:
        python = pythons.get(c)
        if not python:
            reason = os.environ.get("HIREDIS_MISSING", "") or "no interpreter with hiredis (HIREDIS_PYTHON)"
            probes[c], available[c] = {"reason": reason}, False
            continue
        proc = subprocess.run([python, os.path.abspath(__file__), "probe", c], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        if proc.returncode == 0:
            probes[c], available[c] = json.loads(proc.stdout.decode().strip().splitlines()[-1]), True
        else:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            probes[c], available[c] = {"reason": err[-1] if err else "probe failed"}, False
    if cli_needed:
        path = shutil.which(cli)
        if path:
            out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            probes[REDIS_CLI] = {"version": out.stdout.decode(errors="replace").strip()}
            available[REDIS_CLI] = True
        else:
            probes[REDIS_CLI], available[REDIS_CLI] = {"reason": "%s is not installed" % cli}, False
    return probes, available


def main(argv):
    if len(argv) >= 3 and argv[1] == "probe":
        print(json.dumps(probe(argv[2])))
        return 0
    if len(argv) >= 3 and argv[1] == "worker":
        print(json.dumps(worker(json.loads(argv[2]))))
        return 0
    kvik_bin, out_md, meta_path = argv[1], argv[2], argv[3]
    quick = os.environ.get("QUICK", "0") == "1"
    cfg = {
        "quick": quick,
        "repeats": env_int("REPEATS", 1 if quick else 3),
        "ops": env_int("OPS", 5000 if quick else 100000),
        "value_bytes": env_int("VALUE_BYTES", 129),
        "batch": env_int("BATCH", 1000),
        "bulk_batch": env_int("BULK_BATCH", 10000),
        "bulk_window": env_int("BULK_WINDOW", 1000),
        "threads": env_int("THREADS", 2),
        "timeout": env_int("BENCH_TIMEOUT", 900),
        "redis_cli": os.environ.get("REDIS_CLI", "redis-cli"),
    }
    for k in ("repeats", "ops", "value_bytes", "batch", "bulk_batch", "bulk_window", "threads"):
        if cfg[k] < 1:
            raise SystemExit("%s must be at least 1" % k.upper())
    servers = env_list("SERVERS", "kvik redis")
    transports = env_list("TRANSPORTS", "unix tcp")
    clients = env_list("CLIENTS", " ".join(PY_CLIENTS))
    sections = env_list("SECTIONS", " ".join(ALL_SECTIONS))
    for name, got, allowed in (("SERVERS", servers, SERVER_LABEL), ("TRANSPORTS", transports, ("unix", "tcp")),
                               ("CLIENTS", clients, PY_CLIENTS), ("SECTIONS", sections, ALL_SECTIONS)):
        bad = [x for x in got if x not in allowed]
        if bad or not got:
            raise SystemExit("%s: %s (from %s)" % (name, "unknown %s" % " ".join(bad) if bad else "empty",
                                                    " ".join(allowed)))
    if "kvik" in servers and not kvik_bin:
        raise SystemExit("kvik is in SERVERS but no kvik-server binary was given")
    python = os.environ.get("PYTHON") or sys.executable
    cfg["python"] = {"redis-py": python, "kvik": python,
                     "redis-py+hiredis": os.environ.get("HIREDIS_PYTHON", "")}
    needs_server = any(SECTIONS[s]["server"] for s in sections)
    cfg["probes"], available = probe_clients(clients, cfg["python"], "bulk" in sections, cfg["redis_cli"])
    for c in clients + ([REDIS_CLI] if "bulk" in sections else []):
        print("%s: %s" % (CLIENT_LABEL[c], json.dumps(cfg["probes"][c]) if available[c] else
                          "not available (%s)" % cfg["probes"][c]["reason"]), file=sys.stderr)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bgsave import read_meta  # the machine lines every report reads

    meta = read_meta(meta_path)
    targets = [(s, t) for s in servers for t in transports] if needs_server else []
    root = tempfile.mkdtemp(prefix="kvik-pyclient-")
    results = {s: {} for s in sections}
    raw = {}
    running = {}
    try:
        if "bulk" in sections:
            cfg["proto_file"] = os.path.join(root, "lpush.resp")
            with open(cfg["proto_file"], "wb") as f:
                f.write(encode(("LPUSH", KEY, value_of(cfg["value_bytes"]))) * cfg["ops"])
        if needs_server:
            for name in servers:
                directory = os.path.join(root, name)
                os.makedirs(directory)
                running[name] = Server(name, kvik_bin, directory, cfg["threads"])
        for r in range(cfg["repeats"]):
            for section in sections:
                spec = SECTIONS[section]
                cols = [c for c in rotate(clients_of(section, clients), r) if available.get(c)]
                for m, _ in spec["measures"]:
                    for srv_name, transport in (rotate(targets, r) if spec["server"] else [(None, None)]):
                        for c in cols:
                            srv = running.get(srv_name)
                            where = "%s/%s" % (srv_name, transport) if srv else "no server"
                            try:
                                row = run_cell(cfg, m, c, srv, transport)
                                print("round %d, %s, %s, %s: %s ops/s, client busy %s" % (
                                    r + 1, m, where, c, num(row["ops"] / row["wall_s"]),
                                    pct(row["cpu_s"] / row["wall_s"])), file=sys.stderr)
                            except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
                                row = {"error": str(e)}
                                print("round %d, %s, %s, %s: failed: %s" % (r + 1, m, where, c, e), file=sys.stderr)
                            raw.setdefault((section, m, srv_name, transport, c), []).append(row)
    finally:
        for srv in running.values():
            srv.stop()
        shutil.rmtree(root, ignore_errors=True)
    for (section, m, srv_name, transport, c), rows in raw.items():
        results[section][(m, srv_name, transport, c)] = summarize(rows)
    lines = report(results, meta, cfg, sections, targets, clients, available)
    os.makedirs(os.path.dirname(os.path.abspath(out_md)), exist_ok=True)
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    failed = sum(len(s.get("failed", [])) for sec in results.values() for s in sec.values())
    if failed:
        print("%d cell rounds failed (listed at the end of %s)" % (failed, out_md), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
