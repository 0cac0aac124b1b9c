"""Lua scripts, kvik-server against redis-server in the same run: EVALSHA
throughput of small scripts, and scripts on random declared keys with
kvik on one thread and on two, to show that scripts on different keys
run at the same time.

Each cell: REPEATS rounds, the servers taking turns (the order rotating);
each round starts the server fresh (`--save ''`; kvik with `--threads
<n>`), loads the script with SCRIPT LOAD and runs `redis-benchmark -c
<clients> -P <depth> -n REQUESTS -r 100000 EVALSHA <sha> 1
key:__rand_int__ <args>` on it. Reported: requests/s (redis-benchmark's),
the server's CPU time over the run (utime + stime from /proc/PID/stat)
and requests per server-CPU-second, and how busy the load generator was
(its CPU time ÷ the run's wall time). Where the load generator is busy
≥ 90% the throughput ratio measures it; requests per server-CPU-second is
then the figure to judge.

Scripts:
  read_incr  GET then INCR of the declared key
  lock       take a lock (SET … NX PX when free, PEXPIRE when held by
             the same token, else 0), the shape of a lock library's
             acquire-or-renew script
  incr       plain INCR, no script: the floor the scripts add to

    python3 bench/scripting.py KVIK_BIN OUT_MD META

Environment: SERVERS ["kvik redis"], REQUESTS [200000] (× depth / 4 for
depths above 1), REPEATS [3], THREADS [2], COMMAND.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aof import stop  # noqa: E402
from cells import fmt, measure, median, meta_lines  # noqa: E402
from server_report import Client, free_port, wait_ready  # noqa: E402

SCRIPTS = {
    "read_incr": ("redis.call('GET', KEYS[1]) return redis.call('INCR', KEYS[1])", []),
    "lock": (
        "local holder = redis.call('GET', KEYS[1]) "
        "if not holder then redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) return 1 end "
        "if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end "
        "return 0",
        ["token-1", "30000"],
    ),
    "incr": (None, []),
}

# (script, clients, depth, kvik threads): the throughput cells at -c 50,
# then the parallel cell at -c 16 -P 16 on one thread and on two.
CELLS = [
    ("read_incr", 50, 1, None), ("read_incr", 50, 16, None),
    ("lock", 50, 1, None), ("lock", 50, 16, None),
    ("incr", 50, 1, None), ("incr", 50, 16, None),
    ("read_incr", 16, 16, 1), ("read_incr", 16, 16, 2),
]


def server_args(kind, kvik_bin, port, threads):
    if kind == "kvik":
        return [kvik_bin, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--threads", str(threads)]
    program = {"redis": "redis-server", "valkey": "valkey-server"}[kind]
    return [program, "--bind", "127.0.0.1", "--port", str(port), "--save", ""]


def run_cell(kind, kvik_bin, script, clients, depth, requests, threads):
    port = free_port()
    proc = subprocess.Popen(server_args(kind, kvik_bin, port, threads),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_ready(port, 60):
        proc.kill()
        raise SystemExit("%s did not start" % kind)
    body, args = SCRIPTS[script]
    if body is None:
        command = ["INCR", "key:__rand_int__"]
    else:
        sha = Client(port).call("SCRIPT", "LOAD", body)
        sha = sha.decode() if isinstance(sha, bytes) else str(sha)
        command = ["EVALSHA", sha, "1", "key:__rand_int__"] + args
    bench = ["-p", str(port), "-c", str(clients), "-P", str(depth), "-n", str(requests), "-r", "100000"] + command
    got = measure(proc.pid, bench, requests)
    errors = Client(port).call("INFO", "stats")
    stop(proc, port)
    text = errors.decode() if isinstance(errors, bytes) else str(errors)
    failed = [line for line in text.splitlines() if line.startswith("total_error_replies:")]
    if failed and failed[0].split(":")[1].strip() != "0":
        raise SystemExit("%s answered errors in %s: %s" % (kind, script, failed[0]))
    return got


def main(argv):
    if len(argv) != 4:
        raise SystemExit(__doc__)
    kvik_bin, out_md, meta = argv[1], argv[2], argv[3]
    servers = os.environ.get("SERVERS", "kvik redis").split()
    base_requests = int(os.environ.get("REQUESTS", "200000"))
    repeats = int(os.environ.get("REPEATS", "3"))
    threads = int(os.environ.get("THREADS", "2"))
    results = {}
    for cell in CELLS:
        script, clients, depth, cell_threads = cell
        requests = max(base_requests, base_requests * depth // 4)
        for r in range(repeats):
            order = servers[r % len(servers):] + servers[:r % len(servers)]
            for kind in order:
                if kind != "kvik" and cell_threads not in (None, 1):
                    continue
                t = cell_threads or threads
                got = run_cell(kind, kvik_bin, script, clients, depth, requests, t)
                results.setdefault((cell, kind), []).append(got)
                print("%s %s -c %d -P %d%s: %s rps, %.2f s CPU, client busy %.0f%%" % (
                    kind, script, clients, depth, " --threads %d" % t if kind == "kvik" else "",
                    fmt(got["rps"]), got["server_cpu"], 100 * (got["client_busy"] or 0)), flush=True)

    def med(cell, kind, field):
        return median(results, (cell, kind), field)

    lines = ["# Lua scripts: EVALSHA throughput and scripts in parallel", ""] + meta_lines(meta)
    lines += [
        "Command: `%s`. `redis-benchmark -r 100000 EVALSHA <sha> 1 key:__rand_int__ …`, medians of %d rounds; "
        "kvik with `--threads %d` unless the row says otherwise. Scripts: see bench/scripting.py."
        % (os.environ.get("COMMAND", "bench/scripting.sh"), repeats, threads),
        "",
        "| script | -c | -P | server | requests/s | server CPU s | requests per CPU-s | load generator busy |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for cell in CELLS:
        script, clients, depth, cell_threads = cell
        for kind in servers:
            name = "%s-server" % kind
            if kind == "kvik":
                name += " --threads %d" % (cell_threads or threads)
            elif cell_threads not in (None, 1):
                continue
            lines.append("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
                script, clients, depth, name, fmt(med(cell, kind, "rps")),
                fmt(med(cell, kind, "server_cpu"), "{:.2f}"), fmt(med(cell, kind, "per_cpu")),
                fmt(med(cell, kind, "client_busy"), "{:.0%}")))
    if "kvik" in servers and "redis" in servers:
        lines += ["", "| script | -c | -P | kvik threads | kvik ÷ redis, requests/s | kvik ÷ redis, per server-CPU-second |",
                  "|---|---:|---:|---:|---:|---:|"]
        for cell in CELLS:
            script, clients, depth, cell_threads = cell
            redis_cell = cell if cell_threads in (None, 1) else (script, clients, depth, 1)

            def ratio(field):
                k, r = med(cell, "kvik", field), med(redis_cell, "redis", field)
                return "%.2f×" % (k / r) if k and r else "—"
            lines.append("| %s | %d | %d | %d | %s | %s |" % (
                script, clients, depth, cell_threads or threads, ratio("rps"), ratio("per_cpu")))
    one = med(CELLS[-2], "kvik", "rps")
    two = med(CELLS[-1], "kvik", "rps")
    if one and two:
        lines += ["", "Scripts on random declared keys, kvik `--threads 2` ÷ `--threads 1`: %.2f×." % (two / one)]
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % out_md)


if __name__ == "__main__":
    main(sys.argv)
