#!/usr/bin/env python3
"""Helpers for bench/server.sh (Python 3 standard library only).

Subcommands:
  freeport                      print a free TCP port on 127.0.0.1
  wait PORT SECONDS             wait until a server answers PING on PORT
  memory NAME PID PORT KEYS SIZE OUT
                                load KEYS pipelined `SET key:<i> <SIZE bytes>` into
                                the server, reading `INFO memory` used_memory (when
                                the server has it) and VmRSS of PID before and
                                after; append one CSV row to OUT
  report WORK OUT_MD OUT_CSV    turn the raw redis-benchmark CSV files and the
                                memory rows in WORK into Markdown and CSV
"""

import csv
import os
import socket
import statistics
import sys
import time

from bench_io import read_meta

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Client:
    """A minimal RESP2 client: enough to send commands and read simple replies."""

    def __init__(self, port, timeout=30.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def read_reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            return RuntimeError(rest.decode(errors="replace"))
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read_reply() for _ in range(n)]
        raise ValueError("unexpected reply line %r" % line[:80])

    def call(self, *args):
        self.sock.sendall(encode(args))
        return self.read_reply()


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def wait_ready(port, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            c = Client(port, timeout=2.0)
            try:
                if c.call("PING") == b"PONG":
                    return True
            finally:
                c.close()
        except OSError:
            pass
        time.sleep(0.1)
    return False


def vm_rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS for pid %d" % pid)


def used_memory(client):
    """used_memory from INFO memory, or None when the server has no INFO."""
    reply = client.call("INFO", "memory")
    if not isinstance(reply, bytes):
        return None
    for line in reply.decode().splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":", 1)[1])
    return None


def load_keys(client, keys, size, batch=1000):
    value = b"v" * size
    done = 0
    while done < keys:
        n = min(batch, keys - done)
        client.sock.sendall(b"".join(
            encode((b"SET", b"key:%d" % i, value)) for i in range(done, done + n)))
        for _ in range(n):
            reply = client.read_reply()
            if reply != b"OK":
                raise RuntimeError("SET failed: %r" % (reply,))
        done += n


def measure_memory(name, pid, port, keys, size, out):
    c = Client(port, timeout=120.0)
    try:
        c.call("FLUSHALL")
        time.sleep(0.5)
        um0, rss0 = used_memory(c), vm_rss_bytes(pid)
        t0 = time.monotonic()
        load_keys(c, keys, size)
        elapsed = time.monotonic() - t0
        time.sleep(1.0)
        um1, rss1 = used_memory(c), vm_rss_bytes(pid)
        dbsize = int(c.call("DBSIZE"))
    finally:
        c.close()
    new = not os.path.exists(out)
    with open(out, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["server", "value_bytes", "keys_loaded", "dbsize",
                        "used_memory_before", "used_memory_after",
                        "rss_before", "rss_after", "load_seconds"])
        w.writerow([name, size, keys, dbsize,
                    "" if um0 is None else um0, "" if um1 is None else um1,
                    rss0, rss1, "%.2f" % elapsed])


# ---------------------------------------------------------------- report

SETTINGS = [("c50_P1", "-c 50 -P 1"), ("c50_P16", "-c 50 -P 16"), ("c1_P1000", "-c 1 -P 1000")]


def read_bench(work):
    """{(setting, server): {test: [rps, ...]}} and the tests in first-seen order."""
    runs, tests = {}, []
    for fname in sorted(os.listdir(work)):
        if not fname.startswith("bench-") or not fname.endswith(".csv"):
            continue
        _, setting, server, _rep = fname[:-4].split("-")
        with open(os.path.join(work, fname), newline="") as f:
            for row in csv.reader(f):
                if len(row) < 2 or row[0] == "test":
                    continue
                try:
                    rps = float(row[1])
                except ValueError:
                    continue
                if row[0] not in tests:
                    tests.append(row[0])
                runs.setdefault((setting, server), {}).setdefault(row[0], []).append(rps)
    return runs, tests


