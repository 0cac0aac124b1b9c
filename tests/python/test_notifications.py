"""Keyspace notifications with redis-py the way applications consume them:
a pub/sub listener on `__keyspace@0__:*` / `__keyevent@0__:*` channels,
switched on with CONFIG SET notify-keyspace-events, reacting to writes,
expiry and the flags that select event classes."""

import time

import redis

from clients import confirmed


def client(port: int, **kwargs) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, **kwargs)


def drain(p, until: bytes, timeout=5.0):
    """Every message up to (not including) a message on channel `until`."""
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = p.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if msg is None:
            continue
        if msg["channel"] == until:
            return got
        got.append((msg["channel"], msg["data"]))
    raise AssertionError(f"the end marker never arrived; got {got}")


def listener(r: redis.Redis, pattern: str):
    p = r.pubsub()
    p.psubscribe(pattern)
    confirmed(p, 1)
    assert r.pubsub_numpat() == 1
    return p


def test_events_are_off_by_default_and_config_reads_back(kvik_port):
    r = client(kvik_port)
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}
    p = listener(r, "__key*__:*")
    r.set("k", "v")
    r.publish("__keyend__:x", "end")
    assert drain(p, b"__keyend__:x") == []
    assert r.config_set("notify-keyspace-events", "KEA")
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
    try:
        r.config_set("notify-keyspace-events", "KEz?")
        raise AssertionError("an invalid flag was accepted")
    except redis.ResponseError as e:
        assert "Invalid event class character" in str(e)


def test_keyspace_and_keyevent_channels_follow_writes(kvik_port):
    r = client(kvik_port)
    r.config_set("notify-keyspace-events", "KEA")
    p = listener(r, "__key*@0__:*")
    r.set("user:1", "alice", ex=100)
    r.rpush("queue", "job")
    r.lpop("queue")
    r.rename("user:1", "user:2")
    r.publish("__keyend@0__:x", "end")
    assert drain(p, b"__keyend@0__:x") == [
        (b"__keyspace@0__:user:1", b"set"),
        (b"__keyevent@0__:set", b"user:1"),
        (b"__keyspace@0__:user:1", b"expire"),
        (b"__keyevent@0__:expire", b"user:1"),
        (b"__keyspace@0__:queue", b"rpush"),
        (b"__keyevent@0__:rpush", b"queue"),
        (b"__keyspace@0__:queue", b"lpop"),
        (b"__keyevent@0__:lpop", b"queue"),
        (b"__keyspace@0__:queue", b"del"),
        (b"__keyevent@0__:del", b"queue"),
        (b"__keyspace@0__:user:1", b"rename_from"),
        (b"__keyevent@0__:rename_from", b"user:1"),
        (b"__keyspace@0__:user:2", b"rename_to"),
        (b"__keyevent@0__:rename_to", b"user:2"),
    ]


def test_class_flags_select_events(kvik_port):
    r = client(kvik_port)
    r.config_set("notify-keyspace-events", "Kh")
    p = listener(r, "__key*__:*")
    r.hset("h", mapping={"a": "1"})
    r.set("s", "1")
    r.hdel("h", "a")
    r.publish("__keyend__:x", "end")
    assert drain(p, b"__keyend__:x") == [(b"__keyspace@0__:h", b"hset"), (b"__keyspace@0__:h", b"hdel")]


def test_expired_keys_are_announced_by_the_server(kvik_port):
    r = client(kvik_port)
    r.config_set("notify-keyspace-events", "Ex")
    p = listener(r, "__keyevent@*__:expired")
    r.set("session", "x", px=50)
    got = None
    deadline = time.monotonic() + 5
    while got is None and time.monotonic() < deadline:
        msg = p.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if msg is not None:
            got = (msg["channel"], msg["data"])
    # The active expiry cycle removes the key without anyone reading it.
    assert got == (b"__keyevent@0__:expired", b"session")
    assert r.exists("session") == 0


def test_new_keys_and_misses_when_asked(kvik_port):
    r = client(kvik_port)
    r.config_set("notify-keyspace-events", "Enm")
    p = listener(r, "__keyevent@0__:*")
    r.set("a", "1")
    r.set("a", "2")
    assert r.get("nope") is None
    r.publish("__keyevent@0__:end-marker", "end")
    assert drain(p, b"__keyevent@0__:end-marker") == [(b"__keyevent@0__:new", b"a"), (b"__keyevent@0__:keymiss", b"nope")]
