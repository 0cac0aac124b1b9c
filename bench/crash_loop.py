"""Crash loop: clients write under load, the server is killed with SIGKILL
at a random moment, restarted on the same append-only file, and every write
a client was told had succeeded must be there.

Each cycle starts the server (kvik-server, or redis-server as the reference)
in one directory with `appendonly yes` and the fsync policy FSYNC, starts
CLIENTS writer threads, kills the server after a random time between
MIN_RUN_S and MAX_RUN_S, and restarts it. Each writer owns its keys and
sends one request at a time, noting a write as acknowledged only when its
reply arrived; a request whose reply never came is "in flight" and may or
may not have been applied. The writes, in turn:

- `INCR w<i>:counter`: after the restart the counter is at least the
  acknowledged increments and at most the ones sent;
- `RPUSH w<i>:log <n>`: the list is 0, 1, 2, … in order, at least as long
  as the acknowledged pushes, at most as long as the sent ones;
- `SET w<i>:key:<n> <n>`: every acknowledged key holds its value;
- `MULTI` / `HSET w<i>:hash f<n> <n>` / `INCR w<i>:tx` / `EXEC`: the hash
  field and the counter agree (both or neither), and the acknowledged ones
  are there.

Meanwhile, with REWRITE_EVERY_S > 0, another client asks for `BGREWRITEAOF`
that often, so that kills also land in the middle of rewrites (the new
incremental file begun, the new base not yet in the manifest).

A missing acknowledged write is a loss; the report counts them, and the
time they stand for (losses ÷ the rate writes were acknowledged at). With
`appendfsync always` there must be none: the script fails otherwise. With
`everysec` (and `no`) some may go: kvik replies before the writer hands
the change to the kernel (every millisecond), so a kill loses about the
last millisecond of writes, within the second `everysec` promises
(redis-server writes before it replies, so a kill of it loses none; a crash
of the machine would lose up to a second with either, which this script
cannot cause). Half-applied transactions or reordered pushes fail the
script whatever the policy.

    python3 bench/crash_loop.py SERVER_BIN OUT_MD

Environment: SERVER [kvik; or redis], CYCLES [100], CLIENTS [8],
FSYNC [always], MIN_RUN_S [0.2], MAX_RUN_S [1.0], THREADS [2] (kvik),
REWRITE_EVERY_S [0.25] (0: no rewrites), SEED [1]. Exits with status 1 when a write was lost.
"""

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_report import Client, free_port, wait_ready  # noqa: E402


class Writer:
    """One client's writes and what it was told of them, across cycles."""

    def __init__(self, index):
        self.index = index
        self.counter_acked = 0
        self.counter_sent = 0
        self.log_acked = 0
        self.log_sent = 0
        self.keys_acked = []
        self.tx_acked = 0
        self.tx_sent = 0
        self.step = 0
        # Every acknowledged write, over all cycles.
        self.acks = 0

    def run(self, port, stop):
        try:
            c = Client(port, timeout=10.0)
        except OSError:
            return
        p = "w%d:" % self.index
        try:
            while not stop.is_set():
                kind = self.step % 4
                self.step += 1
                if kind == 0:
                    self.counter_sent += 1
                    if isinstance(c.call("INCR", p + "counter"), RuntimeError):
                        raise RuntimeError("INCR refused")
                    self.counter_acked += 1
                    self.acks += 1
                elif kind == 1:
                    n = self.log_sent
                    self.log_sent += 1
                    c.call("RPUSH", p + "log", str(n))
                    self.log_acked = n + 1
                    self.acks += 1
                elif kind == 2:
                    n = self.step
                    c.call("SET", p + "key:%d" % n, str(n))
                    self.keys_acked.append(n)
                    self.acks += 1
                else:
                    n = self.tx_sent
                    self.tx_sent += 1
                    c.call("MULTI")
                    c.call("HSET", p + "hash", "f%d" % n, str(n))
                    c.call("INCR", p + "tx")
                    reply = c.call("EXEC")
                    if isinstance(reply, list):
                        self.tx_acked = n + 1
                        self.acks += 1
        except (OSError, ConnectionError, ValueError, RuntimeError):
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def check(self, c):
        """Acknowledged writes missing after a restart, and what is wrong."""
        p = "w%d:" % self.index
        lost = 0
        problems = []
        counter = int(c.call("GET", p + "counter") or 0)
        if counter < self.counter_acked:
            lost += self.counter_acked - counter
        if counter > self.counter_sent:
            problems.append("counter %d above the %d sent" % (counter, self.counter_sent))
        log = c.call("LRANGE", p + "log", "0", "-1") or []
        if [int(x) for x in log] != list(range(len(log))):
            problems.append("log out of order")
        if len(log) < self.log_acked:
            lost += self.log_acked - len(log)
        if len(log) > self.log_sent:
            problems.append("log longer than sent")
        # The pushes the restart kept are the next ones to send.
        self.log_sent = len(log)
        self.log_acked = len(log)
        for n in self.keys_acked:
            if c.call("GET", p + "key:%d" % n) != str(n).encode():
                lost += 1
        self.keys_acked = []
        fields = c.call("HLEN", p + "hash")
        tx = int(c.call("GET", p + "tx") or 0)
        if int(fields) != tx:
            problems.append("transaction half applied: %s fields, counter %d" % (fields, tx))
        if tx < self.tx_acked:
            lost += self.tx_acked - tx
        self.tx_sent = tx
        self.tx_acked = tx
        self.counter_sent = counter
        self.counter_acked = counter
        return lost, problems


