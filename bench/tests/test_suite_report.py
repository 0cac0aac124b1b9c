"""Unit tests of bench/suite_report.py and bench/suite_readme.py on made-up runs.

Run by crates/bench/tests/scripts.rs (`cargo test -p kvik-bench`), or directly:
  python3 -m unittest discover -s bench/tests
"""

import csv
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import suite_readme  # noqa: E402
import suite_report  # noqa: E402

META = """date=2026-01-02 03:04 UTC
cpu=Test CPU <&>
cores=8
memtotal=16 GiB RAM
loadavg=0.1 0.1 0.1
kvik_version=kvik-server v=0.1.0
profile=release
repeats=3
mem_keys=1000
collections=4
coll_size=100
clk_tck=100
label=unit test
failures=
notes=
"""


class Work:
    """A WORK directory as bench/suite.sh leaves it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="suite-test-")
        self.n = 0
        with open(os.path.join(self.dir, "meta"), "w") as f:
            f.write(META)
        open(os.path.join(self.dir, "runs.tsv"), "w").close()

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run(self, target, rps, cell="c50_P16/d3", test="set", title="SET", section="throughput",
            flags="-c 50 -P 16", size="3", rep=1, ticks="50", n=1000, extra_rows=(), client_ms="500",
            wall_ms="1000", system_ticks="30"):
        self.n += 1
        name = "run-%d.out" % self.n
        rows = list(extra_rows) + [(title, rps)]
        if "+respb" in target:
            fmt = "json"
            with open(os.path.join(self.dir, name), "w") as f:
                for t, r in rows:
                    f.write(json.dumps({"name": t, "rps": r, "requests": n}) + "\n")
        else:
            fmt = "csv"
            with open(os.path.join(self.dir, name), "w") as f:
                f.write('"test","rps","avg_latency_ms"\n')
                for t, r in rows:
                    f.write('"%s","%s","0.1"\n' % (t, r))
        with open(os.path.join(self.dir, "runs.tsv"), "a") as f:
            f.write("\t".join([section, cell, flags, size, test, target, str(rep), "1", fmt, name,
                               str(n), ticks, client_ms, wall_ms, system_ticks]) + "\n")

    def memory(self, server, dataset, base, loaded, keys=1000, purge="yes"):
        path = os.path.join(self.dir, "memory.csv")
        new = not os.path.exists(path)
        with open(path, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(suite_report.MEMORY_COLUMNS)
            w.writerow([server, dataset, keys, keys, base, loaded, "", "", purge, base, "", "0.5"])


class SummaryTests(unittest.TestCase):
    def setUp(self):
        self.w = Work()

    def tearDown(self):
        self.w.close()

    def results(self):
        return suite_report.load_results(self.w.dir, 100)

    def test_median_of_repeats_and_noisy_flag(self):
        for rep, rps in enumerate([100.0, 110.0, 200.0], 1):
            self.w.run("redis", rps, rep=rep)
        for rep, rps in enumerate([100.0, 110.0, 120.0], 1):
            self.w.run("kvik-t1", rps, rep=rep)
        s = suite_report.summarize(self.results())
        self.assertEqual(s[("c50_P16/d3", "set", "redis")]["median"], 110.0)
        self.assertTrue(s[("c50_P16/d3", "set", "redis")]["noisy"])
        self.assertFalse(s[("c50_P16/d3", "set", "kvik-t1")]["noisy"])
        self.assertEqual(s[("c50_P16/d3", "set", "kvik-t1")]["runs"], 3)

    def test_last_row_is_the_test_and_cpu_counts_every_row(self):
        # -t lrange_100 first fills the list: the run's rps is the LRANGE row, and the
        # server's CPU covers both rows' requests.
        self.w.run("redis", 500.0, test="lrange_100", title="LRANGE_100 (first 100 elements)",
                   extra_rows=[("LPUSH (needed to benchmark LRANGE)", 9000.0)], ticks="20", n=1000)
        r = self.results()[0]
        self.assertEqual(r["rps"], 500.0)
        self.assertEqual(r["title"], "LRANGE_100 (first 100 elements)")
        self.assertAlmostEqual(r["cpu_seconds"], 0.2)
        self.assertAlmostEqual(r["per_cpu"], 2000 / 0.2)

    def test_unknown_cpu_and_infinite_rps_give_no_figure(self):
        self.w.run("redis", "inf", ticks="")
        r = self.results()[0]
        self.assertIsNone(r["rps"])
        self.assertIsNone(r["per_cpu"])
        self.assertIsNone(suite_report.summarize([r])[("c50_P16/d3", "set", "redis")]["median"])

    def test_ratios_pair_each_kvik_server_with_each_peer(self):
        for target, rps in [("kvik-t1", 200.0), ("kvik-t2", 300.0), ("kvik-t1+respb", 400.0),
                            ("redis", 100.0), ("valkey", 150.0)]:
            self.w.run(target, rps)
        ratios = suite_report.ratio_table(suite_report.summarize(self.results()))
        got = {(r["kvik"], r["peer"]): round(r["ratio"], 3) for r in ratios}
        self.assertEqual(got, {("kvik-t1", "redis"): 2.0, ("kvik-t1", "valkey"): 1.333,
                               ("kvik-t2", "redis"): 3.0, ("kvik-t2", "valkey"): 2.0})

    def test_a_ratio_compares_runs_of_the_same_repetition(self):
        # The machine slowed down in repetition 2 for redis' run and sped up in 3: the
        # medians alone (200 / 300) would say 0.67×, every repetition but one says 1.25×.
        for rep, (kvik, redis) in enumerate([(100.0, 80.0), (200.0, 300.0), (400.0, 320.0)], 1):
            self.w.run("kvik-t1", kvik, rep=rep)
            self.w.run("redis", redis, rep=rep)
        # A repetition only one of them ran in is left out.
        self.w.run("kvik-t1", 1.0, rep=4)
        ratios = suite_report.ratio_table(suite_report.summarize(self.results()))
        self.assertEqual([(r["kvik"], r["peer"], round(r["ratio"], 3)) for r in ratios],
                         [("kvik-t1", "redis", 1.25)])

    def test_a_per_cpu_ratio_compares_runs_of_the_same_repetition(self):
        # Requests per CPU-second of kvik over redis's: 2.0, 0.8 and 4.0 in the three
        # repetitions, so 2.0; the medians alone (20,000 / 10,000 and 25,000) would say 0.8.
        for rep, (kvik, redis) in enumerate([("50", "100"), ("50", "40"), ("25", "100")], 1):
            self.w.run("kvik-t1", 100.0, rep=rep, ticks=kvik)
            self.w.run("redis", 100.0, rep=rep, ticks=redis)
        ratios = suite_report.ratio_table(suite_report.summarize(self.results()))
        self.assertEqual([(r["kvik"], r["peer"], round(r["per_cpu_ratio"], 3)) for r in ratios],
                         [("kvik-t1", "redis", 2.0)])

    def test_a_ratio_without_cpu_time_has_no_per_cpu_ratio(self):
        self.w.run("kvik-t1", 200.0, ticks="")
        self.w.run("redis", 100.0)
        ratios = suite_report.ratio_table(suite_report.summarize(self.results()))
        self.assertEqual([(r["ratio"], r["per_cpu_ratio"]) for r in ratios], [(2.0, None)])
        md = suite_report.summary_md(ratios)
        self.assertIn("| throughput `-c 50 -P 16` | 2.00× |", md)
        self.assertFalse(any("server-CPU-second" in line for line in md))

    def test_client_busy_is_client_cpu_over_wall_time(self):
        self.w.run("redis", 100.0, client_ms="950", wall_ms="1000")
        self.w.run("valkey", 100.0, client_ms="", wall_ms="1000")
        self.w.run("kvik-t1", 100.0, client_ms="10", wall_ms="0")
        busy = [r["client_busy"] for r in self.results()]
        self.assertAlmostEqual(busy[0], 0.95)
        self.assertIsNone(busy[1])
        self.assertIsNone(busy[2])
        s = suite_report.summarize(self.results())
        self.assertTrue(suite_report.client_bound(s[("c50_P16/d3", "set", "redis")]))
        self.assertFalse(suite_report.client_bound(s[("c50_P16/d3", "set", "valkey")]))

    def test_kernel_share_is_system_over_all_cpu_time_median_per_cell(self):
        self.w.run("redis", 100.0, ticks="100", system_ticks="70", rep=1)
        self.w.run("redis", 100.0, ticks="100", system_ticks="80", rep=2)
        self.w.run("redis", 100.0, ticks="100", system_ticks="90", rep=3)
        self.w.run("kvik-t1", 100.0, ticks="0", system_ticks="0")
        self.w.run("valkey", 100.0, ticks="", system_ticks="")
        runs = self.results()
        self.assertAlmostEqual(runs[0]["system_share"], 0.7)
        self.assertIsNone(runs[3]["system_share"])
        self.assertIsNone(runs[4]["system_share"])
        s = suite_report.summarize(runs)
        self.assertAlmostEqual(s[("c50_P16/d3", "set", "redis")]["system_share"], 0.8)
        md = suite_report.kernel_share_md(s)
        self.assertIn("| setting | redis |", md)
        self.assertIn("| throughput `-c 50 -P 16` | 80% |", md)

    def test_kernel_share_is_left_out_without_system_time(self):
        self.w.run("redis", 100.0, system_ticks="")
        self.assertEqual(suite_report.kernel_share_md(suite_report.summarize(self.results())), [])

    def test_pinning_is_stated_only_for_pinned_runs(self):
        pinned = {"pin": "1", "client_cpu": "0", "server_cpu": "1", "repeats": "3"}
        text = "\n".join(suite_report.md_header(pinned))
        self.assertIn("load generator runs on CPU 0 and every server with one worker thread", text)
        self.assertIn("on CPU 1 (`taskset`)", text)
        self.assertIn("(the client on one CPU, each one-thread server on the other)",
                      suite_readme.render({"meta": pinned}))
        for unpinned in ({"pin": "0"}, {}):
            self.assertNotIn("taskset", "\n".join(suite_report.md_header(unpinned)))
            self.assertNotIn("one-thread server", suite_readme.render({"meta": unpinned}))

    def test_request_counts_are_stated_per_kind_of_run(self):
        meta = {"n": "150000", "n_slow": "25000", "n_pipe": "800000", "n_ping_pipe": "4000000"}
        text = "\n".join(suite_report.md_header(meta))
        self.assertIn("150,000 at `-c 50 -P 1`, 800,000 at `-P 16`", text)
        self.assertIn("4,000,000 for the ping section's `-P 1000` runs", text)
        # A run from before the ping section had a count of its own.
        del meta["n_ping_pipe"]
        self.assertIn("800,000 for the ping section's", "\n".join(suite_report.md_header(meta)))

    def test_geomean(self):
        self.assertAlmostEqual(suite_report.geomean([1.0, 4.0]), 2.0)
        self.assertIsNone(suite_report.geomean([None]))

    def test_cpu_ticks_of_this_process(self):
        self.assertGreaterEqual(suite_report.cpu_ticks(os.getpid()), 0)


class ReportTests(unittest.TestCase):
    def setUp(self):
        self.w = Work()
        self.out = tempfile.mkdtemp(prefix="suite-out-")
        for rep in (1, 2, 3):
            for target, rps in [("kvik-t1", 200.0), ("kvik-t2", 250.0), ("kvik-t2+respb", 500.0),
                                ("redis", 100.0), ("valkey", 125.0), ("valkey-io2", 100.0)]:
                # kvik-t1's client is busy 95% of each run: its cells get ◆.
                self.w.run(target, rps * rep if target == "redis" else rps, rep=rep,
                           client_ms="950" if target == "kvik-t1" else "500")
                self.w.run(target, rps / 2, cell="lpos", test="LPOS", title="LPOS list:__rand_int__ e99",
                           section="collections", flags="-c 16 -P 16", size="-", rep=rep)
        for server, per_key in [("kvik-t1", 50), ("redis", 100), ("valkey", 80)]:
            self.w.memory(server, "str3", 1_000_000, 1_000_000 + per_key * 1000)
        self.w.memory("kvik-t1", "hash3", 1_000_000, 1_300_000, purge="no")
        suite_report.report(self.w.dir, self.out)

    def tearDown(self):
        self.w.close()
        shutil.rmtree(self.out, ignore_errors=True)

    def read(self, name):
        with open(os.path.join(self.out, name)) as f:
            return f.read()

    def test_markdown_has_method_tables_ratios_and_memory(self):
        md = self.read("suite.md")
        self.assertTrue(md.startswith("# kvik vs redis-server vs valkey-server"))
        self.assertIn("**unit test**", md)
        self.assertIn("Test CPU <&>", md)
        self.assertIn("## Method", md)
        # redis ran 100, 200, 300: median 200, max/min 3 → flagged; kvik-t1/redis = 1.00×.
        self.assertIn("| SET | 200 ◆ | 250 | 500 | 200 ⚠ | 125 | 100 |", md)
        self.assertIn("| throughput `-c 50 -P 16` | 1 of 1 | 0 of 1 | 0 of 1 | 0 of 1 | 0 of 1 | 0 of 1 |", md)
        self.assertIn("| collections `-c 16 -P 16` | 0 of 1 | 0 of 1 |", md)
        self.assertIn("| SET | 1.00× | 1.60× | 2.00× | 1.25× | 2.00× | 2.50× |", md)
        self.assertIn("### `LPOS list:__rand_int__ e99` at `-c 16 -P 16`", md)
        self.assertIn("Requests per server-CPU-second (median):", md)
        self.assertIn("| SET | 2,000 | 2,000 | 2,000 | 2,000 | 2,000 | 2,000 |", md)
        # Every run took the same CPU time for its requests: 1.00× per CPU-second, and
        # the summary counts no cell below.
        self.assertIn("Ratios per server-CPU-second:", md)
        self.assertIn("| SET | 1.00× | 1.00× | 1.00× | 1.00× | 1.00× | 1.00× |", md)
        self.assertIn("| throughput `-c 50 -P 16` | 1.00× (0 of 1 below) |", md)
        # Every run's server spent 30 of its 50 ticks in the kernel.
        self.assertIn("| throughput `-c 50 -P 16` | 60% | 60% | 60% | 60% | 60% | 60% |", md)
        self.assertIn("| SET, 3-byte values | 50.0 | 100.0 | 80.0 | 0.50× | 0.62× |", md)
        self.assertIn("no (not available)", md)

    def test_csv_has_every_run(self):
        rows = list(csv.DictReader(io.StringIO(self.read("suite_runs.csv"))))
        self.assertEqual(len(rows), 3 * 6 * 2)
        self.assertEqual({r["target"] for r in rows},
                         {"kvik-t1", "kvik-t2", "kvik-t2+respb", "redis", "valkey", "valkey-io2"})
        self.assertTrue(all(float(r["rps"]) > 0 for r in rows))
        self.assertEqual({r["client_cpu_seconds"] for r in rows}, {"0.500", "0.950"})
        self.assertEqual({r["wall_seconds"] for r in rows}, {"1.000"})
        self.assertEqual({r["server_system_seconds"] for r in rows}, {"0.30"})
        mem = list(csv.DictReader(io.StringIO(self.read("suite_memory.csv"))))
        self.assertEqual(mem[0]["rss_bytes_per_key"], "50.0")

    def test_json_holds_medians_ratios_and_memory(self):
        j = json.loads(self.read("suite.json"))
        self.assertEqual(len(j["medians"]), 2 * 6)
        self.assertEqual(len(j["ratios"]), 2 * 2 * 3)
        self.assertTrue(all(r["per_cpu_ratio"] == 1.0 for r in j["ratios"]))
        self.assertEqual(j["meta"]["cores"], "8")
        self.assertEqual(len(j["memory"]), 4)

    def test_svg_charts_are_well_formed_with_a_bar_per_ratio(self):
        ns = "{http://www.w3.org/2000/svg}"
        for peer in ("redis", "valkey", "valkey-io2"):
            root = ET.fromstring(self.read("suite_vs_%s.svg" % peer))
            self.assertEqual(root.tag, ns + "svg")
            bars = [r for r in root.iter(ns + "rect") if r.get("class") == "bar"]
            self.assertEqual(len(bars), 2 * 2, peer)  # two cells × kvik-t1 and kvik-t2
            self.assertTrue(all(float(b.get("width")) > 0 for b in bars))
        root = ET.fromstring(self.read("suite_bytes_per_key.svg"))
        bars = [r for r in root.iter(ns + "rect") if r.get("class") == "bar"]
        self.assertEqual(len(bars), 4)

    def test_bar_chart_escapes_text_and_scales_to_the_largest_value(self):
        svg = suite_report.bar_chart("a < b & c", [("x<y", {"s&t": 2.0}), ("z", {"s&t": 4.0})],
                                     ["s&t"], "unit", reference=1.0)
        root = ET.fromstring(svg)
        bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == "bar"]
        self.assertAlmostEqual(float(bars[1].get("width")), 2 * float(bars[0].get("width")), places=0)

    def test_readme_section_states_date_machine_and_ratios(self):
        with open(os.path.join(self.out, "suite.json")) as f:
            section = suite_readme.render(json.load(f))
        self.assertTrue(section.startswith(suite_readme.START))
        self.assertTrue(section.rstrip().endswith(suite_readme.END))
        self.assertIn("2026-01-02 03:04 UTC", section)
        self.assertIn("Test CPU <&>", section)
        # LPOS: kvik-t1 100 vs redis median 100 → 1.00×; SET 1.00×: the geometric mean 1.00×.
        self.assertIn("| `-c 50 -P 16` | 1.00× |", section)
        # kvik-t1's client was busy 95% of each SET run; every other run's 50%.
        self.assertIn("was busy 90% of the run or more, so that it set the pace as much as the "
                      "server: kvik 1 thread 1 of 2, kvik 2 threads 0 of 2,", section)
        self.assertIn("| SET, 3-byte values | 50.0 | 100.0 | 80.0 |", section)
        # Every run spent the same CPU time on its requests.
        self.assertIn("Requests per server-CPU-second", section)
        self.assertIn("| `-c 50 -P 16` | 1.00× (0 of 1 below) |", section)
        # The kernel's share, a column per server, RESPB runs left out.
        self.assertIn("| setting | kvik 1 thread | kvik 2 threads | redis | valkey | valkey io-threads 2 |",
                      section)
        self.assertIn("| `-c 50 -P 16` | 60% | 60% | 60% | 60% | 60% |", section)

    def test_readme_update_replaces_only_the_marked_part(self):
        readme = os.path.join(self.out, "README.md")
        with open(readme, "w") as f:
            f.write("intro\n%s\nold text\n%s\noutro\n" % (suite_readme.START, suite_readme.END))
        with open(os.path.join(self.out, "suite.json")) as f:
            section = suite_readme.render(json.load(f))
        self.assertTrue(suite_readme.update(readme, section))
        with open(readme) as f:
            text = f.read()
        self.assertTrue(text.startswith("intro\n" + suite_readme.START))
        self.assertTrue(text.endswith(suite_readme.END + "\noutro\n"))
        self.assertNotIn("old text", text)
        self.assertFalse(suite_readme.update(readme, section), "a second update changes nothing")

    def test_readme_update_refuses_missing_or_misordered_markers(self):
        readme = os.path.join(self.out, "README.md")
        for text in ["no markers\n", "%s\n%s\n" % (suite_readme.END, suite_readme.START),
                     "%s\n%s\n%s\n" % (suite_readme.START, suite_readme.START, suite_readme.END)]:
            with open(readme, "w") as f:
                f.write(text)
            with self.assertRaises(SystemExit):
                suite_readme.update(readme, "x")
            with open(readme) as f:
                self.assertEqual(f.read(), text)


if __name__ == "__main__":
    unittest.main()
