#!/usr/bin/env python3
"""Turn the criterion results of `cargo bench --bench protocol` into Markdown tables.

Usage: protocol_table.py BENCH_LOG CRITERION_DIR [CRITERION_DIR ...]

BENCH_LOG is the bench's standard output, whose `workload ...` lines give the
buffer sizes used to turn commands per second into bytes per second. Each
CRITERION_DIR is a copy of the `criterion` folder under the cargo target
directory from one run; with several, every figure is the median over the
runs of that benchmark's mean time per iteration.
"""

import statistics

import json
import pathlib
import re
import sys


def load(root):
    """Map (group, function, parameter) to mean nanoseconds per iteration."""
    found = {}
    for bench in pathlib.Path(root).rglob("new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        key = (meta["group_id"], meta["function_id"] or "", meta.get("value_str") or "")
        found[key] = est["mean"]["point_estimate"]
    return found


def sizes(log):
    out = {}
    pat = re.compile(r"workload (\w+): (\d+) commands, RESP (\d+) bytes, RESPB (\d+) bytes")
    for line in pathlib.Path(log).read_text().splitlines():
        m = pat.search(line)
        if m:
            out[m[1]] = (int(m[2]), int(m[3]), int(m[4]))
    return out


def main():
    workloads = sizes(sys.argv[1])
    runs = [load(d) for d in sys.argv[2:]]
    results = {k: statistics.median(r[k] for r in runs if k in r) for k in runs[0]}
    print("| workload | RESP bytes/cmd | RESPB bytes/cmd | RESP Mcmd/s | RESPB Mcmd/s | redis-protocol Mcmd/s "
          "| RESP MB/s | RESPB MB/s | redis-protocol MB/s | RESPB/RESP | RESP/peer |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (count, resp_len, respb_len) in workloads.items():
        group = f"request/{name}"
        rate = {f: count / (results[(group, f, "")] * 1e-9) for f in ("resp", "respb", "redis-protocol")}
        mbs = {
            "resp": rate["resp"] * resp_len / count / 1e6,
            "respb": rate["respb"] * respb_len / count / 1e6,
            "redis-protocol": rate["redis-protocol"] * resp_len / count / 1e6,
        }
        print(f"| {name} | {resp_len / count:.1f} | {respb_len / count:.1f} "
              f"| {rate['resp'] / 1e6:.2f} | {rate['respb'] / 1e6:.2f} | {rate['redis-protocol'] / 1e6:.2f} "
              f"| {mbs['resp']:.0f} | {mbs['respb']:.0f} | {mbs['redis-protocol']:.0f} "
              f"| {rate['respb'] / rate['resp']:.2f}× | {rate['resp'] / rate['redis-protocol']:.2f}× |")
    print()
    print("| reply workload | RESP2 Mreplies/s | RESP3 Mreplies/s | RESPB Mreplies/s | RESPB/RESP3 |")
    print("|---|---:|---:|---:|---:|")
    for name in ("bulk50", "integer", "array10"):
        group = f"reply/{name}"
        keys = {"resp2": (group, "resp", "resp2"), "resp3": (group, "resp", "resp3"), "respb": (group, "respb", "")}
        if not all(k in results for k in keys.values()):
            continue
        rate = {k: 1000 / (results[v] * 1e-9) for k, v in keys.items()}
        print(f"| {name} | {rate['resp2'] / 1e6:.2f} | {rate['resp3'] / 1e6:.2f} | {rate['respb'] / 1e6:.2f} "
              f"| {rate['respb'] / rate['resp3']:.2f}× |")


if __name__ == "__main__":
    main()
