"""Blocking commands through redis-py with several clients in threads: work
queues served first come first served, moves between lists, sorted set and
stream waits, timeouts, and CLIENT UNBLOCK."""

import threading
import time

import pytest
import redis

from clients import client


def wait_blocked(r, count):
    """Wait until `count` clients are blocked."""
    deadline = time.monotonic() + 5
    while r.info("clients")["blocked_clients"] != count:
        assert time.monotonic() < deadline, "clients did not block"
        time.sleep(0.005)


def in_thread(fn, *args):
    """Run fn in a thread; returns a function giving its result."""
    result = {}

    def run():
        result["value"] = fn(*args)

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def join():
        t.join(timeout=5)
        assert not t.is_alive(), "blocked call never returned"
        return result["value"]

    return join


def test_workers_are_served_in_order(kvik_port):
    producer = client(kvik_port)
    workers = [client(kvik_port) for _ in range(3)]
    results = []
    for i, w in enumerate(workers):
        results.append(in_thread(w.blpop, ["jobs"], 0))
        wait_blocked(producer, i + 1)
    assert producer.rpush("jobs", "j1", "j2", "j3") == 3
    assert [r() for r in results] == [(b"jobs", b"j1"), (b"jobs", b"j2"), (b"jobs", b"j3")]
    assert producer.exists("jobs") == 0
    assert producer.info("clients")["blocked_clients"] == 0


def test_many_threads_consume_every_item_once(kvik_port):
    producer = client(kvik_port)
    consumers = [client(kvik_port) for _ in range(8)]
    got = []
    lock = threading.Lock()

    def consume(r):
        while True:
            item = r.brpop(["a", "b"], timeout=2)
            if item is None or item[1] == b"stop":
                return
            with lock:
                got.append(item[1])

    threads = [threading.Thread(target=consume, args=(c,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    for i in range(200):
        producer.lpush("a" if i % 2 else "b", f"item{i}")
    for _ in consumers:
        producer.lpush("a", "stop")
    for t in threads:
        t.join(timeout=10)
        assert not t.is_alive()
    assert sorted(got) == sorted(f"item{i}".encode() for i in range(200))


def test_blmove_and_brpoplpush_move_between_lists(kvik_port):
    r = client(kvik_port)
    waiter = client(kvik_port)
    moved = in_thread(waiter.blmove, "src", "dst", 0, "LEFT", "RIGHT")
    wait_blocked(r, 1)
    r.rpush("src", "x", "y")
    assert moved() == b"x"
    assert r.lrange("dst", 0, -1) == [b"x"]
    assert waiter.brpoplpush("src", "dst", 0) == b"y"
    assert waiter.brpoplpush("src", "dst", 0.05) is None
    assert waiter.blmpop(0.05, 1, "src", direction="LEFT") is None


def test_sorted_sets_and_streams(kvik_port):
    r = client(kvik_port)
    waiter = client(kvik_port)
    popped = in_thread(waiter.bzpopmin, ["z"], 0)
    wait_blocked(r, 1)
    r.zadd("z", {"m": 2.5})
    assert popped() == (b"z", b"m", 2.5)
    read = in_thread(waiter.xread, {"s": "$"}, None, 0)
    wait_blocked(r, 1)
    entry_id = r.xadd("s", {"f": "v"})
    assert read() == [[b"s", [(entry_id, {b"f": b"v"})]]]
    r.xgroup_create("s", "g", id="$")
    grouped = in_thread(waiter.xreadgroup, "g", "c", {"s": ">"}, None, 0)
    wait_blocked(r, 1)
    second = r.xadd("s", {"n": "1"})
    assert grouped() == [[b"s", [(second, {b"n": b"1"})]]]
    assert r.xpending("s", "g")["pending"] == 1


def test_timeouts_and_client_unblock(kvik_port):
    r = client(kvik_port)
    waiter = client(kvik_port)
    started = time.monotonic()
    assert waiter.blpop(["nothing"], timeout=0.1) is None
    assert 0.1 <= time.monotonic() - started < 1
    waiter_id = waiter.client_id()
    timed_out = in_thread(waiter.blpop, ["nothing"], 0)
    wait_blocked(r, 1)
    assert "b" in r.client_list(client_id=[waiter_id])[0]["flags"]
    assert r.client_unblock(waiter_id) is True
    assert timed_out() is None
    assert r.client_unblock(waiter_id) is False
    failed = in_thread(lambda: pytest.raises(redis.ResponseError, waiter.bzpopmax, ["z"], 0))
    wait_blocked(r, 1)
    assert r.client_unblock(waiter_id, error=True) is True
    assert "UNBLOCKED client unblocked via CLIENT UNBLOCK" in str(failed().value)
    with pytest.raises(redis.ResponseError, match="timeout is negative"):
        waiter.blpop(["k"], timeout=-1)
