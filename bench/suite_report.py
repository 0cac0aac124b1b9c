#!/usr/bin/env python3
"""Helpers and report for bench/suite.sh (Python 3 standard library only).

bench/suite.sh writes one line per benchmark run to WORK/runs.tsv (columns in
RUN_COLUMNS): which cell, which target (a server, and `+respb` when
kvik-benchmark drove it over RESPB), the repeat and the position in that
repeat's rotated order, the client's output file, the CPU ticks the
server process used during the run, the client's own CPU time and the
run's wall time in milliseconds, and how many of the server's ticks were
system (kernel) time. WORK/memory.csv holds one row per
bytes-per-key measurement (MEMORY_COLUMNS), WORK/meta the machine, versions
and settings (key=value lines).

Subcommands:
  cputicks PID                   print utime+stime of PID in clock ticks
  prepare PORT COUNT SIZE        COUNT sorted sets `zset:<12 digits>` and lists
                                 `list:<12 digits>` of SIZE elements each (the
                                 keys redis-benchmark's __rand_int__ yields)
  memory NAME PID PORT KEYS DATASET OUT
                                 bytes per key of one data set on a fresh server;
                                 appends one row to the CSV file OUT
  report WORK OUT_DIR            suite.md, suite_runs.csv, suite_memory.csv,
                                 suite.json and the SVG charts in OUT_DIR
"""

import csv
import json
import math
import os
import statistics
import sys
import time
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_io import read_meta, read_runs  # noqa: E402
from server_report import Client, encode, used_memory, vm_rss_bytes  # noqa: E402

RUN_COLUMNS = ["section", "cell", "flags", "size", "test", "target", "repeat", "position",
               "format", "file", "n", "cpu_ticks", "client_ms", "wall_ms", "system_ticks"]
MEMORY_COLUMNS = ["server", "dataset", "keys_loaded", "dbsize", "rss_baseline", "rss_loaded",
                  "used_memory_baseline", "used_memory_loaded", "memory_purge", "rss_residual",
                  "used_memory_residual", "load_seconds"]
# A cell whose slowest and fastest repeat differ by more than this is flagged.
NOISY = 1.5
# A run whose client was on a CPU this share of its wall time or more was
# paced by the client as much as by the server: the load generator is one
# thread, and there is no faster one to measure with.
CLIENT_BOUND = 0.9
PEERS = ["redis", "valkey", "valkey-io2"]
SECTIONS = [("throughput", "redis-benchmark `-t` tests"),
            ("collections", "CPU-heavy commands on 10,000-element collections"),
            ("ping", "Yardstick: PING")]

# ---------------------------------------------------------------- helpers for suite.sh


