"""Pub/sub with redis-py the way applications use it: a listener thread
reading messages while other clients publish."""

import threading
import time

import redis

from clients import confirmed


def client(port: int, **kwargs) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, **kwargs)


def next_message(p, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = p.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if msg is not None:
            return msg
    raise AssertionError("no message arrived")


def test_channel_and_pattern_messages(kvik_port):
    r = client(kvik_port)
    p = r.pubsub()
    p.subscribe("orders")
    p.psubscribe("user:*")
    # Wait until both confirmations arrived, so the publishes below count them.
    confirmed(p, 2)
    assert r.pubsub_numsub("orders") == [(b"orders", 1)]
    assert r.pubsub_numpat() == 1
    assert r.publish("orders", "o-1") == 1
    assert r.publish("user:7", "login") == 1
    assert r.publish("nobody", "x") == 0
    first = next_message(p)
    assert (first["type"], first["channel"], first["data"]) == ("message", b"orders", b"o-1")
    second = next_message(p)
    assert (second["type"], second["pattern"], second["channel"], second["data"]) == (
        "pmessage",
        b"user:*",
        b"user:7",
        b"login",
    )
    p.unsubscribe("orders")
    p.punsubscribe()
    p.close()


def test_listener_thread_with_handlers(kvik_port):
    r = client(kvik_port)
    got = []
    done = threading.Event()

    def handler(message):
        got.append(message["data"])
        if len(got) == 50:
            done.set()

    p = r.pubsub()
    p.subscribe(events=handler)
    worker = p.run_in_thread(sleep_time=0.01)
    try:
        deadline = time.monotonic() + 5
        while r.pubsub_numsub("events") != [(b"events", 1)] and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(50):
            r.publish("events", str(i))
        assert done.wait(5)
        assert got == [str(i).encode() for i in range(50)]
    finally:
        worker.stop()
        worker.join(5)
        p.close()


def test_resp3_pushes(kvik_port):
    r = client(kvik_port, protocol=3)
    p = r.pubsub()
    p.subscribe("c")
    assert r.pubsub_numsub("c") == [(b"c", 1)]
    r.publish("c", "hello")
    msg = next_message(p)
    assert (msg["type"], msg["channel"], msg["data"]) == ("message", b"c", b"hello")
    p.close()
