"""Strings, bitmaps and key commands through redis-py's own helpers, the way
applications call them: pipelines, RESP3 typed replies, expiry, SCAN
iteration, BITFIELD, error texts, decoded replies and threads."""

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
import redis

from clients import client


def test_pipeline_of_string_commands(kvik_port):
    r = client(kvik_port)
    pipe = r.pipeline(transaction=False)
    pipe.set("a", "1")
    pipe.get("a")
    pipe.incr("a")
    pipe.incrby("a", 10)
    pipe.mset({"b": "x", "c": b"\x00\xff"})
    pipe.mget("a", "b", "c", "missing")
    pipe.append("b", "yz")
    pipe.strlen("b")
    pipe.getrange("b", 1, -1)
    pipe.setnx("b", "no")
    pipe.getdel("b")
    pipe.exists("a", "b", "c")
    assert pipe.execute() == [
        True,
        b"1",
        2,
        12,
        True,
        [b"12", b"x", b"\x00\xff", None],
        3,
        3,
        b"yz",
        False,
        b"xyz",
        2,
    ]


def test_pipeline_reports_each_error_in_place(kvik_port):
    r = client(kvik_port)
    r.set("s", "text")
    pipe = r.pipeline(transaction=False)
    pipe.incr("s")
    pipe.get("s")
    pipe.execute_command("SETRANGE", "s", "-1", "x")
    pipe.set("n", "5")
    results = pipe.execute(raise_on_error=False)
    assert isinstance(results[0], redis.ResponseError)
    assert str(results[0]).endswith("value is not an integer or out of range")
    assert results[1] == b"text"
    assert isinstance(results[2], redis.ResponseError)
    assert str(results[2]).endswith("offset is out of range")
    assert results[3] is True
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.pipeline(transaction=False).incr("s").execute()


def test_resp3_typed_replies(kvik_port):
    r = client(kvik_port, protocol=3)
    hello = r.execute_command("HELLO", "3")
    assert hello[b"proto"] == 3
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.get("missing") is None
    assert r.incr("n") == 1
    assert r.incrbyfloat("f", 1.5) == 1.5
    assert r.mget("k", "missing", "n") == [b"v", None, b"1"]
    assert r.exists("k", "n", "missing") == 2
    assert r.ttl("k") == -1
    assert r.type("k") == b"string"
    assert r.object("encoding", "n") == b"int"
    # LCS IDX is a map in RESP3.
    r.mset({"l1": "ohmytext", "l2": "mynewtext"})
    idx = r.lcs("l1", "l2", idx=True, withmatchlen=True)
    assert idx[b"len"] == 6
    assert idx[b"matches"] == [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]]
    # Raw RESP3 types, without redis-py's per-command conversions.
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command("GET", "missing")
        assert conn.read_response() is None
        conn.send_command("STRLEN", "k")
        assert conn.read_response() == 1
        conn.send_command("BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9")
        assert conn.read_response() == [None]
    finally:
        r.connection_pool.release(conn)


def test_expire_and_ttl(kvik_port):
    r = client(kvik_port)
    r.set("k", "v", ex=100)
    assert 99 <= r.ttl("k") <= 100
    assert 99_000 <= r.pttl("k") <= 100_000
    assert r.expire("k", 200, xx=True) is True
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 50, lt=True) is True
    assert 49 <= r.ttl("k") <= 50
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    assert r.ttl("missing") == -2
    assert r.expire("missing", 10) is False

    deadline = datetime(2096, 10, 2, 7, 6, 40, tzinfo=timezone.utc)
    assert r.expireat("k", deadline) is True
    assert r.expiretime("k") == int(deadline.timestamp())
    assert r.pexpiretime("k") == int(deadline.timestamp()) * 1000
    r.set("p", "v", pxat=4_000_000_000_123)
    assert r.pexpiretime("p") == 4_000_000_000_123
    assert r.getex("p", persist=True) == b"v"
    assert r.ttl("p") == -1
    assert r.getex("p", ex=timedelta(seconds=30)) == b"v"
    assert 29 <= r.ttl("p") <= 30

    r.set("short", "v", px=50)
    assert r.exists("short") == 1
    time.sleep(0.12)
    assert r.get("short") is None
    assert r.exists("short") == 0


def test_scan_iter_collects_every_key(kvik_port):
    r = client(kvik_port)
    keys = {f"user:{i}".encode() for i in range(500)} | {f"other:{i}".encode() for i in range(100)}
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.set(k, "v")
    pipe.execute()
    seen = list(r.scan_iter(count=37))
    # SCAN may return a key twice, never miss one that stayed.
    assert set(seen) == keys
    assert set(r.scan_iter(match="user:1*", count=50)) == {k for k in keys if k.startswith(b"user:1")}
    assert set(r.scan_iter(_type="string")) == keys
    assert list(r.scan_iter(_type="list")) == []
    assert sorted(r.keys("other:*")) == sorted(k for k in keys if k.startswith(b"other:"))
    assert r.dbsize() == 600


