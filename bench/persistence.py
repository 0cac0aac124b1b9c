"""Snapshot cost, kvik-server against redis-server in the same run: how long
`SAVE` takes, how big the file is, and how long a start takes to load it.

For each key count and each server: a fresh server in a directory of its
own, loaded with KEYS pipelined `SET key:<i> <value>` (VALUE_BYTES-byte
values), then REPEATS times `SAVE` (timed at the client), then REPEATS
restarts, each timed from the spawn to the first PING answered and read
from the server's own log line ("DB loaded from disk: S seconds", which
both servers write). Each server also loads the other's file, which shows
that the files are interchangeable and compares loading the same bytes.

    python3 bench/persistence.py KVIK_BIN OUT_MD [KEYS ...]

Environment: REPEATS [3], VALUE_BYTES [64], THREADS [nproc] (kvik --threads).
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_report import Client, free_port, load_keys, wait_ready  # noqa: E402

LOADED = re.compile(r"DB loaded from disk: ([0-9.]+) seconds")


def start(name, kvik_bin, directory, threads):
    port = free_port()
    log = os.path.join(directory, "server.log")
    if name == "kvik":
        args = [kvik_bin, "--bind", "127.0.0.1", "--port", str(port), "--threads", str(threads)]
    else:
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--appendonly", "no"]
    args += ["--save", "", "--dir", directory, "--logfile", log]
    began = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_ready(port, 600):
        proc.kill()
        raise RuntimeError("%s did not start in %s" % (name, directory))
    return proc, port, time.monotonic() - began, log


def stop(proc, port):
    try:
        c = Client(port)
        c.sock.sendall(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
        c.close()
    except OSError:
        pass
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def loaded_seconds(log):
    with open(log, errors="replace") as f:
        found = LOADED.findall(f.read())
    return float(found[-1]) if found else None


def measure(name, kvik_bin, keys, value_bytes, repeats, threads, root):
    directory = os.path.join(root, "%s-%d" % (name, keys))
    os.makedirs(directory)
    proc, port, _, log = start(name, kvik_bin, directory, threads)
    c = Client(port, timeout=600)
    load_keys(c, keys, value_bytes)
    saves = []
    for _ in range(repeats):
        began = time.monotonic()
        if c.call("SAVE") != b"OK":
            raise RuntimeError("%s: SAVE failed" % name)
        saves.append(time.monotonic() - began)
    c.close()
    stop(proc, port)
    size = os.path.getsize(os.path.join(directory, "dump.rdb"))
    starts, logged = [], []
    for _ in range(repeats):
        open(log, "w").close()
        proc, port, ready, log = start(name, kvik_bin, directory, threads)
        c = Client(port)
        count = int(c.call("DBSIZE"))
        c.close()
        stop(proc, port)
        if count != keys:
            raise RuntimeError("%s loaded %d keys of %d" % (name, count, keys))
        starts.append(ready)
        logged.append(loaded_seconds(log))
    return {"save": statistics.median(saves), "bytes": size, "start": statistics.median(starts),
            "loaded": statistics.median([x for x in logged if x is not None] or [float("nan")]),
            "dir": directory}


def cross_load(name, kvik_bin, source_dir, threads, root):
    """Seconds `name` takes to start on the file in `source_dir`."""
    directory = tempfile.mkdtemp(dir=root)
    shutil.copy(os.path.join(source_dir, "dump.rdb"), directory)
    proc, port, ready, log = start(name, kvik_bin, directory, threads)
    stop(proc, port)
    return ready, loaded_seconds(log)


def main(argv):
    kvik_bin, out_md = argv[1], argv[2]
    counts = [int(k) for k in argv[3:]] or [1000000]
    repeats = int(os.environ.get("REPEATS", "3"))
    value_bytes = int(os.environ.get("VALUE_BYTES", "64"))
    threads = int(os.environ.get("THREADS", str(os.cpu_count() or 1)))
    root = tempfile.mkdtemp(prefix="kvik-persistence-")
    rows = []
    try:
        for keys in counts:
            got = {name: measure(name, kvik_bin, keys, value_bytes, repeats, threads, root)
                   for name in ("kvik", "redis")}
            kvik_on_redis = cross_load("kvik", kvik_bin, got["redis"]["dir"], threads, root)
            redis_on_kvik = cross_load("redis", kvik_bin, got["kvik"]["dir"], threads, root)
            rows.append((keys, got, kvik_on_redis, redis_on_kvik))
            shutil.rmtree(got["kvik"]["dir"])
            shutil.rmtree(got["redis"]["dir"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [
        "# Snapshots: SAVE and load time, kvik-server vs redis-server",
        "",
        "- Date: %s; %d cores; kvik `--threads %d`; %d-byte values; medians of %d" % (
            time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count() or 0, threads, value_bytes, repeats),
        "- Command: `bench/persistence.sh` (%s keys)" % ", ".join(str(k) for k in counts),
        "- SAVE is timed at the client; load is the server's own log line (`DB loaded from disk`),",
        "  start the time from spawn to the first PING answered.",
        "",
        "| keys | measure | kvik | redis | kvik/redis |",
        "|---:|---|---:|---:|---:|",
    ]
    for keys, got, kvik_on_redis, redis_on_kvik in rows:
        k, r = got["kvik"], got["redis"]
        for label, a, b, fmt in [("SAVE (s)", k["save"], r["save"], "%.3f"),
                                 ("file (bytes)", k["bytes"], r["bytes"], "%d"),
                                 ("load (s)", k["loaded"], r["loaded"], "%.3f"),
                                 ("start to PING (s)", k["start"], r["start"], "%.3f")]:
            lines.append("| %d | %s | %s | %s | %.2f× |" % (keys, label, fmt % a, fmt % b, a / b if b else 0))
        lines.append("| %d | load of the other's file (s) | %.3f | %.3f | %.2f× |" % (
            keys, kvik_on_redis[1] or 0, redis_on_kvik[1] or 0,
            (kvik_on_redis[1] or 0) / (redis_on_kvik[1] or 1)))
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