def rewriter(port, stop, every_s, counts):
    """Ask for a rewrite every `every_s` seconds until `stop`."""
    try:
        c = Client(port, timeout=10.0)
        while not stop.wait(every_s):
            reply = c.call("BGREWRITEAOF")
            if not isinstance(reply, RuntimeError):
                counts[0] += 1
    except (OSError, ConnectionError, ValueError):
        pass


def start(server_bin, kind, port, workdir, fsync, threads, log):
    args = [server_bin, "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir,
            "--appendonly", "yes", "--appendfsync", fsync, "--save", ""]
    if kind == "kvik":
        args += ["--threads", str(threads)]
    proc = subprocess.Popen(args, stdout=log, stderr=log)
    if not wait_ready(port, 30):
        proc.kill()
        raise SystemExit("the server did not start; see its log in %s" % workdir)
    return proc


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    server_bin, out_md = argv[1], argv[2]
    kind = os.environ.get("SERVER", "kvik")
    cycles = int(os.environ.get("CYCLES", "100"))
    clients = int(os.environ.get("CLIENTS", "8"))
    fsync = os.environ.get("FSYNC", "always")
    min_run, max_run = float(os.environ.get("MIN_RUN_S", "0.2")), float(os.environ.get("MAX_RUN_S", "1.0"))
    threads = int(os.environ.get("THREADS", "2"))
    rewrite_every = float(os.environ.get("REWRITE_EVERY_S", "0.25"))
    rewrites = [0]
    rng = random.Random(int(os.environ.get("SEED", "1")))
    workdir = tempfile.mkdtemp(prefix="crash-loop-")
    writers = [Writer(i) for i in range(clients)]
    rows = []
    total_lost = 0
    busy_s = 0.0
    all_problems = []
    port = free_port()
    with open(os.path.join(workdir, "server.log"), "ab") as log:
        proc = start(server_bin, kind, port, workdir, fsync, threads, log)
        for cycle in range(1, cycles + 1):
            stop = threading.Event()
            ts = [threading.Thread(target=w.run, args=(port, stop)) for w in writers]
            if rewrite_every > 0:
                ts.append(threading.Thread(target=rewriter, args=(port, stop, rewrite_every, rewrites)))
            for t in ts:
                t.start()
            run_s = rng.uniform(min_run, max_run)
            time.sleep(run_s)
            busy_s += run_s
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            stop.set()
            for t in ts:
                t.join()
            acked = sum(w.acks for w in writers)
            started = time.monotonic()
            proc = start(server_bin, kind, port, workdir, fsync, threads, log)
            restart_s = time.monotonic() - started
            c = Client(port, timeout=30.0)
            lost = 0
            for w in writers:
                n, problems = w.check(c)
                lost += n
                all_problems += ["cycle %d, writer %d: %s" % (cycle, w.index, p) for p in problems]
            c.close()
            total_lost += lost
            rows.append((cycle, run_s, acked, lost, restart_s))
            print("cycle %d: killed after %.2f s, %d writes acknowledged so far, %d lost, restart %.2f s"
                  % (cycle, run_s, acked, lost, restart_s), flush=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    acked_total = rows[-1][2] if rows else 0
    per_cycle = [b[2] - a[2] for a, b in zip([(0, 0, 0, 0, 0)] + rows, rows)]
    lines = [
        "# Crash loop: SIGKILL under write load",
        "",
        "Server: %s (`%s`), `appendfsync %s`, %d writer clients, %d cycles, killed %.1f–%.1f s into each."
        % (kind, os.path.basename(server_bin), fsync, clients, cycles, min_run, max_run),
        "Command: `%s`" % os.environ.get("COMMAND", "python3 bench/crash_loop.py"),
        "",
        "| figure | value |",
        "|---|---|",
        "| cycles | %d |" % len(rows),
        "| rewrites started (`BGREWRITEAOF`) | %d |" % rewrites[0],
        "| acknowledged writes, all cycles | %d |" % acked_total,
        "| acknowledged writes per cycle (median) | %d |" % (sorted(per_cycle)[len(per_cycle) // 2] if rows else 0),
        "| acknowledged writes lost | %d |" % total_lost,
        "| acknowledged writes lost per kill | %.1f |" % (total_lost / len(rows) if rows else 0),
        "| … as time at the acknowledged rate | %.2f ms |"
        % (total_lost / len(rows) / (acked_total / busy_s) * 1000 if acked_total and rows else 0),
        "| consistency problems (half transactions, disorder) | %d |" % len(all_problems),
        "| median restart (load) time | %.3f s |" % (sorted(r[4] for r in rows)[len(rows) // 2] if rows else 0),
        "",
    ]
    lines += ["- " + p for p in all_problems[:20]]
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.rmtree(workdir, ignore_errors=True)
    print("lost %d acknowledged writes, %d problems; report in %s" % (total_lost, len(all_problems), out_md))
    return 1 if (total_lost and fsync == "always") or all_problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