def cpu_ticks(pid):
    """utime + stime of PID in clock ticks (fields 14 and 15 of /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def send_all(client, commands, batch=1000):
    """Pipeline COMMANDS in batches; every reply must be a non-error."""
    for at in range(0, len(commands), batch):
        chunk = commands[at:at + batch]
        client.sock.sendall(b"".join(encode(c) for c in chunk))
        for c in chunk:
            reply = client.read_reply()
            if isinstance(reply, Exception):
                raise RuntimeError("%s failed: %s" % (c[0], reply))


def prepare(port, count, size):
    """The same collections on every server, built in bounded batches."""
    c = Client(port, timeout=120.0)
    try:
        for i in range(count):
            zkey, lkey = b"zset:%012d" % i, b"list:%012d" % i
            cmds = [(b"DEL", zkey, lkey)]
            for at in range(0, size, 500):
                top = min(size, at + 500)
                z = [b"ZADD", zkey]
                for j in range(at, top):
                    z += [b"%d" % j, b"m%d" % j]
                cmds.append(tuple(z))
                cmds.append(tuple([b"RPUSH", lkey] + [b"e%d" % j for j in range(at, top)]))
            send_all(c, cmds, batch=50)
            if int(c.call("ZCARD", zkey)) != size or int(c.call("LLEN", lkey)) != size:
                raise RuntimeError("collection %d has the wrong size" % i)
    finally:
        c.close()


# Data sets for bytes per key: name -> function(i) giving one command.
DATASETS = {
    "str3": lambda i: (b"SET", b"key:%d" % i, b"v" * 3),
    "str64": lambda i: (b"SET", b"key:%d" % i, b"v" * 64),
    "str256": lambda i: (b"SET", b"key:%d" % i, b"v" * 256),
    "str1024": lambda i: (b"SET", b"key:%d" % i, b"v" * 1024),
    "list1": lambda i: (b"RPUSH", b"list:%d" % i, b"element"),
    "hash3": lambda i: (b"HSET", b"hash:%d" % i, b"name", b"kvik", b"age", b"%d" % (i % 100),
                        b"city", b"Oslo"),
}
DATASET_LABELS = {
    "str3": "SET, 3-byte values", "str64": "SET, 64-byte values",
    "str256": "SET, 256-byte values", "str1024": "SET, 1 KiB values",
    "list1": "RPUSH, one-element lists", "hash3": "HSET, 3-field hashes",
}


def settle(seconds=None):
    """Let the allocator and the server's background work settle before reading memory
    (MEM_SETTLE seconds, default 1; the smoke test shortens it)."""
    if seconds is None:
        seconds = float(os.environ.get("MEM_SETTLE", "1"))
    time.sleep(min(max(seconds, 0.0), 60.0))


def measure_memory(name, pid, port, keys, dataset, out):
    """Baseline, loaded and (after FLUSHALL and MEMORY PURGE) residual memory."""
    make = DATASETS[dataset]
    c = Client(port, timeout=120.0)
    try:
        settle()
        um0, rss0 = used_memory(c), vm_rss_bytes(pid)
        t0 = time.monotonic()
        for at in range(0, keys, 1000):
            send_all(c, [make(i) for i in range(at, min(keys, at + 1000))])
        elapsed = time.monotonic() - t0
        settle()
        um1, rss1 = used_memory(c), vm_rss_bytes(pid)
        dbsize = int(c.call("DBSIZE"))
        c.call("FLUSHALL")
        purge = c.call("MEMORY", "PURGE")
        purged = "yes" if purge == b"OK" else "no"
        settle()
        um2, rss2 = used_memory(c), vm_rss_bytes(pid)
    finally:
        c.close()
    new = not os.path.exists(out)
    with open(out, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(MEMORY_COLUMNS)
        w.writerow([name, dataset, keys, dbsize, rss0, rss1, blank(um0), blank(um1), purged,
                    rss2, blank(um2), "%.2f" % elapsed])


def blank(v):
    return "" if v is None else v


# ---------------------------------------------------------------- reading runs


def finite(x):
    """The rps as a float, None when not finite (a run too short to time reports `inf`)."""
    v = float(x)
    return v if math.isfinite(v) else None


def parse_output(path, fmt):
    """[(title, rps)] of one client run, in output order (empty when unreadable)."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="") as f:
        if fmt == "json":
            for line in f:
                line = line.strip()
                if line:
                    try:
                        o = json.loads(line)
                    except ValueError:
                        continue
                    rows.append((o["name"], finite(o["rps"])))
        else:
            for row in csv.DictReader(f):
                rows.append((row["test"], finite(row["rps"])))
    return rows


def load_results(work, clk_tck):
    """Every run with its rps (the last test of the output: `-t lrange_100`
    first fills the list) and its requests per server-CPU-second (all
    requests of the run over the server's CPU time)."""
    out = []
    for r in read_runs(work, RUN_COLUMNS):
        rows = parse_output(os.path.join(work, r["file"]), r["format"])
        r = dict(r)
        r["title"] = rows[-1][0] if rows else ""
        r["rps"] = rows[-1][1] if rows else None
        cpu = int(r["cpu_ticks"]) / clk_tck if r["cpu_ticks"].isdigit() else None
        r["cpu_seconds"] = cpu
        total = int(r["n"]) * len(rows)
        r["per_cpu"] = total / cpu if rows and cpu else None
        client, wall = r["client_ms"], r["wall_ms"]
        r["client_busy"] = int(client) / int(wall) if client.isdigit() and wall.isdigit() and int(wall) > 0 else None
        system = int(r["system_ticks"]) / clk_tck if r["system_ticks"].isdigit() else None
        r["system_seconds"] = system
        r["system_share"] = system / cpu if system is not None and cpu else None
        out.append(r)
    return out


