"""Unit tests of bench/respb_report.py: the report header, and which medians
it marks as paced by the client.

Run by crates/bench/tests/scripts.rs (`cargo test -p kvik-bench`), or directly:
  python3 -m unittest discover -s bench/tests
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import respb_report  # noqa: E402


class HeaderTests(unittest.TestCase):
    def test_cpu_placement_is_stated_only_for_pinned_runs(self):
        pinned = {"pin": "1", "client_cpu": "0", "server_cpu": "1", "peers": "redis valkey"}
        text = "\n".join(respb_report.header(pinned, "title"))
        self.assertIn("- CPUs: kvik-benchmark on CPU 0; each server with one worker thread", text)
        self.assertIn("on CPU 1 (`taskset`)", text)
        for unpinned in ({"pin": "0"}, {}):
            self.assertNotIn("taskset", "\n".join(respb_report.header(unpinned, "title")))



class PacedTests(unittest.TestCase):
    """A median is marked ◆ when its runs kept the client busy 90% of their
    wall time or more (median over the runs), and the raw runs carry the
    fraction."""

    def test_medians_of_client_paced_runs_are_marked(self):
        with tempfile.TemporaryDirectory() as work:
            meta = {"pipelines": "1 100", "tests": "get", "repeats": "2", "peers": "valkey",
                    "kvik_servers": "kvik-t1"}
            with open(os.path.join(work, "meta"), "w") as f:
                f.write("".join("%s=%s\n" % kv for kv in meta.items()))
            runs = [
                # server, protocol, pipeline, repeat, client_ms, wall_ms, rps
                ("kvik-t1", "resp", 1, 1, "300", "1000", 100.0),
                ("kvik-t1", "resp", 1, 2, "310", "1000", 110.0),
                ("kvik-t1", "respb", 1, 1, "950", "1000", 120.0),
                ("kvik-t1", "respb", 1, 2, "990", "1000", 130.0),
                ("valkey", "resp", 1, 1, "", "1000", 90.0),
                ("valkey", "resp", 1, 2, "", "1000", 95.0),
                ("kvik-t1", "resp", 100, 1, "950", "1000", 1000.0),
                ("kvik-t1", "resp", 100, 2, "100", "1000", 1100.0),
                ("kvik-t1", "respb", 100, 1, "500", "1000", 1200.0),
                ("kvik-t1", "respb", 100, 2, "500", "1000", 1300.0),
                ("valkey", "resp", 100, 1, "920", "1000", 500.0),
                ("valkey", "resp", 100, 2, "910", "1000", 600.0),
            ]
            with open(os.path.join(work, "runs.tsv"), "w") as tsv:
                for i, (server, proto, p, rep, client, wall, rps) in enumerate(runs):
                    name = "run%d.json" % i
                    with open(os.path.join(work, name), "w") as f:
                        f.write(json.dumps({"name": "GET", "rps": rps, "latency_ms": {"p50": 0.1, "p99": 0.2}}) + "\n")
                    tsv.write("\t".join([server, proto, str(p), str(rep), "json", name, client, wall]) + "\n")
            md, js = os.path.join(work, "respb.md"), os.path.join(work, "respb.json")
            respb_report.respb_report(work, md, js)
            rows = {}
            with open(md) as f:
                for line in f:
                    if line.startswith("| 1 ") or line.startswith("| 100 "):
                        # The first table (GET, kvik 1 thread), not the summary after it.
                        rows.setdefault(line.split("|")[1].strip(), line)
            # -P 1: RESPB paced (0.97), RESP not (0.305), valkey unknown.
            self.assertIn("| 105 | 125 ◆ |", rows["1"])
            self.assertIn("| 92 |", rows["1"])
            # -P 100: RESP's median is 0.525 (not paced); valkey's 0.915 is.
            self.assertIn("| 1,050 | 1,250 |", rows["100"])
            self.assertIn("| 550 ◆ |", rows["100"])
            with open(js) as f:
                raw = json.load(f)["runs"]
            busy = sorted(r["client_busy"] for r in raw if r["server"] == "kvik-t1" and r["pipeline"] == 1)
            self.assertEqual(busy, [0.3, 0.31, 0.95, 0.99])
            self.assertEqual([r["client_busy"] for r in raw if r["server"] == "valkey" and r["pipeline"] == 1],
                             [None, None])


if __name__ == "__main__":
    unittest.main()
