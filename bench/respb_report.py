#!/usr/bin/env python3
"""Reports for bench/respb.sh and bench/mux.sh (Python 3 standard library only).

Both scripts write one line per benchmark run to WORK/runs.tsv:

  respb.sh: server  protocol  pipeline  repeat  format  file  client_ms  wall_ms
  mux.sh:   config  repeat  file  rss_idle  rss_peak_sampled  vm_hwm

where `format` is `json` (kvik-benchmark --json: one object per test) or
`csv` (redis-benchmark --csv), the RSS figures are bytes, and client_ms is
the benchmark client's CPU time over the run (empty when unknown). The values in
WORK/meta (key=value lines) describe the machine and the command.

Subcommands:
  rss PID                       print "VmRSS VmHWM" of PID in bytes (0 0 if gone)
  respb WORK OUT_MD OUT_JSON    RESP vs RESPB table (medians, ratios) + raw JSON
  mux WORK OUT_MD OUT_JSON      mux vs many connections table + raw JSON
"""

import csv
import json
import os
import statistics
import sys

from bench_io import read_meta, read_runs


def parse_results(path, fmt):
    """{test name: {"rps": float, "p50": float|None, "p99": float|None}} of one run."""
    out = {}
    if not os.path.exists(path):
        return out
    if fmt == "json":
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                o = json.loads(line)
                lat = o.get("latency_ms", {})
                out[o["name"]] = {
                    "rps": float(o["rps"]),
                    "p50": lat.get("p50"),
                    "p99": lat.get("p99"),
                    "errors": int(o.get("errors", 0)),
                    "connections": o.get("connections"),
                    "clients": o.get("clients"),
                }
    else:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                out[row["test"]] = {
                    "rps": float(row["rps"]),
                    "p50": float(row["p50_latency_ms"]) if row.get("p50_latency_ms") else None,
                    "p99": float(row["p99_latency_ms"]) if row.get("p99_latency_ms") else None,
                    "errors": 0,
                }
    return out