# ---------------------------------------------------------------- statistics


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(runs):
    """{(cell, test, target): {median, min, max, runs, noisy, per_cpu, ...}} in run order."""
    groups = {}
    for r in runs:
        key = (r["cell"], r["test"], r["target"])
        groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in groups.items():
        vals = [r["rps"] for r in rs if r["rps"] is not None]
        lo, hi = (min(vals), max(vals)) if vals else (None, None)
        out[key] = {
            "section": rs[0]["section"], "cell": key[0], "flags": rs[0]["flags"],
            "size": rs[0]["size"], "test": key[1], "target": key[2], "title": rs[0]["title"],
            "median": median(vals), "min": lo, "max": hi, "runs": len(vals),
            "noisy": bool(vals) and lo > 0 and hi / lo > NOISY,
            "per_cpu": median([r["per_cpu"] for r in rs]),
            "client_busy": median([r["client_busy"] for r in rs]),
            "system_share": median([r["system_share"] for r in rs]),
            # Per repetition, for ratios between runs of the same repetition.
            "rps_by_repeat": {r["repeat"]: r["rps"] for r in rs if r["rps"] is not None},
            "per_cpu_by_repeat": {r["repeat"]: r["per_cpu"] for r in rs if r["per_cpu"] is not None},
        }
    return out


def client_bound(s):
    return s["client_busy"] is not None and s["client_busy"] >= CLIENT_BOUND


def marks(s):
    """The signs after a median: ⚠ noisy, ◆ paced by the client."""
    return (" ⚠" if s["noisy"] else "") + (" ◆" if client_bound(s) else "")


def ratio(a, b):
    return a / b if a is not None and b else None


def paired_ratio(a, b):
    """kvik's requests/s over the peer's, for two summaries of one cell: the
    median over the repetitions both ran in of the ratio within each one.

    The machine's speed drifts between repetitions, so a run is compared
    only with the runs of its own repetition, minutes apart at most.
    """
    return paired(a, b, "rps_by_repeat")


def paired_per_cpu_ratio(a, b):
    """kvik's requests per server-CPU-second over the peer's, paired by
    repetition as paired_ratio pairs requests/s: a machine that runs slower
    also spends more CPU time on each request."""
    return paired(a, b, "per_cpu_by_repeat")


def paired(a, b, by_repeat):
    """The median over the repetitions both summaries ran in of the ratio of
    their figures `by_repeat` within each."""
    if not a or not b:
        return None
    mine, theirs = a.get(by_repeat, {}), b.get(by_repeat, {})
    return median([ratio(mine[k], theirs[k]) for k in mine if k in theirs])


def kvik_targets(targets):
    return [t for t in targets if t.startswith("kvik") and "+" not in t]


def ratio_pairs(targets):
    """(kvik target, peer) pairs present in this run, kvik first."""
    return [(k, p) for k in kvik_targets(targets) for p in PEERS if p in targets]


def cell_order(summary):
    """Cells in first-run order, each with its tests in first-run order."""
    cells = []
    for (cell, test, _t) in summary:
        entry = next((c for c in cells if c[0] == cell), None)
        if entry is None:
            entry = (cell, [])
            cells.append(entry)
        if test not in entry[1]:
            entry[1].append(test)
    return cells


def targets_of(summary):
    order = ["kvik-t1", "kvik-t1+respb", "kvik-t2", "kvik-t2+respb"] + PEERS
    seen = {t for (_c, _s, t) in summary}
    return [t for t in order if t in seen] + sorted(seen - set(order))


def ratio_table(summary):
    """[{cell, section, flags, size, test, kvik, peer, ratio, per_cpu_ratio}] for every pair
    with both medians; per_cpu_ratio is None where a server's CPU time is unknown."""
    targets = targets_of(summary)
    out = []
    for cell, tests in cell_order(summary):
        for test in tests:
            for k, p in ratio_pairs(targets):
                a, b = summary.get((cell, test, k)), summary.get((cell, test, p))
                r = paired_ratio(a, b)
                if r is not None:
                    out.append({"cell": cell, "section": a["section"], "flags": a["flags"],
                                "size": a["size"], "test": test, "kvik": k, "peer": p, "ratio": r,
                                "per_cpu_ratio": paired_per_cpu_ratio(a, b)})
    return out


def memory_rows(work):
    path = os.path.join(work, "memory.csv")
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, newline="") as f:
        for m in csv.DictReader(f):
            db = int(m["dbsize"]) or None
            m = dict(m)
            m["rss_per_key"] = (int(m["rss_loaded"]) - int(m["rss_baseline"])) / db if db else None
            if m["used_memory_loaded"] and m["used_memory_baseline"] and db:
                m["used_per_key"] = (int(m["used_memory_loaded"]) - int(m["used_memory_baseline"])) / db
            else:
                m["used_per_key"] = None
            rows.append(m)
    return rows


