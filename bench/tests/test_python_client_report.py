"""Unit tests of bench/python_client.py's medians and report, on made-up
rounds (no servers or clients are started; only the standard library is
needed, as the script's driver needs no more).

Run by crates/bench/tests/scripts.rs (`cargo test -p kvik-bench`), or directly:
  python3 -m unittest discover -s bench/tests
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import python_client as pc  # noqa: E402

CFG = {"ops": 1000, "value_bytes": 129, "repeats": 3, "batch": 1000, "bulk_batch": 10000, "bulk_window": 1000,
       "threads": 2, "quick": False,
       "probes": {"redis-py": {"python": "3.11.7", "redis_py": "8.2.0", "parser": "_RESP2Parser",
                               "packer": "PythonRespSerializer"},
                  "redis-py+hiredis": {"python": "3.11.7", "redis_py": "8.2.0", "hiredis": "3.5.0",
                                       "parser": "_HiredisParser", "packer": "HiredisRespSerializer"},
                  "kvik": {"python": "3.11.7", "redis_py": "8.2.0", "kvik": "0.1.0", "packer": "kvik._native"},
                  "redis-cli": {"version": "redis-cli 7.0.15"}}}
META = {"date": "2026-01-02 03:04 UTC", "cpu": "Test CPU", "cores": "2", "memtotal": "4 GiB RAM",
        "loadavg": "0.1 0.1 0.1", "kvik_version": "kvik-server v=0.1.0", "redis_version": "Redis server v=7.0.15"}
TARGETS = [("kvik", "unix"), ("redis", "tcp")]
ALL = {"redis-py": True, "redis-py+hiredis": True, "kvik": True, "redis-cli": True}


def rnd(wall, cpu=None, server=0.1, ops=1000):
    return {"ops": ops, "wall_s": wall, "cpu_s": wall * 0.5 if cpu is None else cpu, "server_cpu_s": server}


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(lines):
    """The Markdown tables of `lines`, each as a list of rows of cells."""
    out, cur = [], None
    for line in lines:
        if line.startswith("|"):
            if cur is None:
                cur = []
                out.append(cur)
            cur.append(cells(line))
        else:
            cur = None
    return out


def naive_results(kvik_wall=0.4, hiredis_wall=1.0, pure_wall=2.0):
    res = {}
    for srv, transport in TARGETS:
        res[("lpush", srv, transport, "redis-py")] = pc.summarize([rnd(pure_wall)] * 3)
        res[("lpush", srv, transport, "redis-py+hiredis")] = pc.summarize([rnd(hiredis_wall)] * 3)
        res[("lpush", srv, transport, "kvik")] = pc.summarize([rnd(kvik_wall)] * 3)
    return {"naive": res}


class Medians(unittest.TestCase):
    def test_every_figure_is_the_median_of_the_rounds(self):
        s = pc.summarize([rnd(1.0, cpu=0.95, server=0.3), rnd(2.0, cpu=0.5, server=0.1), rnd(4.0, cpu=1.0, server=0.2)])
        self.assertEqual(s["rounds"], 3)
        self.assertEqual(s["ops_s"], 500)          # 1000, 500, 250 ops/s
        self.assertEqual(s["wall_s"], 2.0)
        self.assertEqual(s["cpu_s"], 0.95)
        self.assertEqual(s["server_cpu_s"], 0.2)
        self.assertEqual(s["busy"], 0.25)          # 0.95, 0.25, 0.25
        self.assertAlmostEqual(s["ops_cpu_s"], 1000 / 0.95)

    def test_failed_rounds_are_kept_apart(self):
        s = pc.summarize([rnd(1.0), {"error": "boom"}])
        self.assertEqual(s["rounds"], 1)
        self.assertEqual(s["failed"], ["boom"])
        self.assertEqual(s["ops_s"], 1000)
        self.assertNotIn("ops_s", pc.summarize([{"error": "boom"}]))

    def test_ratio_is_of_the_medians(self):
        a = pc.summarize([rnd(0.5), rnd(1.0), rnd(0.1)])   # median 2000 ops/s
        b = pc.summarize([rnd(2.0), rnd(1.0), rnd(4.0)])   # median 500 ops/s
        self.assertEqual(pc.ratio_of(a, b), 4.0)
        self.assertIsNone(pc.ratio_of(a, None))
        self.assertIsNone(pc.ratio_of(a, pc.summarize([{"error": "x"}])))

    def test_rotation_gives_every_client_a_turn_first(self):
        firsts = {pc.rotate(["a", "b", "c"], r)[0] for r in range(3)}
        self.assertEqual(firsts, {"a", "b", "c"})


class Report(unittest.TestCase):
    def render(self, results, sections, available=ALL, cfg=CFG):
        return pc.report(results, META, cfg, sections, TARGETS, pc.PY_CLIENTS, available)

    def test_tables_have_as_many_cells_as_headers(self):
        res = naive_results()
        res["bulk"] = {}
        for srv, transport in TARGETS:
            for c in pc.PY_CLIENTS + ["redis-cli"]:
                res["bulk"][("bulk", srv, transport, c)] = pc.summarize([rnd(0.1)])
        res["pop"] = {(m, srv, t, c): pc.summarize([rnd(1.0)]) for m in ("rpop", "lrange-ltrim")
                      for srv, t in TARGETS for c in pc.PY_CLIENTS}
        res["encode"] = {("encode", None, None, c): pc.summarize([rnd(0.01, server=None)]) for c in pc.PY_CLIENTS}
        lines = self.render(res, ["naive", "pipeline", "pop", "bulk", "encode"])
        found = tables(lines)
        self.assertGreaterEqual(len(found), 10)
        for t in found:
            for row in t:
                self.assertEqual(len(row), len(t[0]), t[0])

    def test_naive_ratios_and_goal(self):
        lines = self.render(naive_results(kvik_wall=0.4, hiredis_wall=1.0, pure_wall=2.0), ["naive"])
        head, _, row = tables(lines)[0][:3]
        self.assertEqual(row[:2], ["kvik-server", "unix"])
        self.assertEqual(row[head.index("kvik ops/s")], "2,500")
        self.assertEqual(row[head.index("kvik ÷ redis-py + hiredis")], "2.50×")
        self.assertEqual(row[head.index("kvik ÷ redis-py (pure)")], "5.00×")
        self.assertEqual(row[-1], "met (≥ 1.5×)")
        lines = self.render(naive_results(kvik_wall=0.8), ["naive"])
        self.assertEqual(tables(lines)[0][2][-1], "missed (≥ 1.5×)")

    def test_client_bound_cells_are_marked(self):
        res = naive_results()
        res["naive"][("lpush", "kvik", "unix", "kvik")] = pc.summarize([rnd(0.4, cpu=0.38)])
        cpu = tables(self.render(res, ["naive"]))[1]
        busy = {(r[0], r[1], r[2]): r[cpu[0].index("client busy")] for r in cpu[2:]}
        self.assertEqual(busy[("kvik-server", "unix", "kvik")], "95% (client-bound)")
        self.assertEqual(busy[("redis-server", "tcp", "kvik")], "50%")

    def test_a_client_not_available_is_said_so_and_has_no_ratio(self):
        res = naive_results()
        for key in [k for k in res["naive"] if k[3] == "redis-py+hiredis"]:
            del res["naive"][key]
        cfg = dict(CFG, probes=dict(CFG["probes"], **{"redis-py+hiredis": {"reason": "pip failed"}}))
        available = dict(ALL, **{"redis-py+hiredis": False})
        lines = self.render(res, ["naive"], available, cfg)
        self.assertIn("- redis-py + hiredis: not available (pip failed)", lines)
        head, _, row = tables(lines)[0][:3]
        self.assertEqual(row[head.index("redis-py + hiredis ops/s")], "not available")
        self.assertEqual(row[head.index("kvik ÷ redis-py + hiredis")], "—")
        self.assertEqual(row[-1], "—")
        self.assertEqual(row[head.index("kvik ÷ redis-py (pure)")], "5.00×")
        clients = {r[2] for r in tables(lines)[1][2:]}
        self.assertNotIn("redis-py + hiredis", clients)

    def test_bulk_is_held_to_redis_cli(self):
        res = {"bulk": {}}
        for srv, transport in TARGETS:
            for c, wall in (("redis-py", 1.0), ("redis-py+hiredis", 1.0), ("kvik", 0.2), ("redis-cli", 0.25)):
                res["bulk"][("bulk", srv, transport, c)] = pc.summarize([rnd(wall)])
        head, _, row = tables(self.render(res, ["bulk"]))[0][:3]
        self.assertIn("redis-cli --pipe ops/s", head)
        self.assertEqual(row[head.index("kvik ÷ redis-cli --pipe")], "1.25×")
        self.assertEqual(row[-1], "met (≥ 1×)")

    def test_failures_are_listed(self):
        res = naive_results()
        res["naive"][("lpush", "redis", "tcp", "kvik")] = pc.summarize([{"error": "LLEN is 3 after lpush, not 1000"}])
        lines = self.render(res, ["naive"])
        row = tables(lines)[0][3]
        self.assertEqual(row[4], "failed")
        self.assertEqual(row[-1], "—")
        self.assertIn("## Failures", lines)
        self.assertTrue(any("LLEN is 3" in line for line in lines))

    def test_titles_and_encode_packers(self):
        res = {"encode": {("encode", None, None, c): pc.summarize([rnd(0.01, server=None)]) for c in pc.PY_CLIENTS}}
        lines = self.render(res, ["pipeline", "encode"])
        self.assertIn("## 2. Pipelined LPUSH: batches of 1,000 in a non-transactional pipeline", lines)
        self.assertTrue(any(line.startswith("Packers:") and "HiredisRespSerializer" in line for line in lines))
        encode = tables(lines)[-2]
        self.assertNotIn("server", encode[0])
        self.assertEqual(encode[2][0], "100,000")


if __name__ == "__main__":
    unittest.main()