def rss(pid):
    vals = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open("/proc/%s/status" % pid) as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in vals:
                    vals[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    print(vals["VmRSS"], vals["VmHWM"])


# A median whose runs kept the one-thread client on a CPU this much of their
# wall time (median) is marked ◆: the client, not only the server, set the
# pace (bench/suite_report.py marks its cells the same way).
CLIENT_BOUND = 0.9


def client_busy(run):
    """The client's CPU time over the run's wall time, or None when unknown."""
    client, wall = run.get("client_ms", ""), run.get("wall_ms", "")
    if client.isdigit() and wall.isdigit() and int(wall) > 0:
        return int(client) / int(wall)
    return None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt_int(v):
    return "–" if v is None else "{:,.0f}".format(v)


def fmt_ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    return "{:.2f}×".format(a / b)


def fmt_ms(v):
    return "–" if v is None else "{:.3f}".format(v)


def fmt_mib(v):
    return "–" if v is None else "{:.1f}".format(v / 1048576)


def kvik_threads_text(meta):
    """`--threads N`, or the list when the run had one kvik server per thread count."""
    counts = [k[len("kvik-t"):] for k in meta.get("kvik_servers", "").split()]
    if len(counts) > 1:
        return "one server per `--threads` value: %s" % ", ".join(counts)
    return "`--threads %s`" % (counts[0] if counts else meta.get("threads", "?"))


def header(meta, title):
    lines = ["# " + title, ""]
    if meta.get("label"):
        lines += ["**%s**" % meta["label"], ""]
    lines += [
        "- Date: %s" % meta.get("date", "?"),
        "- Machine: `%s` (lscpu model name), %s cores, %s; load average at start: %s"
        % (meta.get("cpu", "?"), meta.get("cores", "?"), meta.get("memtotal", "?"), meta.get("loadavg", "?")),
        "- kvik-server: %s, %s build, %s"
        % (meta.get("kvik_version", "?"), meta.get("profile", "?"), kvik_threads_text(meta)),
        "- kvik-benchmark: %s" % meta.get("kvik_bench_version", "?"),
    ]
    for peer in meta.get("peers", "").split():
        lines.append("- %s-server: %s, `--save '' --appendonly no`" % (peer, meta.get(peer + "_version", "?")))
    lines.append("- Command: `%s`" % meta.get("command", "?"))
    if meta.get("pin") == "1":
        lines.append("- CPUs: kvik-benchmark on CPU %s; each server with one worker thread (kvik 1 thread, "
                     "redis, valkey) on CPU %s (`taskset`); kvik with more threads may use every CPU"
                     % (meta.get("client_cpu", "?"), meta.get("server_cpu", "?")))
    return lines


def write_md(path, lines):
    """Join lines, with never more than one blank line in a row."""
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n")


def footer(meta):
    lines = []
    failures = meta.get("failures", "").strip()
    notes = [n for n in meta.get("notes", "").split("|") if n.strip()]
    if failures or notes:
        lines += ["", "## Notes", ""]
        if failures:
            lines.append("- failed runs (left out of the medians): " + failures)
        lines += ["- " + n for n in notes]
    return lines


def kvik_servers(meta, med):
    """The kvik servers of a run (kvik-tN, by thread count), as measured."""
    named = [k for k in meta.get("kvik_servers", "").split() if any(m[0] == k for m in med)]
    return sorted(named, key=lambda k: int(k[len("kvik-t"):]))


def kvik_label(kvik):
    threads = int(kvik[len("kvik-t"):])
    return "kvik %d thread%s" % (threads, "" if threads == 1 else "s")


def paced(busy, key):
    """" ◆" after a median whose runs the client paced (see CLIENT_BOUND)."""
    b = busy.get(key)
    return " ◆" if b is not None and b >= CLIENT_BOUND else ""


def respb_table(kvik, test, pipelines, peers, med, busy):
    """One test's table for one kvik server: its two protocols, then each peer."""
    lines = ["### %s, %s" % (test, kvik_label(kvik)), ""]
    head = "| `-P` | kvik RESP | kvik RESPB | RESPB/RESP |"
    rule = "|---:|---:|---:|---:|"
    for peer in peers:
        head += " %s RESP | kvik RESP / %s | kvik RESPB / %s |" % (peer, peer, peer)
        rule += "---:|---:|---:|"
    lines += [head, rule]
    for p in pipelines:
        resp = med.get((kvik, "resp", p, test))
        respb = med.get((kvik, "respb", p, test))
        row = "| %s | %s%s | %s%s | %s |" % (
            p, fmt_int(resp), paced(busy, (kvik, "resp", p)), fmt_int(respb), paced(busy, (kvik, "respb", p)),
            fmt_ratio(respb, resp))
        for peer in peers:
            ref = med.get((peer, "resp", p, test))
            row += " %s%s | %s | %s |" % (fmt_int(ref), paced(busy, (peer, "resp", p)), fmt_ratio(resp, ref),
                                          fmt_ratio(respb, ref))
        lines.append(row)
    return lines + [""]


def respb_summary(kviks, pipelines, peers, med):
    """GET over RESPB on each kvik against valkey over RESP: the proposal's comparison."""
    if "valkey" not in peers or not kviks:
        return []
    lines = ["## GET: kvik RESPB / valkey RESP, by kvik thread count", ""]
    lines += ["| `-P` | %s |" % " | ".join(kvik_label(k) for k in kviks),
              "|---:|%s" % ("---:|" * len(kviks))]
    for p in pipelines:
        ref = med.get(("valkey", "resp", p, "GET"))
        lines.append("| %s | %s |" % (p, " | ".join(fmt_ratio(med.get((k, "respb", p, "GET")), ref) for k in kviks)))
    return lines + [""]


def respb_report(work, out_md, out_json):
    meta = read_meta(work)
    runs = read_runs(work, ["server", "protocol", "pipeline", "repeat", "format", "file", "client_ms", "wall_ms"])
    pipelines = [p for p in meta.get("pipelines", "").split() if p]
    tests = [t.upper() for t in meta.get("tests", "set,get").split(",")]
    raw = []
    # (server, protocol, pipeline, test) -> [rps...]
    cells = {}
    # (server, protocol, pipeline) -> [client busy fraction...], one per run (a run covers every test)
    busy_runs = {}
    for r in runs:
        results = parse_results(os.path.join(work, r["file"]), r["format"])
        busy_runs.setdefault((r["server"], r["protocol"], r["pipeline"]), []).append(client_busy(r))
        for test, v in results.items():
            raw.append(dict(server=r["server"], protocol=r["protocol"], pipeline=int(r["pipeline"]),
                            repeat=int(r["repeat"]), test=test, client_busy=client_busy(r), **v))
            cells.setdefault((r["server"], r["protocol"], r["pipeline"], test), []).append(v["rps"])
    med = {k: median(v) for k, v in cells.items()}
    busy = {k: median(v) for k, v in busy_runs.items()}
    peers = [p for p in meta.get("peers", "").split() if any(k[0] == p for k in med)]

    lines = header(meta, "RESP vs RESPB on kvik-server, redis-server and valkey-server for reference")
    lines += [
        "- Each cell: `kvik-benchmark -h 127.0.0.1 -p PORT -t %s -n %s -r 100000 -c %s -P <P> --json`, "
        "with `--respb` for RESPB. Per repeat and pipeline depth kvik's two protocols run back to back, "
        "their order swapped every repeat (RESP first in odd repeats), then the reference servers over "
        "RESP with the same command. Figures are the median of %s repeats; requests/s."
        % (meta.get("tests", "?"), meta.get("n", "?"), meta.get("clients", "?"), meta.get("repeats", "?")),
        "- All servers run side by side for the whole run, only one under load at a time, and one "
        "client drives them all, so the ratios compare servers and protocols rather than benchmark "
        "tools. RESPB here means the RESPB/1 frames of `spec/respb.md` after the `D3 C1` handshake, "
        "no mux.",
        "- Benchmark client threads: %s. A median marked ◆ comes from runs whose client was on a CPU "
        "%d%% of their wall time or more (median): there the client, not only the server, set the pace."
        % (meta.get("bench_threads", "?"), round(CLIENT_BOUND * 100)),
        "",
    ]
    if "valkey" in peers:
        lines += [
            "The RESPB proposal measures RESPB on its Valkey fork against Valkey's own RESP path: "
            "1.04× at `-P 1` and 2.16–2.26× at `-P 100`–`200` for GET. The same comparison here is "
            "the column kvik RESPB / valkey, gathered for GET in the last table.",
            "",
        ]
    kviks = kvik_servers(meta, med)
    for test in tests:
        lines += ["## %s (requests/s, median of %s)" % (test, meta.get("repeats", "?")), ""]
        for kvik in kviks:
            lines += respb_table(kvik, test, pipelines, peers, med, busy)
    lines += respb_summary(kviks, pipelines, peers, med)
    lines += footer(meta)

    wire = os.path.join(work, "wire_sizes.md")
    if os.path.exists(wire):
        with open(wire) as f:
            lines += ["", "## Wire sizes", "", f.read().rstrip("\n")]

    write_md(out_md, lines)
    medians = [dict(server=k[0], protocol=k[1], pipeline=int(k[2]), test=k[3], rps=v, runs=len(cells[k]))
               for k, v in sorted(med.items())]
    with open(out_json, "w") as f:
        json.dump({"meta": meta, "medians": medians, "runs": raw}, f, indent=1, sort_keys=True)
        f.write("\n")


MUX_CONFIGS = [
    ("resp", "RESP, one connection per client"),
    ("respb", "RESPB, one connection per client"),
    ("mux", "RESPB mux"),
]


def mux_report(work, out_md, out_json):
    meta = read_meta(work)
    runs = read_runs(work, ["config", "repeat", "file", "rss_idle", "rss_peak", "vm_hwm"])
    tests = [t.upper() for t in meta.get("tests", "set,get").split(",")]
    raw = []
    per = {}  # (config, test) -> {"rps": [], "p99": []}
    mem = {}  # config -> {"idle": [], "peak": [], "hwm": []}
    conns = {}
    for r in runs:
        results = parse_results(os.path.join(work, r["file"]), "json")
        m = mem.setdefault(r["config"], {"idle": [], "peak": [], "hwm": []})
        if results:
            m["idle"].append(int(r["rss_idle"]))
            m["peak"].append(int(r["rss_peak"]))
            m["hwm"].append(int(r["vm_hwm"]))
        for test, v in results.items():
            raw.append(dict(config=r["config"], repeat=int(r["repeat"]), test=test,
                            rss_idle=int(r["rss_idle"]), rss_peak_sampled=int(r["rss_peak"]),
                            vm_hwm=int(r["vm_hwm"]), **v))
            cell = per.setdefault((r["config"], test), {"rps": [], "p99": []})
            cell["rps"].append(v["rps"])
            cell["p99"].append(v["p99"])
            conns[r["config"]] = v.get("connections")

    mux_n = meta.get("mux", "?")
    names = {"resp": "RESP, %s connections" % meta.get("clients", "?"),
             "respb": "RESPB, %s connections" % meta.get("clients", "?"),
             "mux": "RESPB `--mux %s`, %s connections" % (mux_n, conns.get("mux", "?"))}
    lines = header(meta, "%s logical clients: RESPB mux vs one TCP connection each" % meta.get("clients", "?"))
    lines += [
        "- Each run: a fresh kvik-server, then `kvik-benchmark -h 127.0.0.1 -p PORT -t %s -n %s "
        "-r 100000 -c %s -P %s --json` plus `--respb` (RESPB, a connection per client) or "
        "`--mux %s` (RESPB, %s channels per connection; `-c` counts logical clients, so the "
        "load is the same). One task per connection writes the pending batches of all its channels "
        "in one write and routes the replies by mux id, so a mux connection carries up to %s "
        "requests per round trip even at `-P 1`: fewer system calls and wake-ups per request, which "
        "is what mux is for. Configurations alternate run by run, order rotated every repeat; "
        "figures are the median of %s repeats."
        % (meta.get("tests", "?"), meta.get("n", "?"), meta.get("clients", "?"), meta.get("pipeline", "?"),
           mux_n, mux_n, mux_n, meta.get("repeats", "?")),
        "- Server memory from `/proc/<pid>/status` of the server: `VmRSS` before the run (idle, "
        "after startup), the highest `VmRSS` sampled every 0.1 s during the run, and `VmHWM` "
        "(the kernel's peak RSS of the process) after the run. The server is new for each run, "
        "so `VmHWM` is that run's peak.",
        "- Benchmark client threads: %s." % meta.get("bench_threads", "?"),
        "",
    ]
    for test in tests:
        lines += ["## %s" % test, "",
                  "| configuration | requests/s | p99 ms | rps vs RESP |",
                  "|---|---:|---:|---:|"]
        base = median(per.get(("resp", test), {}).get("rps", []))
        for cfg, _ in MUX_CONFIGS:
            cell = per.get((cfg, test), {"rps": [], "p99": []})
            rps = median(cell["rps"])
            lines.append("| %s | %s | %s | %s |" % (names[cfg], fmt_int(rps), fmt_ms(median(cell["p99"])),
                                                   fmt_ratio(rps, base)))
        lines.append("")
    lines += ["## Server memory (MiB, median of %s)" % meta.get("repeats", "?"), "",
              "| configuration | RSS idle | RSS peak (sampled) | VmHWM | VmHWM − idle |",
              "|---|---:|---:|---:|---:|"]
    for cfg, _ in MUX_CONFIGS:
        m = mem.get(cfg, {"idle": [], "peak": [], "hwm": []})
        idle, peak, hwm = median(m["idle"]), median(m["peak"]), median(m["hwm"])
        growth = None if idle is None or hwm is None else hwm - idle
        lines.append("| %s | %s | %s | %s | %s |" % (names[cfg], fmt_mib(idle), fmt_mib(peak), fmt_mib(hwm),
                                                     fmt_mib(growth)))
    lines += footer(meta)
    write_md(out_md, lines)
    medians = []
    for (cfg, test), cell in sorted(per.items()):
        medians.append(dict(config=cfg, test=test, rps=median(cell["rps"]), p99_ms=median(cell["p99"]),
                            runs=len(cell["rps"])))
    memory = {cfg: {k: median(v) for k, v in m.items()} for cfg, m in mem.items()}
    with open(out_json, "w") as f:
        json.dump({"meta": meta, "medians": medians, "memory": memory, "runs": raw}, f, indent=1,
                  sort_keys=True)
        f.write("\n")


def main(argv):
    if len(argv) == 3 and argv[1] == "rss":
        rss(argv[2])
    elif len(argv) == 5 and argv[1] == "respb":
        respb_report(argv[2], argv[3], argv[4])
    elif len(argv) == 5 and argv[1] == "mux":
        mux_report(argv[2], argv[3], argv[4])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
