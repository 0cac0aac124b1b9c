"""Lists and hashes through redis-py's own helpers, the way applications use
them: pipelines, queues moved between lists, hashes as records, RESP3 typed
replies, HSCAN iteration and error texts."""

import pytest
import redis

from clients import client


def test_pipeline_of_list_commands(kvik_port):
    r = client(kvik_port)
    pipe = r.pipeline(transaction=False)
    pipe.rpush("q", "a", "b", "c")
    pipe.lpush("q", "z")
    pipe.lrange("q", 0, -1)
    pipe.llen("q")
    pipe.lindex("q", -1)
    pipe.lset("q", 1, "A")
    pipe.linsert("q", "before", "c", "b2")
    pipe.lpos("q", "c")
    pipe.lrem("q", 0, "z")
    pipe.ltrim("q", 0, 2)
    pipe.lrange("q", 0, -1)
    pipe.lpop("q", 2)
    pipe.rpop("q")
    pipe.exists("q")
    pipe.lpop("q")
    assert pipe.execute() == [
        3,
        4,
        [b"z", b"a", b"b", b"c"],
        4,
        b"c",
        True,
        5,
        4,
        1,
        True,
        [b"A", b"b", b"b2"],
        [b"A", b"b"],
        b"b2",
        0,
        None,
    ]


def test_work_queue_moves_items_atomically(kvik_port):
    r = client(kvik_port)
    r.rpush("jobs", *[f"job{i}" for i in range(10)])
    done = []
    while (job := r.lmove("jobs", "working", "LEFT", "RIGHT")) is not None:
        done.append(job)
        assert r.lrem("working", 1, job) == 1
    assert done == [f"job{i}".encode() for i in range(10)]
    assert r.exists("jobs", "working") == 0
    r.rpush("ring", "1", "2", "3")
    assert r.rpoplpush("ring", "ring") == b"3"
    assert r.lrange("ring", 0, -1) == [b"3", b"1", b"2"]
    assert r.lmpop(2, "empty", "ring", direction="RIGHT", count=2) == [b"ring", [b"2", b"1"]]
    assert r.lmpop(1, "empty", direction="LEFT") is None


def test_list_errors_in_place(kvik_port):
    r = client(kvik_port)
    r.set("s", "text")
    r.rpush("l", "x")
    pipe = r.pipeline(transaction=False)
    pipe.lpush("s", "a")
    pipe.lset("l", 5, "y")
    pipe.lset("missing", 0, "y")
    pipe.execute_command("LPOP", "l", "-1")
    pipe.lpos("l", "x", rank=0)
    results = pipe.execute(raise_on_error=False)
    assert str(results[0]).startswith("WRONGTYPE Operation against a key holding the wrong kind of value")
    assert str(results[1]) == "index out of range"
    assert str(results[2]) == "no such key"
    assert str(results[3]) == "value is out of range, must be positive"
    assert str(results[4]).startswith("RANK can't be zero")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.llen("s")


def test_hash_as_a_record(kvik_port):
    r = client(kvik_port)
    pipe = r.pipeline(transaction=False)
    pipe.hset("user:1", mapping={"name": "Ada", "visits": 1, "score": "1.5"})
    pipe.hincrby("user:1", "visits", 41)
    pipe.hincrbyfloat("user:1", "score", 0.25)
    pipe.hsetnx("user:1", "name", "Bob")
    pipe.hget("user:1", "name")
    pipe.hmget("user:1", ["visits", "score", "missing"])
    pipe.hexists("user:1", "name")
    pipe.hstrlen("user:1", "name")
    pipe.hlen("user:1")
    pipe.hgetall("user:1")
    pipe.hdel("user:1", "score", "missing")
    pipe.hkeys("user:1")
    pipe.hvals("user:1")
    pipe.type("user:1")
    pipe.object("encoding", "user:1")
    assert pipe.execute() == [
        3,
        42,
        1.75,
        False,
        b"Ada",
        [b"42", b"1.75", None],
        True,
        3,
        3,
        {b"name": b"Ada", b"visits": b"42", b"score": b"1.75"},
        1,
        [b"name", b"visits"],
        [b"Ada", b"42"],
        b"hash",
        b"listpack",
    ]
    assert r.hdel("user:1", "name", "visits") == 2
    assert r.exists("user:1") == 0


def test_big_hash_scan_and_random_fields(kvik_port):
    r = client(kvik_port)
    fields = {f"f{i}": f"v{i}" for i in range(1000)}
    r.hset("big", mapping=fields)
    assert r.object("encoding", "big") == b"hashtable"
    seen = dict(r.hscan_iter("big", count=100))
    assert seen == {k.encode(): v.encode() for k, v in fields.items()}
    matched = dict(r.hscan_iter("big", match="f99*"))
    assert set(matched) == {b"f99"} | {f"f99{i}".encode() for i in range(10)}
    picks = r.hrandfield("big", 10, withvalues=True)
    assert len(picks) == 20
    for field, value in zip(picks[::2], picks[1::2]):
        assert fields[field.decode()] == value.decode()
    assert len(r.hrandfield("big", -50)) == 50
    assert r.hrandfield("big").decode() in fields


def test_resp3_hash_and_list_replies(kvik_port):
    r = client(kvik_port, protocol=3)
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert r.hgetall("h") == {b"a": b"1", b"b": b"2"}
    assert r.hgetall("missing") == {}
    assert r.lpop("missing", 2) is None
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command("HRANDFIELD", "h", "-2", "WITHVALUES")
        pairs = conn.read_response()
        assert len(pairs) == 2 and all(len(p) == 2 for p in pairs)
        conn.send_command("LMPOP", "1", "missing", "LEFT")
        assert conn.read_response() is None
    finally:
        r.connection_pool.release(conn)
    config_default = r.config_get("hash-max-listpack-entries")
    assert config_default == {b"hash-max-listpack-entries": b"512"} or config_default == {
        "hash-max-listpack-entries": "512"
    }
    r.config_set("hash-max-listpack-entries", 1)
    r.hset("small", mapping={"x": "1", "y": "2"})
    assert r.object("encoding", "small") == b"hashtable"
    r.config_set("hash-max-listpack-entries", 512)