def test_bitmaps_and_the_bitfield_helper(kvik_port):
    r = client(kvik_port)
    bf = r.bitfield("bf")
    assert bf.set("u8", 0, 255).get("u8", 0).incrby("u8", 0, 10).execute() == [0, 255, 9]
    assert r.bitfield("bf").overflow("SAT").incrby("i8", 8, 200).execute() == [127]
    assert r.bitfield("bf").overflow("FAIL").incrby("u8", "#0", 250).execute() == [None]
    assert r.bitfield_ro("bf", "u8", 0, items=[("i8", 8)]) == [9, 127]
    assert r.get("bf") == b"\x09\x7f"

    assert r.setbit("bits", 7, 1) == 0
    assert r.setbit("bits", 7, 0) == 1
    r.setbit("bits", 9, 1)
    assert r.getbit("bits", 9) == 1
    assert r.bitcount("bits") == 1
    assert r.bitcount("bits", 1, 1) == 1
    assert r.bitcount("bits", 0, 7, mode="BIT") == 0
    assert r.bitpos("bits", 1) == 9
    assert r.bitpos("bits", 0, 1, -1, mode="BIT") == 1
    r.set("x", b"\xf0")
    r.set("y", b"\x3c")
    assert r.bitop("AND", "dest", "x", "y") == 1
    assert r.get("dest") == b"\x30"
    assert r.bitop("NOT", "dest", "x") == 1
    assert r.get("dest") == b"\x0f"


def test_errors_raise_with_redis_texts(kvik_port):
    r = client(kvik_port)
    r.set("s", "text")
    cases = [
        (lambda: r.incr("s"), "value is not an integer or out of range"),
        (lambda: r.incrbyfloat("s", 1), "value is not a valid float"),
        (lambda: r.execute_command("SET", "k", "v", "NX", "XX"), "syntax error"),
        (lambda: r.execute_command("GETRANGE", "s"), "wrong number of arguments for 'getrange' command"),
        (lambda: r.setbit("s", -1, 1), "bit offset is not an integer or out of range"),
        (lambda: r.execute_command("SETBIT", "s", "0", "2"), "bit is not an integer or out of range"),
        (lambda: r.execute_command("EXPIRE", "s", "9223372036854775807"), "invalid expire time in 'expire' command"),
        (lambda: r.execute_command("SET", "s", "v", "EX", "0"), "invalid expire time in 'set' command"),
        (lambda: r.rename("missing", "x"), "no such key"),
        (lambda: r.execute_command("SELECT", "99"), "DB index is out of range"),
        (lambda: r.execute_command("INCRBY", "n", "1.5"), "value is not an integer or out of range"),
        (lambda: r.execute_command("BITOP", "NOT", "d", "a", "b"), "BITOP NOT must be called with a single source key."),
        (lambda: r.execute_command("OBJECT", "FREQ", "s"), "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."),
    ]
    for call, text in cases:
        with pytest.raises(redis.ResponseError) as err:
            call()
            pytest.fail(f"no error, expected {text!r}")
        assert str(err.value) == text
    # Errors leave the connection usable and the data alone.
    assert r.get("s") == b"text"


def test_decoded_replies(kvik_port):
    r = client(kvik_port, decode_responses=True)
    assert r.set("ключ", "значение") is True
    assert r.get("ключ") == "значение"
    assert r.strlen("ключ") == len("значение".encode())
    assert r.mset({"a": "1", "b": "two"}) is True
    assert r.mget("a", "b", "missing") == ["1", "two", None]
    assert r.incr("a") == 2
    assert r.getset("b", "three") == "two"
    assert r.getrange("ключ", 0, 1) == "з"
    assert sorted(r.keys("*")) == sorted(["a", "b", "ключ"])
    assert set(r.scan_iter()) == {"a", "b", "ключ"}
    assert r.type("a") == "string"
    assert r.object("encoding", "a") == "int"
    assert r.lcs("ключ", "b") == ""
    r3 = client(kvik_port, decode_responses=True, protocol=3)
    assert r3.get("b") == "three"
    assert r3.execute_command("HELLO", "3")["proto"] == 3


def test_many_clients_from_threads(kvik_port):
    shared = client(kvik_port, max_connections=32)
    threads_count, rounds = 16, 100
    errors = []

    def work(t: int) -> None:
        try:
            own = client(kvik_port)
            for i in range(rounds):
                shared.incr("total")
                own.set(f"t{t}", i)
                assert own.get(f"t{t}") == str(i).encode()
                pipe = shared.pipeline(transaction=False)
                pipe.incrby(f"sum{t % 4}", 2)
                pipe.mget(f"t{t}", "total")
                _, (mine, total) = pipe.execute()
                assert int(mine) == i and int(total) >= 1
            own.close()
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(threads_count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a client thread hung"
    assert errors == []
    assert int(shared.get("total")) == threads_count * rounds
    assert [int(v) for v in shared.mget(*(f"sum{i}" for i in range(4)))] == [threads_count * rounds // 2] * 4
