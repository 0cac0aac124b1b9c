"""Unit tests of bench/replication.py's report and parsing, on made-up rounds
(no servers are started).

Run by crates/bench/tests/scripts.rs (`cargo test -p kvik-bench`), or directly:
  python3 -m unittest discover -s bench/tests
"""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bgsave  # noqa: E402
import replication  # noqa: E402

CFG = {
    "load_batch": 16, "load_rate": 0, "lat_interval_ns": 500_000, "warmup": 0.5, "steady": 3.0,
    "lag_pairs": [("kvik", "kvik"), ("redis", "redis"), ("kvik", "redis")], "lag_clients": 50,
    "lag_pipeline": 16, "lag_requests": 1_000_000, "lag_bench": "/usr/bin/redis-benchmark", "value_bytes": 64,
}


def load_round(wps_before, wps_during, cpu_during, lat_during):
    return {
        "sync_s": 1.5, "errors": 0,
        "wps_before": wps_before, "wps_during": wps_during, "drop": wps_during / wps_before,
        "cpu_before": 3.0, "cpu_during": cpu_during, "cores_before": 1.0, "cores_during": cpu_during / 1.5,
        "wpc_before": wps_before, "wpc_during": wps_during * 1.5 / cpu_during,
        "lat_before": bgsave.percentiles([10, 20, 30]), "lat_during": bgsave.percentiles(lat_during),
    }


def lag_round(rps, p50, catchup):
    return {"rps": rps, "lag_p50": p50, "lag_p99": p50 * 4, "lag_max": p50 * 8, "samples": 100, "down": 0,
            "catchup_ms": catchup}


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


