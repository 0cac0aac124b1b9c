"""Sentinel failover with kvik: redis-server in sentinel mode monitors a kvik
master with two kvik replicas. The master is killed; Sentinel promotes a
replica, the other follows it, the old master comes back as a replica, and a
client that finds the master through Sentinel (redis-py's `Sentinel`) keeps
writing, losing none of the writes WAIT said two replicas had.
"""

import os
import shutil
import subprocess
import time

import pytest
import redis
from redis.sentinel import Sentinel

from conftest import find_server_binary, free_port, wait_for_ping

NAME = "kvikmaster"


def start_kvik(tmp_path, port, replica_of=None):
    """A kvik-server from a config file of its own (Sentinel rewrites it)."""
    home = tmp_path / str(port)
    home.mkdir(exist_ok=True)
    lines = ["bind 127.0.0.1", f"port {port}", 'save ""', f"dir {home}", f"logfile {home / 'kvik.log'}"]
    # Full syncs go at once instead of waiting 5 s for more replicas.
    lines.append("repl-diskless-sync-delay 0")
    if replica_of:
        lines.append(f"replicaof 127.0.0.1 {replica_of}")
    conf = home / "kvik.conf"
    if not conf.exists():
        conf.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        [str(find_server_binary()), str(conf)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_ping(proc, port, f"kvik-server {port}", lambda: proc.stderr.read().decode(errors="replace"))
    return proc


def wait_until(what, check, secs=60):
    deadline = time.monotonic() + secs
    while True:
        try:
            if check():
                return
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def role(port):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=2).execute_command("ROLE")


def test_sentinel_fails_over_a_kvik_master_and_the_old_one_rejoins(tmp_path):
    sentinel_bin = shutil.which("redis-server")
    if sentinel_bin is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not on PATH, and CI must run Sentinel")
        pytest.skip("redis-server is not installed")
    ports = [free_port(), free_port(), free_port()]
    master, r1, r2 = ports
    procs = {master: start_kvik(tmp_path, master)}
    procs[r1] = start_kvik(tmp_path, r1, replica_of=master)
    procs[r2] = start_kvik(tmp_path, r2, replica_of=master)
    s_port = free_port()
    s_conf = tmp_path / "sentinel.conf"
    s_conf.write_text(
        "\n".join(
            [
                "bind 127.0.0.1",
                f"port {s_port}",
                f"dir {tmp_path}",
                f"logfile {tmp_path / 'sentinel.log'}",
                f"sentinel monitor {NAME} 127.0.0.1 {master} 1",
                f"sentinel down-after-milliseconds {NAME} 1000",
                f"sentinel failover-timeout {NAME} 10000",
            ]
        )
        + "\n"
    )
    sentinel = subprocess.Popen([sentinel_bin, str(s_conf), "--sentinel"], stdin=subprocess.DEVNULL)
    try:
        wait_for_ping(sentinel, s_port, "redis-sentinel", lambda: "")
        sentinels = Sentinel([("127.0.0.1", s_port)], socket_timeout=2)
        wait_until(
            "Sentinel to see both replicas",
            lambda: len(sentinels.discover_slaves(NAME)) == 2,
        )
        client = sentinels.master_for(NAME, socket_timeout=2, retry_on_timeout=True)
        kept = {}
        for i in range(200):
            client.set(f"k{i}", i)
            kept[f"k{i}"] = str(i)
        assert client.wait(2, 5000) == 2

        procs[master].kill()
        procs[master].wait()
        wait_until(
            "a promoted replica",
            lambda: sentinels.discover_master(NAME)[1] in (r1, r2),
        )
        new_master = sentinels.discover_master(NAME)[1]
        other = r2 if new_master == r1 else r1
        assert role(new_master)[0] == b"master"
        wait_until("the other replica to follow", lambda: role(other)[1:3] == [b"127.0.0.1", new_master])

        # The client finds the new master through Sentinel and goes on.
        def write(i):
            client.set(f"after{i}", i)
            kept[f"after{i}"] = str(i)
            return True

        for i in range(100):
            wait_until("a write to the new master", lambda: write(i), secs=30)
        assert client.wait(1, 5000) >= 1

        # The old master comes back as a replica of the new one, with its data.
        procs[master] = start_kvik(tmp_path, master)
        wait_until(
            "the old master to rejoin as a replica",
            lambda: role(master)[0] == b"slave" and role(master)[2] == new_master and role(master)[3] == b"connected",
            secs=90,
        )
        wait_until("every replica to have the writes", lambda: client.wait(2, 1000) == 2)
        for port in ports:
            r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, decode_responses=True)
            values = r.mget(list(kept))
            assert values == list(kept.values()), f"server {port} lost writes"
        # Sentinel's CONFIG REWRITE left each file naming the right master.
        conf = (tmp_path / str(new_master) / "kvik.conf").read_text()
        assert "replicaof" not in conf, conf
        conf = (tmp_path / str(master) / "kvik.conf").read_text()
        assert f"replicaof 127.0.0.1 {new_master}" in conf, conf
    finally:
        sentinel.kill()
        sentinel.wait()
        for proc in procs.values():
            proc.kill()
            proc.wait()
            proc.stderr.close()
