"""Append-only file cost, kvik-server against redis-server in the same run:
SET throughput with `appendonly yes` under each fsync policy, and the time
a server takes to start on an append-only file of KEYS writes (each size
in KEYS).

Throughput: for each policy in POLICIES and each pipeline depth in
PIPELINES, REPEATS rounds (the servers take turns, the order rotating);
each round starts the server in a fresh directory (`--appendonly yes
--appendfsync <policy> --save ''`, kvik with `--threads THREADS`) and runs
`redis-benchmark -t set -c CLIENTS -P <depth> -n REQUESTS -r 100000` on it.
Reported: requests/s (redis-benchmark's), the server's CPU time over the run
(utime + stime of the whole process, from /proc/PID/stat, before and after)
and requests per server-CPU-second, and how busy the load generator was
(its CPU time ÷ the wall time of the run). On a machine with few cores the
load generator competes with the server; where it is busy ≥ 90% the
throughput ratio measures it, and requests per server-CPU-second is the
figure to judge.

Load: for each size in KEYS, each server is filled with that many
pipelined `SET key:<i> <value>` (VALUE_BYTES bytes) with `appendfsync
everysec` and automatic rewrites off (`auto-aof-rewrite-percentage 0`, so
the directory holds the commands themselves), stopped with SHUTDOWN NOSAVE, and started again on the same
directory REPEATS times; the time from starting the process to its first
PONG is the load time (the files are in the page cache: a measure of the
replay, not of the disk). kvik is measured twice, with the file in RESP and
in RESPB (`aof-format respb`).

    python3 bench/aof.py KVIK_BIN OUT_MD META

META: key=value lines about the machine (bench/common.sh machine_meta) or
"-". Environment: SERVERS ["kvik redis"], POLICIES ["always everysec"],
PIPELINES ["1 16"], CLIENTS [50], REQUESTS [200000] (× depth / 4 for
depths above 1, at least REQUESTS), REPEATS [3], THREADS [2], KEYS ["1000000 5000000"],
VALUE_BYTES [64], COMMAND.
"""

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_report import Client, free_port, load_keys, wait_ready  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def server_args(kind, kvik_bin, port, workdir, policy, threads):
    if kind == "kvik":
        return [kvik_bin, "--bind", "127.0.0.1", "--port", str(port), "--dir", workdir, "--save", "",
                "--appendonly", "yes", "--appendfsync", policy, "--threads", str(threads)]
    program = {"redis": "redis-server", "valkey": "valkey-server"}[kind]
    return [program, "--bind", "127.0.0.1", "--port", str(port), "--dir", workdir, "--save", "",
            "--appendonly", "yes", "--appendfsync", policy]


def start(args, port, log):
    proc = subprocess.Popen(args, stdout=log, stderr=log)
    if not wait_ready(port, 120):
        proc.kill()
        raise SystemExit("%s did not start" % args[0])
    return proc


def stop(proc, port):
    try:
        Client(port).sock.sendall(b"SHUTDOWN NOSAVE\r\n")
    except OSError:
        pass
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def throughput(kind, kvik_bin, policy, depth, clients, requests, threads):
    workdir = tempfile.mkdtemp(prefix="aof-bench-")
    port = free_port()
    with open(os.path.join(workdir, "server.log"), "ab") as log:
        proc = start(server_args(kind, kvik_bin, port, workdir, policy, threads), port, log)
        before = cpu_seconds(proc.pid)
        started = time.monotonic()
        usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(
            ["redis-benchmark", "-p", str(port), "-t", "set", "-c", str(clients), "-P", str(depth),
             "-n", str(requests), "-r", "100000", "-q"],
            capture_output=True, text=True, check=True).stdout
        wall = time.monotonic() - started
        usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_cpu = cpu_seconds(proc.pid) - before
        stop(proc, port)
    shutil.rmtree(workdir, ignore_errors=True)
    rps = None
    for line in out.replace("\r", "\n").splitlines():
        if "requests per second" in line:
            rps = float(line.split(":")[1].split("requests")[0])
    client_cpu = (usage_after.ru_utime - usage_before.ru_utime) + (usage_after.ru_stime - usage_before.ru_stime)
    return {"rps": rps, "server_cpu": server_cpu, "per_cpu": requests / server_cpu if server_cpu else None,
            "client_busy": client_cpu / wall if wall else None}


def load_time(kind, fmt, kvik_bin, keys, value_bytes, repeats, threads):
    workdir = tempfile.mkdtemp(prefix="aof-load-")
    port = free_port()
    times = []
    size = 0
    with open(os.path.join(workdir, "server.log"), "ab") as log:
        args = server_args(kind, kvik_bin, port, workdir, "everysec", threads)
        args += ["--auto-aof-rewrite-percentage", "0"]
        if fmt == "respb":
            args += ["--aof-format", "respb"]
        proc = start(args, port, log)
        load_keys(Client(port), keys, value_bytes)
        stop(proc, port)
        size = sum(os.path.getsize(os.path.join(workdir, "appendonlydir", f))
                   for f in os.listdir(os.path.join(workdir, "appendonlydir")))
        for _ in range(repeats):
            started = time.monotonic()
            proc = start(args, port, log)
            times.append(time.monotonic() - started)
            n = Client(port).call("DBSIZE")
            if int(n) != keys:
                raise SystemExit("%s loaded %s keys, not %d" % (kind, n, keys))
            stop(proc, port)
    shutil.rmtree(workdir, ignore_errors=True)
    return statistics.median(times), size


