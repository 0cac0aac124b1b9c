#!/usr/bin/env python3
"""The "How kvik compares" section of docs/benchmarks.md, built from a suite run.

Reads suite.json, which bench/suite.sh writes next to suite.md with the same
medians, and prints a short Markdown section: date and machine of the run,
kvik's ratio to each peer per client setting (geometric mean over the tests
and value sizes, with the lowest and highest ratio), and bytes per key.

  bench/suite_readme.py [--results DIR]                   print the section
  bench/suite_readme.py [--results DIR] --update docs/benchmarks.md
        replace the text between <!-- compare:start --> and <!-- compare:end -->
        in that file (both markers must be there, once each, in that order)

Python 3 standard library only.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite_report import (  # noqa: E402
    CLIENT_BOUND, DATASET_LABELS, client_bound, fmt_bytes, fmt_geomean_below, fmt_kernel_share, fmt_ratio,
    geomean, label, setting_grid, table, targets_of)

START = "<!-- compare:start -->"
END = "<!-- compare:end -->"


def setting_label(section, flags):
    return {"throughput": "`%s`", "collections": "CPU-heavy (ZRANGEBYSCORE, LPOS) `%s`",
            "ping": "PING `%s`"}.get(section, "`%s`") % flags


def setting_rows(ratios, key="ratio"):
    """[(setting label, {(kvik, peer): [figures `key`]})] in run order, of the
    ratios that have that figure."""
    groups = []
    for r in ratios:
        if r.get(key) is None:
            continue
        name = setting_label(r["section"], r["flags"])
        entry = next((g for g in groups if g[0] == name), None)
        if entry is None:
            entry = (name, {})
            groups.append(entry)
        entry[1].setdefault((r["kvik"], r["peer"]), []).append(r[key])
    return groups


def cell(values):
    g = geomean(values)
    if g is None:
        return "–"
    if len(values) == 1:
        return fmt_ratio(g)
    return "%s (%s–%s)" % (fmt_ratio(g), fmt_ratio(min(values)), fmt_ratio(max(values)))


def ratio_rows(groups, pairs, fmt):
    """A Markdown table, a setting per row and a (kvik, peer) pair per column."""
    L = ["| setting | " + " | ".join("%s ÷ %s" % (label(k), label(p)) for k, p in pairs) + " |",
         "|---|" + "---:|" * len(pairs)]
    for name, g in groups:
        L.append("| %s | %s |" % (name, " | ".join(fmt(g.get(p, [])) for p in pairs)))
    return L + [""]


def client_paced(medians):
    """One sentence: per target, the cells whose one-thread client was busy
    CLIENT_BOUND of the run or more, where the client set the pace."""
    measured = [m for m in medians if m.get("client_busy") is not None]
    if not measured:
        return []
    targets = targets_of({(m["cell"], m["test"], m["target"]): m for m in measured})
    counts = []
    for t in targets:
        mine = [m for m in measured if m["target"] == t]
        counts.append("%s %d of %d" % (label(t), sum(client_bound(m) for m in mine), len(mine)))
    return ["Cells where the load generator (one thread, on the same cores) was busy %d%% of the "
            "run or more, so that it set the pace as much as the server: %s." %
            (round(CLIENT_BOUND * 100), ", ".join(counts)), ""]


def kernel_share(medians):
    """A table: per setting and server, the share of the server's CPU time
    that was system time (median over the cells)."""
    head, rows = setting_grid([m for m in medians if "+" not in m["target"]], "system_share",
                              setting_label, fmt_kernel_share)
    if not rows:
        return []
    return introduced("Share of each server's CPU time spent in the kernel (system time; median over the "
                      "tests of the setting). Where it is large and alike, as over loopback with one "
                      "request per round trip, requests per server-CPU-second can differ only by the "
                      "servers' own, smaller, share of the work:", table(head, rows))


def introduced(sentence, lines):
    """`lines` (a table) after the sentence that introduces it and a blank line."""
    return [sentence, ""] + lines


def render(data):
    meta = data.get("meta", {})
    L = [START, "", "### How kvik compares", ""]
    L.append("Measured by `make bench` on %s, on `%s` (%s cores, %s), %s build of %s; "
             "%s repetitions, the servers alternating within each repetition and each ratio "
             "the median of the ratios within a repetition, "
             "clients on the same machine over loopback%s. Full tables, per-CPU-second figures and "
             "charts: [bench/results/suite.md](../bench/results/suite.md)."
             % (meta.get("date", "?"), meta.get("cpu", "?"), meta.get("cores", "?"),
                meta.get("memtotal", "?"), meta.get("profile", "?"), meta.get("kvik_version", "?"),
                meta.get("repeats", "?"),
                " (the client on one CPU, each one-thread server on the other)" if meta.get("pin") == "1" else ""))
    L.append("")
    groups = setting_rows(data.get("ratios", []))
    pairs = []
    for _, g in groups:
        for p in g:
            if p not in pairs:
                pairs.append(p)
    if groups:
        L += introduced("Throughput, kvik ÷ peer (geometric mean over the tests of the setting, "
                        "lowest–highest in brackets; above 1.00× kvik is faster):",
                        ratio_rows(groups, pairs, cell))
        L += client_paced(data.get("medians", []))
    per_cpu = setting_rows(data.get("ratios", []), "per_cpu_ratio")
    if per_cpu:
        L += introduced("Requests per server-CPU-second (the server's user and system time), kvik ÷ peer "
                        "(geometric mean, and the tests where kvik is below the peer):",
                        ratio_rows(per_cpu, pairs, fmt_geomean_below))
    L += kernel_share(data.get("medians", []))
    mem = data.get("memory", [])
    if mem:
        servers = []
        for m in mem:
            if m["server"] not in servers:
                servers.append(m["server"])
        get = {(m["server"], m["dataset"]): m for m in mem}
        L.append("Bytes per key (RSS growth ÷ DBSIZE, %s keys; `used_memory` in suite.md):"
                 % meta.get("mem_keys", "?"))
        L.append("")
        L.append("| data set | " + " | ".join(label(s) for s in servers) + " |")
        L.append("|---|" + "---:|" * len(servers))
        for d, text in DATASET_LABELS.items():
            if any((s, d) in get for s in servers):
                L.append("| %s | %s |" % (text, " | ".join(
                    fmt_bytes(get[(s, d)]["rss_per_key"]) if (s, d) in get else "–" for s in servers)))
        L.append("")
    if meta.get("label"):
        L += ["Run label: %s" % meta["label"], ""]
    L.append(END)
    return "\n".join(L) + "\n"


def update(path, section):
    """Replace START…END (inclusive) in PATH with SECTION; an error when the markers are not right."""
    with open(path) as f:
        text = f.read()
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise SystemExit("%s: needs exactly one %s followed by one %s" % (path, START, END))
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = head + section.rstrip("\n") + tail
    if new != text:
        with open(path, "w") as f:
            f.write(new)
    return new != text


def main(argv):
    ap = argparse.ArgumentParser(description="README comparison section from bench/results/suite.json")
    ap.add_argument("--results", default="bench/results", help="directory holding suite.json")
    ap.add_argument("--update", metavar="README", help="rewrite the marked section of this file")
    args = ap.parse_args(argv)
    path = os.path.join(args.results, "suite.json")
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit("cannot read %s (run `make bench` first): %s" % (path, e))
    section = render(data)
    if args.update:
        changed = update(args.update, section)
        print("%s %s" % ("updated" if changed else "unchanged:", args.update), file=sys.stderr)
    else:
        sys.stdout.write(section)


if __name__ == "__main__":
    main(sys.argv[1:])