# ---------------------------------------------------------------- formatting


def fmt_int(v):
    return "–" if v is None else "{:,.0f}".format(v)


def fmt_ratio(v):
    return "–" if v is None else "{:.2f}×".format(v)


def fmt_geomean_below(values):
    """The geometric mean of ratios, and how many of them are below 1.00×."""
    g = geomean(values)
    if g is None:
        return "–"
    return "%s (%d of %d below)" % (fmt_ratio(g), sum(v < 1.0 for v in values), len(values))


def fmt_bytes(v):
    return "–" if v is None else "{:,.1f}".format(v)


def label(target):
    base, _, proto = target.partition("+")
    names = {"kvik-t1": "kvik 1 thread", "kvik-t2": "kvik 2 threads", "redis": "redis",
             "valkey": "valkey", "valkey-io2": "valkey io-threads 2"}
    return names.get(base, base) + (" RESPB" if proto == "respb" else "")


def cell_heading(s):
    if s["section"] == "collections":
        return "`%s` at `%s`" % (s["title"] or s["test"], s["flags"])
    size = " `-d %s`" % s["size"] if s["size"] not in ("", "-") else ""
    return "`%s`%s" % (s["flags"], size)


def title_of(summary, cell, test):
    """The client's name for a test (e.g. `LRANGE_100 (first 100 elements)`)."""
    for (c, t, _target), s in summary.items():
        if c == cell and t == test and s["title"]:
            return s["title"]
    return test


def table(head, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(head) - 1)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def count(meta, key):
    """A whole number from the run's metadata with thousands separators, or ?."""
    value = meta.get(key, "")
    return "{:,}".format(int(value)) if value.isdigit() else "?"


def md_header(meta):
    L = ["# kvik vs redis-server vs valkey-server: benchmark suite", ""]
    if meta.get("label"):
        L += ["**%s**" % meta["label"], ""]
    L += [
        "- Date: %s" % meta.get("date", "?"),
        "- Machine: `%s` (lscpu model name), %s cores, %s; load average at start: %s"
        % (meta.get("cpu", "?"), meta.get("cores", "?"), meta.get("memtotal", "?"), meta.get("loadavg", "?")),
        "- kvik-server: %s, %s build" % (meta.get("kvik_version", "?"), meta.get("profile", "?")),
        "- kvik-benchmark: %s" % meta.get("kvik_bench_version", "?"),
        "- redis-server: %s" % meta.get("redis_version", "not run"),
        "- valkey-server: %s" % meta.get("valkey_version", "not run"),
        "- redis-benchmark: %s" % meta.get("bench_version", "?"),
        "- Command: `%s`" % meta.get("command", "?"),
        "- Servers in this run: %s" % ", ".join(label(x) for x in meta.get("servers", "").split()),
        "",
        "## Method",
        "",
        "Every server listens on a free port of 127.0.0.1 with persistence off (`--save '' "
        "--appendonly no`): kvik-server with `--threads 1` and `--threads 2`, redis-server, "
        "valkey-server, and valkey-server with `--io-threads 2`. They run side by side for the "
        "whole throughput part; only one is under load at a time. Each cell (one test at one "
        "setting) runs against every target in the same repetition, in an order rotated by one "
        "place every repetition, %s times; tables show the median requests/s. A median marked ⚠ "
        "comes from runs whose fastest and slowest differ by more than %.1f× (noisy). A median "
        "marked ◆ comes from runs whose client (redis-benchmark or kvik-benchmark, one thread) "
        "was on a CPU for %d%% or more of the run's wall time (median): the load generator, "
        "not only the server, set the pace, so a faster server could not show it there. "
        "Targets marked RESPB are kvik-server driven by `kvik-benchmark --respb` with the same "
        "flags; all other figures come from redis-benchmark over RESP. Requests per "
        "server-CPU-second = all requests of a run (including the list fill `-t lrange_100` "
        "sends first) over the server process's utime+stime during the run "
        "(`/proc/<pid>/stat`). A ratio is the median, over the repetitions, of kvik's "
        "requests/s over the peer's in the same repetition: the machine's speed drifts between "
        "repetitions, so runs are compared only within one. Requests per "
        "run: %s at `-c 1 -P 1` and for the collections, %s at `-c 50 -P 1`, %s at `-P 16` and "
        "`-P 1000`; LRANGE_100 and MSET, which move far more bytes per request, a tenth of those; "
        "%s for the ping section's `-P 1000` runs, the shortest otherwise."
        % (meta.get("repeats", "?"), NOISY, round(CLIENT_BOUND * 100), count(meta, "n_slow"), count(meta, "n"),
           count(meta, "n_pipe" if "n_pipe" in meta else "n"),
           count(meta, next((k for k in ("n_ping_pipe", "n_pipe") if k in meta), "n"))),
        "",
    ]
    pinning = pinning_sentence(meta)
    if pinning:
        L[-1:] = [pinning, ""]
    return L