def fmt(x, spec="{:,.0f}"):
    return "—" if x is None else spec.format(x)


def main(argv):
    if len(argv) != 4:
        raise SystemExit(__doc__)
    kvik_bin, out_md, meta = argv[1], argv[2], argv[3]
    servers = os.environ.get("SERVERS", "kvik redis").split()
    policies = os.environ.get("POLICIES", "always everysec").split()
    depths = [int(d) for d in os.environ.get("PIPELINES", "1 16").split()]
    clients = int(os.environ.get("CLIENTS", "50"))
    base_requests = int(os.environ.get("REQUESTS", "200000"))
    repeats = int(os.environ.get("REPEATS", "3"))
    threads = int(os.environ.get("THREADS", "2"))
    sizes = [int(k) for k in os.environ.get("KEYS", "1000000 5000000").split() if int(k) > 0]
    value_bytes = int(os.environ.get("VALUE_BYTES", "64"))
    results = {}
    for policy in policies:
        for depth in depths:
            requests = max(base_requests, base_requests * depth // 4)
            for r in range(repeats):
                order = servers[r % len(servers):] + servers[:r % len(servers)]
                for kind in order:
                    got = throughput(kind, kvik_bin, policy, depth, clients, requests, threads)
                    results.setdefault((policy, depth, kind), []).append(got)
                    print("%s %s -P %d: %s rps, %.2f s CPU, client busy %.0f%%" % (
                        kind, policy, depth, fmt(got["rps"]), got["server_cpu"], 100 * (got["client_busy"] or 0)),
                        flush=True)
    loads = {}
    for keys in sizes:
        for kind in servers:
            for fmt_name in (["resp", "respb"] if kind == "kvik" else ["resp"]):
                got = load_time(kind, fmt_name, kvik_bin, keys, value_bytes, repeats, threads)
                loads[(keys, kind, fmt_name)] = got
                print("%s %s: %d keys load in %.2f s (%d bytes)" % (kind, fmt_name, keys, got[0], got[1]), flush=True)

    def med(policy, depth, kind, field):
        values = [x[field] for x in results.get((policy, depth, kind), []) if x[field] is not None]
        return statistics.median(values) if values else None

    lines = ["# Append-only file: SET throughput and load time", ""]
    if meta != "-" and os.path.exists(meta):
        with open(meta) as f:
            lines += ["- " + line.strip() for line in f if line.strip()]
        lines.append("")
    lines += [
        "Command: `%s`. `redis-benchmark -t set -c %d -r 100000`, medians of %d rounds; kvik with `--threads %d`."
        % (os.environ.get("COMMAND", "bench/aof.sh"), clients, repeats, threads),
        "",
        "| appendfsync | -P | server | requests/s | server CPU s | requests per CPU-s | load generator busy |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for policy in policies:
        for depth in depths:
            for kind in servers:
                lines.append("| %s | %d | %s-server | %s | %s | %s | %s |" % (
                    policy, depth, kind, fmt(med(policy, depth, kind, "rps")),
                    fmt(med(policy, depth, kind, "server_cpu"), "{:.2f}"),
                    fmt(med(policy, depth, kind, "per_cpu")),
                    fmt(med(policy, depth, kind, "client_busy"), "{:.0%}")))
    if "kvik" in servers and "redis" in servers:
        lines += ["", "| appendfsync | -P | kvik ÷ redis, requests/s | kvik ÷ redis, per server-CPU-second |",
                  "|---|---:|---:|---:|"]
        for policy in policies:
            for depth in depths:
                def ratio(field):
                    k, r = med(policy, depth, "kvik", field), med(policy, depth, "redis", field)
                    return "%.2f×" % (k / r) if k and r else "—"
                lines.append("| %s | %d | %s | %s |" % (policy, depth, ratio("rps"), ratio("per_cpu")))
    if loads:
        lines += ["", "Start on an append-only file of `SET`s (%d-byte values, no rewrite), to the first PONG, "
                  "median of %d:" % (value_bytes, repeats), "",
                  "| keys | server | file form | load time | files | ÷ redis-server's load time |",
                  "|---:|---|---|---:|---:|---:|"]
        for (keys, kind, fmt_name), (t, size) in loads.items():
            base = loads.get((keys, "redis", "resp"))
            vs = "%.2f×" % (t / base[0]) if base and base[0] else "—"
            lines.append("| %s | %s-server | %s | %.2f s | %.1f MB | %s |" % (
                "{:,}".format(keys), kind, fmt_name.upper(), t, size / 1e6, vs))
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % out_md)


if __name__ == "__main__":
    main(sys.argv)
