"""Full resync time, kvik against redis-server in the same run: how long a
replica takes, from `REPLICAOF` to serving, to copy a master of KEYS keys.

For each key count, three pairs, master -> replica, each in scratch
directories of its own with no save points:

- kvik -> redis-server and redis-server -> redis-server: the same replica,
  so the two differ in the master's side (kvik: a fork-free snapshot written
  as a file, then sent; redis-server 7.0: a forked child writing the RDB to
  the socket, `repl-diskless-sync yes` with `repl-diskless-sync-delay 0` so
  that it does not wait for more replicas);
- redis-server -> kvik against redis-server -> redis-server: the same master,
  so the two differ in the replica's side (reading and loading the RDB).

The master is filled with KEYS pipelined `SET key:<i> <value>` (VALUE_BYTES
bytes, bench/server_report.py's loader). Each round starts a fresh replica,
sends it `REPLICAOF`, and polls its `INFO replication` every 10 ms until it
shows `master_link_status:up` and `master_sync_in_progress:0`; then its
`DBSIZE` must be KEYS. The figure is the median over REPEATS rounds (the
pairs take turns within a round).

    python3 bench/replication.py KVIK_BIN OUT_MD META [KEYS ...]

Environment: REPEATS [3], VALUE_BYTES [64], THREADS [nproc] (kvik
--threads), SYNC_TIMEOUT [600] seconds, COMMAND (shown in the report).
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bgsave  # noqa: E402
from server_report import Client, free_port, load_keys, wait_ready  # noqa: E402

PAIRS = [("kvik", "redis"), ("redis", "redis"), ("redis", "kvik")]


class Server(bgsave.Server):
    """bgsave.py's server (its INFO and stop), started with the options of
    a replication run: redis-server's diskless sync without its delay."""

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


def sync_seconds(master, replica_name, kvik_bin, threads, keys, scratch, timeout):
    """Seconds from REPLICAOF to a serving replica of `master`."""
    directory = tempfile.mkdtemp(prefix="replica-", dir=scratch)
    replica = Server(replica_name, kvik_bin, directory, threads)
    try:
        started = time.perf_counter()
        reply = replica.client.call("REPLICAOF", "127.0.0.1", str(master.port))
        if isinstance(reply, Exception):
            raise RuntimeError("REPLICAOF: %s" % reply)
        deadline = started + timeout
        while True:
            info = replica.info("replication")
            if info.get("master_link_status") == "up" and info.get("master_sync_in_progress") == "0":
                break
            if time.perf_counter() > deadline:
                raise RuntimeError("%s replica did not sync within %d s" % (replica_name, timeout))
            time.sleep(0.01)
        took = time.perf_counter() - started
        size = replica.client.call("DBSIZE")
        if int(size) != keys:
            raise RuntimeError("%s replica holds %r keys, not %d" % (replica_name, size, keys))
        return took
    finally:
        replica.stop()
        shutil.rmtree(directory, ignore_errors=True)


def main(argv):
    kvik_bin, out_md, meta = argv[1], argv[2], argv[3]
    counts = [int(k) for k in argv[4:]] or [1_000_000]
    repeats = int(os.environ.get("REPEATS", "3"))
    value_bytes = int(os.environ.get("VALUE_BYTES", "64"))
    threads = int(os.environ.get("THREADS", str(os.cpu_count() or 1)))
    timeout = int(os.environ.get("SYNC_TIMEOUT", "600"))
    scratch = tempfile.mkdtemp(prefix="kvik-bench-repl-")
    rows = []
    try:
        for keys in counts:
            masters = {}
            for name in ("kvik", "redis"):
                directory = tempfile.mkdtemp(prefix="master-%s-" % name, dir=scratch)
                masters[name] = Server(name, kvik_bin, directory, threads)
                load_keys(masters[name].client, keys, value_bytes)
            times = {pair: [] for pair in PAIRS}
            for r in range(repeats):
                order = PAIRS[r % len(PAIRS):] + PAIRS[: r % len(PAIRS)]
                for pair in order:
                    took = sync_seconds(masters[pair[0]], pair[1], kvik_bin, threads, keys, scratch, timeout)
                    times[pair].append(took)
                    print("%d keys, %s -> %s: %.3f s" % (keys, pair[0], pair[1], took), file=sys.stderr)
            for m in masters.values():
                m.stop()
            rows.append((keys, {pair: statistics.median(v) for pair, v in times.items()}))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_report(out_md, meta, rows, repeats, value_bytes, threads)


def write_report(out_md, meta, rows, repeats, value_bytes, threads):
    lines = ["# Full resync: time to a serving replica", ""]
    lines.append("Written by `%s`. Medians of %d rounds; %d-byte values; kvik `--threads %d`."
                 % (os.environ.get("COMMAND", "bench/replication.sh"), repeats, value_bytes, threads))
    lines.append("redis-server masters sync diskless with `repl-diskless-sync-delay 0`;")
    lines.append("kvik masters write their snapshot to a file, then send it. See bench/replication.py.")
    lines.append("")
    if meta != "-" and os.path.exists(meta):
        with open(meta) as f:
            lines.append("Machine: " + ", ".join(l.strip() for l in f if l.strip()))
            lines.append("")
    lines.append("| keys | kvik → redis | redis → redis | master kvik ÷ redis | redis → kvik | replica kvik ÷ redis |")
    lines.append("|---:|---:|---:|---:|---:|---:|")
    for keys, t in rows:
        kr, rr, rk = t[("kvik", "redis")], t[("redis", "redis")], t[("redis", "kvik")]
        lines.append("| %s | %.2f s | %.2f s | %.2f | %.2f s | %.2f |" % (
            format(keys, ","), kr, rr, kr / rr, rk, rk / rr))
    lines.append("")
    lines.append("A ratio below 1 means kvik is faster.")
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