def pinning_sentence(meta):
    """How the run placed clients and servers on CPUs, if it pinned them."""
    if meta.get("pin") != "1":
        return ""
    return ("The load generator runs on CPU %s and every server with one worker thread (kvik 1 "
            "thread, redis, valkey) on CPU %s (`taskset`), so neither is moved onto the "
            "other's core during a run; kvik 2 threads and valkey io-threads 2 may use every "
            "CPU, the client's included." % (meta.get("client_cpu", "?"), meta.get("server_cpu", "?")))


def throughput_md(summary, meta):
    targets = targets_of(summary)
    pairs = ratio_pairs(targets)
    L = []
    cells = cell_order(summary)
    for section, title in SECTIONS:
        section_of = {k[0]: s["section"] for k, s in summary.items()}
        mine = [(c, t) for c, t in cells if section_of[c] == section]
        if not mine:
            continue
        L += ["## %s" % title, ""]
        if section == "collections":
            L += ["%s collections of each kind were written to every server before the first run "
                  "(`zset:<n>` with members m0 … m%d scored 0 … %d, `list:<n>` with elements "
                  "e0 … e%d); `-r` picks one at random per request."
                  % (meta.get("collections", "?"), int(meta.get("coll_size", "1")) - 1,
                     int(meta.get("coll_size", "1")) - 1, int(meta.get("coll_size", "1")) - 1), ""]
        for cell, tests in mine:
            first = next(summary[k] for k in summary if k[0] == cell)
            L += ["### %s" % cell_heading(first), ""]
            head = ["test"] + [label(t) for t in targets]
            rows = []
            for test in tests:
                row = [title_of(summary, cell, test)]
                for t in targets:
                    s = summary.get((cell, test, t))
                    row.append("–" if not s else fmt_int(s["median"]) + marks(s))
                rows.append(row)
            L += ["Requests/s (median):", ""] + table(head, rows)
            if pairs:
                L += ["Ratios:", ""] + pair_table(summary, cell, tests, pairs, paired_ratio)
            rows = []
            for test in tests:
                row = [title_of(summary, cell, test)]
                for t in targets:
                    s = summary.get((cell, test, t))
                    row.append("–" if not s else fmt_int(s["per_cpu"]))
                rows.append(row)
            L += ["Requests per server-CPU-second (median):", ""] + table(head, rows)
            if pairs:
                L += ["Ratios per server-CPU-second:", ""] + \
                    pair_table(summary, cell, tests, pairs, paired_per_cpu_ratio)
    return L


def pair_table(summary, cell, tests, pairs, paired_fn):
    """A table of `paired_fn` of each (kvik, peer) pair, a row per test of `cell`."""
    rows = []
    for test in tests:
        row = [title_of(summary, cell, test)]
        for k, p in pairs:
            row.append(fmt_ratio(paired_fn(summary.get((cell, test, k)), summary.get((cell, test, p)))))
        rows.append(row)
    return table(["test"] + ["%s / %s" % (label(k), label(p)) for k, p in pairs], rows)


def summary_md(ratios):
    """Geometric means of the ratios per setting, of requests/s and of
    requests per server-CPU-second: the short view."""
    head, rows = summary_rows(ratios, "ratio", lambda xs: fmt_ratio(geomean(xs)))
    if not rows:
        return []
    L = ["## Summary", "",
         "Geometric mean of kvik's ratio to each peer over the tests (and value sizes) of each "
         "setting; above 1.00× kvik is faster.", ""] + table(head, rows)
    head, rows = summary_rows(ratios, "per_cpu_ratio", fmt_geomean_below)
    if rows:
        L += ["The same for requests per server-CPU-second (each server's user and system time "
              "over its runs, paired by repetition), with the number of cells where kvik is "
              "below the peer:", ""] + table(head, rows)
    return L


