"""What the cell-by-cell benchmarks (bench/scripting.py, bench/acl.py,
bench/tls.py) share: one redis-benchmark run against a server process,
measured as requests/s, the server's CPU time and how busy the load
generator was; medians of rounds; the report's header lines."""

import os
import resource
import statistics
import subprocess
import time

from aof import cpu_seconds


def measure(pid, bench_args, requests):
    """Run `redis-benchmark -q <bench_args>` against the server with `pid`:
    {rps, server_cpu, per_cpu, client_busy}. The load generator's busy
    share is its CPU time over the run's wall time."""
    before = cpu_seconds(pid)
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    out = subprocess.run(["redis-benchmark", "-q"] + bench_args,
                         capture_output=True, text=True, check=True, timeout=900).stdout
    wall = time.monotonic() - started
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = cpu_seconds(pid) - before
    rps = None
    for line in out.replace("\r", "\n").splitlines():
        if "requests per second" in line:
            rps = float(line.split(":")[-1].split("requests")[0])
    client_cpu = (usage_after.ru_utime - usage_before.ru_utime) + (usage_after.ru_stime - usage_before.ru_stime)
    return {"rps": rps, "server_cpu": server_cpu, "per_cpu": requests / server_cpu if server_cpu else None,
            "client_busy": client_cpu / wall if wall else None}


def median(results, key, field):
    """The median of `field` over the rounds stored under `key`, or None."""
    values = [x[field] for x in results.get(key, []) if x[field] is not None]
    return statistics.median(values) if values else None


def fmt(x, spec="{:,.0f}"):
    return "—" if x is None else spec.format(x)


def meta_lines(meta):
    """The machine and server lines bench/common.sh wrote, as a list."""
    if meta == "-" or not os.path.exists(meta):
        return []
    with open(meta) as f:
        return ["- " + line.strip() for line in f if line.strip()] + [""]
