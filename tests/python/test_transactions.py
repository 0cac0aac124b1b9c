"""Transactions the way redis-py applications use them: pipelines with
transaction=True, WATCH with WatchError retries (by hand and through
Redis.transaction), errors at queue time and at run time, RESP3."""

import threading

import pytest
import redis

from clients import client


def test_transaction_pipeline_runs_as_one(kvik_port):
    r = client(kvik_port)
    pipe = r.pipeline(transaction=True)
    pipe.set("a", "1")
    pipe.incr("a")
    pipe.lpush("l", "x", "y")
    pipe.lrange("l", 0, -1)
    pipe.get("missing")
    assert pipe.execute() == [True, 2, 2, [b"y", b"x"], None]


def test_runtime_error_is_returned_in_place(kvik_port):
    r = client(kvik_port)
    r.set("s", "text")
    pipe = r.pipeline(transaction=True)
    pipe.incr("s")
    pipe.set("t", "1")
    results = pipe.execute(raise_on_error=False)
    assert isinstance(results[0], redis.ResponseError)
    assert results[1] is True
    assert r.get("t") == b"1"


def test_queue_time_error_aborts_everything(kvik_port):
    r = client(kvik_port)
    pipe = r.pipeline(transaction=True)
    pipe.set("a", "1")
    pipe.execute_command("NOSUCH", "x")
    with pytest.raises(redis.ResponseError) as err:
        pipe.execute()
    assert "EXECABORT" in str(err.value) or "unknown command" in str(err.value)
    assert r.get("a") is None


def test_watch_error_when_another_client_writes(kvik_port):
    r = client(kvik_port)
    other = client(kvik_port)
    r.set("k", "1")
    with r.pipeline(transaction=True) as pipe:
        pipe.watch("k")
        assert pipe.get("k") == b"1"
        other.set("k", "2")
        pipe.multi()
        pipe.set("k", "3")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r.get("k") == b"2"


def test_watch_retry_loops_count_exactly(kvik_port):
    clients, increments = 6, 30
    failures = []

    def work():
        r = client(kvik_port)
        try:
            for _ in range(increments):
                for _ in range(10_000):
                    with r.pipeline(transaction=True) as pipe:
                        try:
                            pipe.watch("counter")
                            value = int(pipe.get("counter") or 0)
                            pipe.multi()
                            pipe.set("counter", value + 1)
                            pipe.execute()
                            break
                        except redis.WatchError:
                            continue
                else:
                    failures.append("an increment never got through")
        except Exception as e:  # reported by the main thread
            failures.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "clients still running"
    assert failures == []
    assert int(client(kvik_port).get("counter")) == clients * increments


def test_transaction_helper_retries(kvik_port):
    r = client(kvik_port)
    other = client(kvik_port)
    r.set("balance", 10)
    attempts = []

    def spend(pipe):
        attempts.append(1)
        balance = int(pipe.get("balance"))
        if len(attempts) == 1:
            other.incrby("balance", 5)
        pipe.multi()
        pipe.set("balance", balance - 3)

    r.transaction(spend, "balance")
    assert len(attempts) == 2, "the first attempt saw a concurrent change"
    assert r.get("balance") == b"12"


def test_resp3_transaction(kvik_port):
    r = client(kvik_port, protocol=3)
    r.hset("h", mapping={"f": "v"})
    pipe = r.pipeline(transaction=True)
    pipe.hgetall("h")
    pipe.get("missing")
    pipe.incrbyfloat("x", 1.5)
    assert pipe.execute() == [{b"f": b"v"}, None, 1.5]
    with r.pipeline(transaction=True) as pipe:
        pipe.watch("s")
        client(kvik_port).set("s", "changed")
        pipe.multi()
        pipe.get("s")
        with pytest.raises(redis.WatchError):
            pipe.execute()