def summary_rows(ratios, key, fmt):
    """The header and the rows, a setting each, of `fmt` applied to the list of
    `key` figures of each (kvik, peer) pair; no rows when no ratio has the key."""
    groups, pairs = {}, []
    for r in ratios:
        if r.get(key) is None:
            continue
        pair = (r["kvik"], r["peer"])
        groups.setdefault((r["section"], r["flags"]), {}).setdefault(pair, []).append(r[key])
        if pair not in pairs:
            pairs.append(pair)
    rows = [["%s `%s`" % (section, flags)] + [fmt(g.get(p, [])) for p in pairs]
            for (section, flags), g in groups.items()]
    return ["setting"] + ["%s / %s" % (label(k), label(p)) for k, p in pairs], rows


def setting_grid(medians, key, name, fmt):
    """A header and rows, a setting (section and flags) each and a target per
    column, of `fmt` applied to the list of medians of that setting and target
    that have a `key` figure; no rows when none has. `name(section, flags)`
    labels a row."""
    measured = [m for m in medians if m["section"] != "memory" and m.get(key) is not None]
    targets = targets_of({(m["cell"], m["test"], m["target"]): m for m in measured})
    settings = []
    for m in measured:
        if (m["section"], m["flags"]) not in settings:
            settings.append((m["section"], m["flags"]))
    rows = []
    for section, flags in settings:
        row = [name(section, flags)]
        for t in targets:
            mine = [m for m in measured if m["section"] == section and m["flags"] == flags
                    and m["target"] == t]
            row.append(fmt(mine) if mine else "–")
        rows.append(row)
    return ["setting"] + [label(t) for t in targets], rows


def fmt_client_paced(medians):
    return "%d of %d" % (sum(client_bound(m) for m in medians), len(medians))


def fmt_kernel_share(medians):
    """The median over the cells of the server's system share of its CPU time."""
    return "%d%%" % round(100 * median([m["system_share"] for m in medians]))


def setting_name(section, flags):
    return "%s `%s`" % (section, flags)


def client_paced_md(summary):
    """Per setting and target, how many cells the client paced (marked ◆)."""
    head, rows = setting_grid(list(summary.values()), "client_busy", setting_name, fmt_client_paced)
    if not rows:
        return []
    return ["Cells whose client was busy %d%% of the time or more (◆ below): there the one-thread "
            "load generator, not only the server, set the pace." % round(CLIENT_BOUND * 100), ""] + \
        table(head, rows)


def kernel_share_md(summary):
    """Per setting and target, the share of the server's CPU time spent in the
    kernel (median over the cells)."""
    head, rows = setting_grid(list(summary.values()), "system_share", setting_name, fmt_kernel_share)
    if not rows:
        return []
    return ["Share of each server's CPU time that was system time, the kernel working for it "
            "(the median over the cells of each setting; per cell, the median over the "
            "repetitions). Where that share is large and alike for two servers making the same "
            "system calls, only the rest, each server's own work, can set them apart, and their "
            "ratio per server-CPU-second stays near 1.00×.", ""] + table(head, rows)