def fmt_rps(x):
    return "–" if x is None else "{:,.0f}".format(x)


def fmt_count(x):
    return "{:,.0f}".format(x)


def fmt_ratio(k, r):
    return "–" if k is None or r is None or r == 0 else "%.2f×" % (k / r)


def median_of(runs, setting, server, test):
    vals = runs.get((setting, server), {}).get(test)
    return (statistics.median(vals), len(vals)) if vals else (None, 0)


def read_memory(work):
    path = os.path.join(work, "memory.csv")
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def per_key(after, before, keys):
    if after in ("", None) or before in ("", None) or not keys:
        return None
    return (int(after) - int(before)) / keys


def report(work, out_md, out_csv):
    meta = read_meta(work)
    runs, tests = read_bench(work)
    mem = read_memory(work)
    repeats = meta.get("repeats", "?")

    rows = []
    for setting, _ in SETTINGS:
        for test in tests:
            k, kn = median_of(runs, setting, "kvik", test)
            r, rn = median_of(runs, setting, "redis", test)
            rows.append((setting, test, k, r, kn, rn))

    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "setting", "test", "kvik", "redis", "kvik_over_redis",
                    "kvik_runs", "redis_runs", "unit"])
        for setting, test, k, r, kn, rn in rows:
            w.writerow(["throughput", setting, test,
                        "" if k is None else "%.0f" % k, "" if r is None else "%.0f" % r,
                        "" if k is None or not r else "%.3f" % (k / r), kn, rn,
                        "requests/s (median)"])
        for m in mem_rows(mem):
            w.writerow(["memory", "value_bytes=%s" % m["size"], m["measure"],
                        "" if m["kvik"] is None else "%.1f" % m["kvik"],
                        "" if m["redis"] is None else "%.1f" % m["redis"],
                        "" if m["kvik"] is None or not m["redis"] else "%.3f" % (m["kvik"] / m["redis"]),
                        "", "", "bytes per key"])

    L = []
    L.append("# kvik-server vs redis-server: redis-benchmark throughput and bytes per key")
    L.append("")
    if meta.get("label"):
        L.append("**%s**" % meta["label"])
        L.append("")
    L.append("- Date: %s" % meta.get("date", "?"))
    L.append("- Machine: `%s` (lscpu model name), %s cores, %s; load average at start: %s"
             % (meta.get("cpu", "?"), meta.get("cores", "?"), meta.get("memtotal", "?"),
                meta.get("loadavg", "?")))
    L.append("- kvik-server: %s, release build, `--threads %s`" % (meta.get("kvik_version", "?"),
                                                                    meta.get("threads", "?")))
    L.append("- redis-server: %s, `--save '' --appendonly no`" % meta.get("redis_version", "?"))
    L.append("- redis-benchmark: %s" % meta.get("bench_version", "?"))
    L.append("- Command: `%s`" % meta.get("command", "?"))
    L.append("- Each setting: `redis-benchmark -h 127.0.0.1 -p PORT -t %s -n %s -r 100000 -q --csv` plus the "
             "setting's `-c`/`-P`, run against kvik then redis, alternating, %s; %s. Both servers run "
             "side by side throughout, only one under load at a time. `-t ping` reports two tests, "
             "`PING_INLINE` (inline command) and `PING_MBULK` (RESP multibulk)."
             % (meta.get("tests", "?"), meta.get("n", "?"),
                "once" if repeats == "1" else "%s times" % repeats,
                "figures are from that single run" if repeats == "1"
                else "figures are the median of those runs"))
    L.append("")
    L.append("## Throughput (requests/s%s)" % ("" if repeats == "1" else ", median of %s" % repeats))
    L.append("")
    for setting, flags in SETTINGS:
        L.append("### `%s`" % flags)
        L.append("")
        L.append("| test | kvik | redis | kvik/redis |")
        L.append("|---|---:|---:|---:|")
        for s, test, k, r, _, _ in rows:
            if s == setting:
                L.append("| %s | %s | %s | %s |" % (test, fmt_rps(k), fmt_rps(r), fmt_ratio(k, r)))
        L.append("")
    L.append("### Ratios at a glance (kvik/redis)")
    L.append("")
    L.append("| test | " + " | ".join("`%s`" % fl for _, fl in SETTINGS) + " |")
    L.append("|---|" + "---:|" * len(SETTINGS))
    for test in tests:
        cells = []
        for setting, _ in SETTINGS:
            k, _ = median_of(runs, setting, "kvik", test)
            r, _ = median_of(runs, setting, "redis", test)
            cells.append(fmt_ratio(k, r))
        L.append("| %s | %s |" % (test, " | ".join(cells)))
    L.append("")
    failures = meta.get("failures", "").strip()
    if failures:
        L.append("Runs that failed: %s" % failures)
        L.append("")

    L.append("## Bytes per key")
    L.append("")
    if not mem:
        L.append("Not measured.")
    else:
        L.append("Each server started fresh (same flags as above), then loaded with `SET key:<i> <value>` for "
                 "i = 0 … keys−1 by a pipelined socket loader (`bench/server_report.py`, batches of 1000). "
                 "Bytes per key = (after − before) / DBSIZE. Two measures: the process's resident set size "
                 "(`VmRSS` from `/proc/<pid>/status`), the fairest comparison across servers since it counts "
                 "everything the process holds, and `used_memory` from `INFO memory` where the server reports "
                 "it.")
        L.append("")
        L.append("| value bytes | measure | kvik | redis | kvik/redis |")
        L.append("|---:|---|---:|---:|---:|")
        for m in mem_rows(mem):
            L.append("| %s | %s | %s | %s | %s |" % (
                m["size"], m["measure"],
                "–" if m["kvik"] is None else "%.1f" % m["kvik"],
                "–" if m["redis"] is None else "%.1f" % m["redis"],
                fmt_ratio(m["kvik"], m["redis"])))
        L.append("")
        L.append("| server | value bytes | keys loaded | DBSIZE | RSS before | RSS after | used_memory before "
                 "| used_memory after | load seconds |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for m in mem:
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                m["server"], m["value_bytes"], m["keys_loaded"], m["dbsize"],
                fmt_count(float(m["rss_before"])), fmt_count(float(m["rss_after"])),
                fmt_count(float(m["used_memory_before"])) if m["used_memory_before"] else "n/a",
                fmt_count(float(m["used_memory_after"])) if m["used_memory_after"] else "n/a",
                m["load_seconds"]))
        L.append("")
        if any(not m["used_memory_after"] for m in mem if m["server"] == "kvik"):
            L.append("kvik has no `INFO` command yet, so its `used_memory` is not available; "
                     "compare the RSS rows.")
            L.append("")
    notes = meta.get("notes", "").strip()
    if notes:
        L.append("## Notes")
        L.append("")
        for n in notes.split("|"):
            if n.strip():
                L.append("- " + n.strip())
        L.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(L))


def mem_rows(mem):
    out = []
    sizes = []
    for m in mem:
        if m["value_bytes"] not in sizes:
            sizes.append(m["value_bytes"])
    for size in sizes:
        for measure, a, b in (("RSS", "rss_after", "rss_before"),
                              ("used_memory", "used_memory_after", "used_memory_before")):
            vals = {}
            for m in mem:
                if m["value_bytes"] == size:
                    vals[m["server"]] = per_key(m[a], m[b], int(m["dbsize"]))
            out.append({"size": size, "measure": measure,
                        "kvik": vals.get("kvik"), "redis": vals.get("redis")})
    return out


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd = argv[1]
    if cmd == "freeport":
        print(free_port())
    elif cmd == "wait":
        sys.exit(0 if wait_ready(int(argv[2]), float(argv[3])) else 1)
    elif cmd == "memory":
        measure_memory(argv[2], int(argv[3]), int(argv[4]), int(argv[5]), int(argv[6]), argv[7])
    elif cmd == "report":
        report(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
