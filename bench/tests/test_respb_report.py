"""Unit tests of bench/respb_report.py's report header.

Run by crates/bench/tests/scripts.rs (`cargo test -p kvik-bench`), or directly:
  python3 -m unittest discover -s bench/tests
"""

import os
import sys
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


if __name__ == "__main__":
    unittest.main()