def memory_md(mem, meta):
    if not mem:
        return ["## Bytes per key", "", "Not measured (MEM_KEYS=0).", ""]
    servers = []
    for m in mem:
        if m["server"] not in servers:
            servers.append(m["server"])
    datasets = [d for d in DATASETS if any(m["dataset"] == d for m in mem)]
    L = ["## Bytes per key", "",
         "Each server is started fresh for each data set (same flags as above); a pipelined "
         "loader (`bench/suite_report.py memory`) writes %s keys. Bytes per key = (loaded − "
         "baseline) / DBSIZE, of the process RSS (`VmRSS`, counts everything the process holds) "
         "and of `used_memory` from `INFO memory`. Residual RSS is measured after `FLUSHALL` "
         "followed by `MEMORY PURGE` where the server has it." % meta.get("mem_keys", "?"), ""]
    get = {(m["server"], m["dataset"]): m for m in mem}
    for measure, key in (("RSS", "rss_per_key"), ("used_memory", "used_per_key")):
        rows = []
        for d in datasets:
            row = [DATASET_LABELS[d]]
            for s in servers:
                m = get.get((s, d))
                row.append(fmt_bytes(m and m[key]))
            for s in servers:
                if s.startswith("kvik"):
                    for p in servers:
                        if not p.startswith("kvik"):
                            a, b = get.get((s, d)), get.get((p, d))
                            row.append(fmt_ratio(ratio(a and a[key], b and b[key])))
            rows.append(row)
        ratio_heads = ["%s / %s" % (label(s), label(p)) for s in servers if s.startswith("kvik")
                       for p in servers if not p.startswith("kvik")]
        L += ["Bytes per key, %s:" % measure, ""]
        L += table(["data set"] + [label(s) for s in servers] + ratio_heads, rows)
    rows = []
    for m in mem:
        rows.append([label(m["server"]), DATASET_LABELS.get(m["dataset"], m["dataset"]), fmt_int(int(m["dbsize"])),
                     fmt_int(int(m["rss_baseline"])), fmt_int(int(m["rss_loaded"])),
                     fmt_int(int(m["rss_residual"])),
                     "yes" if m["memory_purge"] == "yes" else "no (not available)",
                     m["load_seconds"]])
    L += ["Baseline and residual RSS (bytes):", ""]
    L += table(["server", "data set", "DBSIZE", "RSS baseline", "RSS loaded", "RSS residual",
                "MEMORY PURGE", "load seconds"], rows,
               ["---", "---", "---:", "---:", "---:", "---:", "---", "---:"])
    return L


# ---------------------------------------------------------------- SVG charts

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]


