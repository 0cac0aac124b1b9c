"""What an ACL user with limits costs, kvik-server and redis-server in the
same run: GET and SET at -c 50, -P 1 and -P 16, as the default user
(`+@all ~* &*`, which skips the check) and as a user with limits on its
commands and keys (`+@all -@dangerous ~key:* &*`, so every request is
checked: the command's bit, its key against the pattern).

Each cell: REPEATS rounds, the servers taking turns; each round starts the
server fresh (`--save ''`, the user given as a `user` option) and runs
`redis-benchmark [--user bench -a x] -c 50 -P <depth> -n REQUESTS -r
100000 <GET|SET> key:__rand_int__ [v]`. Reported: requests/s, server CPU
seconds (/proc/PID/stat) and requests per server-CPU-second, and how busy
the load generator was; where it is busy ≥ 90% the throughput ratio
measures it, and requests per server-CPU-second is the figure to judge.

    python3 bench/acl.py KVIK_BIN OUT_MD META

Environment: SERVERS ["kvik redis"], REQUESTS [200000] (× depth / 4 above
depth 1), REPEATS [3], THREADS [2], COMMAND.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aof import stop  # noqa: E402
from cells import fmt, measure, median, meta_lines  # noqa: E402
from server_report import free_port, wait_ready  # noqa: E402

USER_RULES = ["bench", "on", "nopass", "+@all", "-@dangerous", "~key:*", "&*"]
CELLS = [(cmd, depth, user) for cmd in ("GET", "SET") for depth in (1, 16) for user in ("default", "limited")]


def server_args(kind, kvik_bin, port, threads):
    user = ["--user"] + USER_RULES
    if kind == "kvik":
        return [kvik_bin, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--threads", str(threads)] + user
    return ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", ""] + user


def run_cell(kind, kvik_bin, cmd, depth, user, requests, threads):
    port = free_port()
    proc = subprocess.Popen(server_args(kind, kvik_bin, port, threads),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_ready(port, 60):
        proc.kill()
        raise SystemExit("%s did not start" % kind)
    login = [] if user == "default" else ["--user", "bench", "-a", "x"]
    command = [cmd, "key:__rand_int__"] + (["v"] if cmd == "SET" else [])
    bench = ["-p", str(port)] + login + ["-c", "50", "-P", str(depth), "-n", str(requests), "-r", "100000"] + command
    got = measure(proc.pid, bench, requests)
    denied = subprocess.run(["redis-cli", "-p", str(port), "ACL", "LOG"], capture_output=True, text=True).stdout
    stop(proc, port)
    # redis-benchmark's own CONFIG GET at start is not among the checked
    # commands' refusals: only a refused GET or SET would spoil the cell.
    if any(line.strip() in ("get", "set") for line in denied.splitlines()):
        raise SystemExit("%s refused the benchmark's %s" % (kind, cmd))
    return got


def main(argv):
    if len(argv) != 4:
        raise SystemExit(__doc__)
    kvik_bin, out_md, meta = argv[1], argv[2], argv[3]
    servers = os.environ.get("SERVERS", "kvik redis").split()
    base = int(os.environ.get("REQUESTS", "200000"))
    repeats = int(os.environ.get("REPEATS", "3"))
    threads = int(os.environ.get("THREADS", "2"))
    results = {}
    for r in range(repeats):
        for cell in CELLS:
            cmd, depth, user = cell
            order = servers[r % len(servers):] + servers[:r % len(servers)]
            for kind in order:
                got = run_cell(kind, kvik_bin, cmd, depth, user, max(base, base * depth // 4), threads)
                results.setdefault((cell, kind), []).append(got)
                print("%s %s -P %d as %s: %s rps, %.2f s CPU, client busy %.0f%%" % (
                    kind, cmd, depth, user, fmt(got["rps"]), got["server_cpu"], 100 * (got["client_busy"] or 0)),
                    flush=True)

    def med(cell, kind, field):
        return median(results, (cell, kind), field)

    lines = ["# ACL: the cost of a user with limits", ""] + meta_lines(meta)
    lines += ["Command: `%s`. `redis-benchmark -c 50 -r 100000`, medians of %d rounds, kvik with `--threads %d`; "
              "the limited user is `%s`." % (os.environ.get("COMMAND", "bench/acl.sh"), repeats, threads,
                                             " ".join(USER_RULES)), "",
              "| command | -P | user | server | requests/s | server CPU s | requests per CPU-s | load generator busy |",
              "|---|---:|---|---|---:|---:|---:|---:|"]
    for cell in CELLS:
        for kind in servers:
            lines.append("| %s | %d | %s | %s-server | %s | %s | %s | %s |" % (
                cell[0], cell[1], cell[2], kind, fmt(med(cell, kind, "rps")), fmt(med(cell, kind, "server_cpu"), "{:.2f}"),
                fmt(med(cell, kind, "per_cpu")), fmt(med(cell, kind, "client_busy"), "{:.0%}")))
    lines += ["", "| command | -P | server | limited ÷ default, requests/s | limited ÷ default, per CPU-s |",
              "|---|---:|---|---:|---:|"]
    for cmd, depth, _ in CELLS[::2]:
        for kind in servers:
            def ratio(field):
                a, b = med((cmd, depth, "limited"), kind, field), med((cmd, depth, "default"), kind, field)
                return "%.3f×" % (a / b) if a and b else "—"
            lines.append("| %s | %d | %s-server | %s | %s |" % (cmd, depth, kind, ratio("rps"), ratio("per_cpu")))
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % out_md)


if __name__ == "__main__":
    main(sys.argv)