class Report(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.out = os.path.join(self.dir, "replication.md")
        self.meta = os.path.join(self.dir, "meta")
        with open(self.meta, "w") as f:
            f.write("date=2026-01-02 03:04 UTC\ncores=2\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, **kw):
        sync = [(1_000_000, {("kvik", "redis"): 1.1, ("redis", "redis"): 1.375, ("redis", "kvik"): 1.375})]
        kvik = [load_round(200_000, 100_000, 3.0, [40, 50, 2000]), load_round(210_000, 90_000, 3.0, [40, 60, 3000])]
        redis = [load_round(200_000, 150_000, 1.5, [40, 50, 4000])]
        load = [(1_000_000, {"kvik": replication.summarize_load(kvik), "redis": replication.summarize_load(redis)})]
        lag = [(1_000_000, {
            ("kvik", "kvik"): replication.summarize_lag([lag_round(900_000, 1070, 2.0)]),
            ("redis", "redis"): replication.summarize_lag([lag_round(800_000, 2140, 1.0)]),
            ("kvik", "redis"): replication.summarize_lag([lag_round(700_000, 0, 4.0)]),
        })]
        args = dict(rows=sync, load_rows=load, lag_rows=lag)
        args.update(kw)
        with open(os.devnull, "w") as null:
            saved, sys.stdout = sys.stdout, null
            try:
                replication.write_report(self.out, self.meta, args["rows"], 3, 64, 2, args["load_rows"],
                                         args["lag_rows"], CFG)
            finally:
                sys.stdout = saved
        with open(self.out) as f:
            return f.read()

    def test_the_full_resync_table_keeps_its_layout(self):
        md = self.write()
        self.assertIn("| keys | kvik → redis | redis → redis | master kvik ÷ redis | redis → kvik "
                      "| replica kvik ÷ redis |\n|---:|---:|---:|---:|---:|---:|\n"
                      "| 1,000,000 | 1.10 s | 1.38 s | 0.80 | 1.38 s | 1.00 |\n", md)
        self.assertIn("Machine: date=2026-01-02 03:04 UTC, cores=2", md)

    def test_load_table_has_medians_ratios_and_per_cpu_figures(self):
        md = self.write()
        self.assertIn("On this 2-core machine", md)
        self.assertIn("fair comparison", md)
        rows = {cells(l)[1]: cells(l) for l in md.splitlines() if l.startswith("| ") and "figure" not in l}
        # writes/s during sync: medians 95,000 (kvik) and 150,000 (redis).
        self.assertEqual(rows["writes/s during sync"][2:], ["95,000", "150,000", "0.63"])
        # per round first, then the median: kvik's drops are 0.5 and 0.43.
        self.assertEqual(rows["writes/s during ÷ before"][2], "0.46")
        self.assertEqual(rows["writes per master CPU-s, during sync"][2:], ["47,500", "150,000", "0.32"])
        self.assertEqual(rows["latency max during sync, µs"][2:], ["2,500", "4,000", "0.62"])
        self.assertEqual(rows["latency samples before / during"][2:4], ["3 / 3", "3 / 3"])
        self.assertEqual(rows["sync window, s"][0], "1,000,000")

    def test_a_short_sync_window_is_flagged(self):
        self.assertNotIn("as short as", self.write())
        short = load_round(200_000, 100_000, 0.01, [40])
        short["sync_s"] = 0.02
        load = [(20_000, {"kvik": replication.summarize_load([short]),
                          "redis": replication.summarize_load([load_round(200_000, 100_000, 1.0, [40])])})]
        self.assertIn("A sync window here is as short as 0.020 s", self.write(load_rows=load))

    def test_lag_table_puts_redis_first_and_divides_by_it(self):
        md = self.write()
        head = next(l for l in md.splitlines() if l.startswith("| keys | figure | redis → redis"))
        self.assertEqual(cells(head)[2:], ["redis → redis", "kvik → kvik", "kvik → kvik ÷ redis → redis",
                                           "kvik → redis", "kvik → redis ÷ redis → redis"])
        rows = {cells(l)[1]: cells(l) for l in md.splitlines() if l.startswith("| ") and "figure" not in l}
        self.assertEqual(rows["load requests/s"][2:], ["800,000", "900,000", "1.12", "700,000", "0.88"])
        # 107 bytes a SET of 64-byte values and 16-character keys.
        self.assertEqual(rows["lag p50, bytes (SETs)"][2:4], ["2,140 (20)", "1,070 (10)"])
        self.assertEqual(rows["lag p50, bytes (SETs)"][4], "0.50")
        self.assertIn("-c 50 -P 16 -t set -n 1,000,000", md)

    def test_a_zero_base_gives_no_ratio(self):
        lag = [(10, {pair: replication.summarize_lag([lag_round(1000, 0, 0.0)]) for pair in CFG["lag_pairs"]})]
        md = self.write(lag_rows=lag)
        line = next(l for l in md.splitlines() if "| lag p50, bytes" in l)
        self.assertEqual(cells(line)[4], "—")

    def test_sections_left_out_are_not_in_the_report(self):
        md = self.write(rows=[], load_rows=[])
        self.assertNotIn("Full resync", md)
        self.assertNotIn("while a replica syncs", md)
        self.assertIn("## Replication lag under 50 clients, pipeline 16", md)


class Parsing(unittest.TestCase):
    def test_rps_of_the_set_line(self):
        csv_text = ('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",'
                    '"p99_latency_ms","max_latency_ms"\n"SET","812345.67","0.9","0.1","0.8","1.5","2.0","4.1"\n')
        self.assertAlmostEqual(replication.parse_rps(csv_text), 812345.67)
        self.assertIsNone(replication.parse_rps(""))

    def test_pairs(self):
        self.assertEqual(replication.env_pairs("kvik:redis redis:redis"), [("kvik", "redis"), ("redis", "redis")])
        with self.assertRaises(SystemExit):
            replication.env_pairs("kvik-redis")
        with self.assertRaises(SystemExit):
            replication.env_pairs("kvik:valkey")

    def test_replica_offset_prefers_the_applied_offset(self):
        self.assertEqual(replication.replica_offset({"slave_repl_offset": "7", "master_repl_offset": "9"}), 7)
        self.assertEqual(replication.replica_offset({"master_repl_offset": "9"}), 9)

    def test_info_lines(self):
        info = replication.parse_info(b"# Replication\r\nrole:slave\r\nslave_repl_offset:42\r\n", "x")
        self.assertEqual(info, {"role": "slave", "slave_repl_offset": "42"})
        with self.assertRaises(RuntimeError):
            replication.parse_info(RuntimeError("ERR"), "x")

    def test_cpu_seconds_of_this_process_grow(self):
        before = replication.cpu_seconds(os.getpid())
        end = replication.time.process_time() + 0.05
        while replication.time.process_time() < end:
            pass
        self.assertGreaterEqual(replication.cpu_seconds(os.getpid()), before)
        self.assertGreater(replication.cpu_seconds(os.getpid()), 0)


if __name__ == "__main__":
    unittest.main()