def bar_chart(title, groups, series, unit, reference=None, caption=None, fmt="%.2f"):
    """Horizontal grouped bars as an SVG document.

    groups: [(group label, {series name: value or None})]; series: names in
    legend order; unit: appended to each value (e.g. `×`); reference: an x value
    drawn as a dashed line (1.0 for ratios); caption: the line under the plot.
    """
    bar, gap, left, right, top = 12, 8, 260, 80, 40 + 16 * len(series)
    plot_w = 520
    values = [v for _, vals in groups for v in vals.values() if v is not None]
    top_value = max(values + [reference or 0, 1e-9]) * 1.1
    height = top + sum(bar * len(series) + gap for _ in groups) + 30
    width = left + plot_w + right
    x = lambda v: left + plot_w * v / top_value  # noqa: E731
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="18" font-size="14" font-weight="bold">%s</text>' % escape(title)]
    for i, s in enumerate(series):
        y = 30 + 16 * i
        out.append('<rect x="10" y="%d" width="10" height="10" fill="%s"/>' % (y, COLORS[i % len(COLORS)]))
        out.append('<text x="26" y="%d">%s</text>' % (y + 9, escape(s)))
    y = top
    for name, vals in groups:
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                   % (left - 6, y + bar * len(series) / 2 + 4, escape(name)))
        for i, s in enumerate(series):
            v = vals.get(s)
            if v is not None:
                text = escape((fmt % v) + unit)
                out.append('<rect class="bar" x="%d" y="%d" width="%.1f" height="%d" fill="%s">'
                           '<title>%s: %s</title></rect>'
                           % (left, y, x(v) - left, bar - 1, COLORS[i % len(COLORS)], escape(s), text))
                out.append('<text x="%.1f" y="%d">%s</text>' % (x(v) + 3, y + bar - 2, text))
            y += bar
        y += gap
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top - 4, left, y))
    if reference is not None:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-dasharray="4,3"/>'
                   % (x(reference), top - 4, x(reference), y))
    out.append('<text x="%d" y="%d">%s</text>' % (left, y + 18, escape(caption or unit)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def ratio_chart(ratios, peer):
    rows = [r for r in ratios if r["peer"] == peer]
    if not rows:
        return None
    series = []
    groups = []
    for r in rows:
        name = label(r["kvik"])
        if name not in series:
            series.append(name)
        g = "%s%s %s" % (r["flags"], " d=%s" % r["size"] if r["size"] not in ("", "-") else "", r["test"])
        entry = next((e for e in groups if e[0] == g), None)
        if entry is None:
            entry = (g, {})
            groups.append(entry)
        entry[1][name] = r["ratio"]
    return bar_chart("kvik / %s, requests/s (median of the ratios per repetition)" % label(peer), groups, series, "×",
                     reference=1.0, caption="kvik's requests/s over %s's; dashed line: 1.00× (equal)" % label(peer))


def memory_chart(mem):
    if not mem:
        return None
    series, groups = [], []
    for m in mem:
        s = label(m["server"])
        if s not in series:
            series.append(s)
        g = DATASET_LABELS.get(m["dataset"], m["dataset"])
        entry = next((e for e in groups if e[0] == g), None)
        if entry is None:
            entry = (g, {})
            groups.append(entry)
        entry[1][s] = m["rss_per_key"]
    return bar_chart("Bytes per key (RSS growth / DBSIZE)", groups, series, " B", fmt="%.0f",
                     caption="bytes per key, lower is better")


# ---------------------------------------------------------------- report


def report(work, out_dir):
    meta = read_meta(work)
    clk = int(meta.get("clk_tck", "100") or 100)
    runs = load_results(work, clk)
    summary = summarize(runs)
    ratios = ratio_table(summary)
    mem = memory_rows(work)
    os.makedirs(out_dir, exist_ok=True)

    with open(os.path.join(out_dir, "suite_runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "cell", "flags", "value_bytes", "test", "title", "target", "repeat",
                    "position", "requests_per_test", "rps", "server_cpu_seconds",
                    "requests_per_server_cpu_second", "client_cpu_seconds", "wall_seconds",
                    "server_system_seconds"])
        for r in runs:
            w.writerow([r["section"], r["cell"], r["flags"], r["size"], r["test"], r["title"], r["target"],
                        r["repeat"], r["position"], r["n"], "" if r["rps"] is None else "%.2f" % r["rps"],
                        "" if r["cpu_seconds"] is None else "%.2f" % r["cpu_seconds"],
                        "" if r["per_cpu"] is None else "%.0f" % r["per_cpu"],
                        "%.3f" % (int(r["client_ms"]) / 1000) if r["client_ms"].isdigit() else "",
                        "%.3f" % (int(r["wall_ms"]) / 1000) if r["wall_ms"].isdigit() else "",
                        "" if r["system_seconds"] is None else "%.2f" % r["system_seconds"]])
    with open(os.path.join(out_dir, "suite_memory.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(MEMORY_COLUMNS + ["rss_bytes_per_key", "used_memory_bytes_per_key"])
        for m in mem:
            w.writerow([m[c] for c in MEMORY_COLUMNS] + [
                "" if m["rss_per_key"] is None else "%.1f" % m["rss_per_key"],
                "" if m["used_per_key"] is None else "%.1f" % m["used_per_key"]])
    with open(os.path.join(out_dir, "suite.json"), "w") as f:
        json.dump({"meta": meta, "medians": list(summary.values()), "ratios": ratios,
                   "memory": mem}, f, indent=1)
        f.write("\n")

    charts = []
    for peer in PEERS:
        svg = ratio_chart(ratios, peer)
        if svg:
            charts.append(("kvik / %s" % label(peer), "suite_vs_%s.svg" % peer, svg))
    svg = memory_chart(mem)
    if svg:
        charts.append(("bytes per key", "suite_bytes_per_key.svg", svg))
    for _, name, svg in charts:
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(svg)

    L = md_header(meta)
    L += summary_md(ratios)
    L += client_paced_md(summary)
    L += kernel_share_md(summary)
    if charts:
        L += ["Charts: " + ", ".join("[%s](%s)" % (t, n) for t, n, _ in charts) + ".", ""]
    L += throughput_md(summary, meta)
    L += memory_md(mem, meta)
    failures = meta.get("failures", "").strip()
    notes = [n.strip() for n in meta.get("notes", "").split("|") if n.strip()]
    if failures:
        notes.insert(0, "runs that failed: %s" % failures)
    if notes:
        L += ["## Notes", ""] + ["- " + n for n in notes] + [""]
    with open(os.path.join(out_dir, "suite.md"), "w") as f:
        f.write("\n".join(L).rstrip("\n") + "\n")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd = argv[1]
    if cmd == "cputicks" and len(argv) == 3:
        print(cpu_ticks(int(argv[2])))
    elif cmd == "prepare" and len(argv) == 5:
        prepare(int(argv[2]), int(argv[3]), int(argv[4]))
    elif cmd == "memory" and len(argv) == 8:
        measure_memory(argv[2], int(argv[3]), int(argv[4]), int(argv[5]), argv[6], argv[7])
    elif cmd == "report" and len(argv) == 4:
        report(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
