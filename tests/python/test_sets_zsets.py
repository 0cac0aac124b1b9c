"""Sets and sorted sets through redis-py's own helpers, the way applications
call them: pipelines, zadd with a mapping and its flags, zrange with scores
(RESP2 and RESP3), score casting, scans and set algebra."""

import pytest
import redis

from clients import client


def test_set_pipeline(kvik_port):
    r = client(kvik_port)
    pipe = r.pipeline(transaction=False)
    pipe.sadd("tags", "a", "b", "c")
    pipe.sadd("tags", "c", "d")
    pipe.srem("tags", "a", "zz")
    pipe.scard("tags")
    pipe.sismember("tags", "b")
    pipe.smismember("tags", ["b", "x", "d"])
    pipe.smembers("tags")
    pipe.sadd("other", "d", "e")
    pipe.sinter("tags", "other")
    pipe.sunion("tags", "other")
    pipe.sdiff("tags", "other")
    pipe.sinterstore("both", ["tags", "other"])
    pipe.sintercard(2, ["tags", "other"])
    pipe.smove("tags", "other", "b")
    pipe.type("tags")
    assert pipe.execute() == [
        3,
        1,
        1,
        3,
        True,
        [1, 0, 1],
        {b"b", b"c", b"d"},
        2,
        {b"d"},
        {b"b", b"c", b"d", b"e"},
        {b"b", b"c"},
        1,
        1,
        True,
        b"set",
    ]


def test_integer_sets_and_random_picks(kvik_port):
    r = client(kvik_port, decode_responses=True)
    r.sadd("ids", *range(10))
    assert r.object("encoding", "ids") == "intset"
    assert r.smembers("ids") == {str(i) for i in range(10)}
    picks = r.srandmember("ids", 4)
    assert len(picks) == len(set(picks)) == 4 and set(picks) <= r.smembers("ids")
    assert len(r.srandmember("ids", -25)) == 25
    popped = r.spop("ids", 3)
    assert len(set(popped)) == 3 and r.scard("ids") == 7
    assert not r.smismember("ids", popped)[0]
    assert set(r.sscan_iter("ids", match="*")) == r.smembers("ids")
    r.sadd("ids", "x")
    assert r.object("encoding", "ids") == "hashtable"


def test_zadd_mapping_and_zrange_withscores(kvik_port):
    r = client(kvik_port)
    assert r.zadd("board", {"alice": 10, "bob": 7.5, "carol": 12}) == 3
    assert r.zadd("board", {"bob": 9, "dave": 1}, nx=True) == 1
    assert r.zadd("board", {"bob": 9}, xx=True, ch=True) == 1
    assert r.zadd("board", {"alice": 5}, gt=True) == 0
    assert r.zadd("board", {"alice": 1}, incr=True) == 11.0
    assert r.zrange("board", 0, -1, withscores=True) == [
        (b"dave", 1.0),
        (b"bob", 9.0),
        (b"alice", 11.0),
        (b"carol", 12.0),
    ]
    assert r.zrange("board", 0, 1, desc=True, withscores=True) == [(b"carol", 12.0), (b"alice", 11.0)]
    assert r.zrangebyscore("board", "(1", "+inf", start=0, num=2) == [b"bob", b"alice"]
    assert r.zrevrangebyscore("board", 11, 9, withscores=True, score_cast_func=int) == [(b"alice", 11), (b"bob", 9)]
    assert r.zrange("board", "(5", 11, byscore=True) == [b"bob", b"alice"]
    assert r.zscore("board", "bob") == 9.0
    assert r.zmscore("board", ["bob", "nobody"]) == [9.0, None]
    assert r.zrank("board", "carol") == 3 and r.zrevrank("board", "carol") == 0
    assert r.zincrby("board", 0.5, "dave") == 1.5
    assert r.zcount("board", 2, "+inf") == 3
    assert r.zcard("board") == 4


def test_zrange_withscores_in_resp3(kvik_port):
    r = client(kvik_port, protocol=3)
    r.zadd("z", {"a": 1, "b": 2.5, "c": -0.25})
    assert r.zrange("z", 0, -1, withscores=True) == [[b"c", -0.25], [b"a", 1.0], [b"b", 2.5]]
    assert r.zscore("z", "b") == 2.5
    assert r.zpopmin("z", 1) == [[b"c", -0.25]]
    assert r.zunion(["z", "z"], withscores=True) == [[b"a", 2.0], [b"b", 5.0]]


def test_sorted_set_pipeline_pops_and_algebra(kvik_port):
    r = client(kvik_port)
    r.zadd("a", {"x": 1, "y": 2, "z": 3})
    r.zadd("b", {"y": 10, "z": 20, "w": 30})
    r.sadd("s", "y")
    pipe = r.pipeline(transaction=False)
    pipe.zunionstore("u", ["a", "b"], aggregate="MAX")
    pipe.zrange("u", 0, -1, withscores=True)
    pipe.zinter({"a": 2, "b": 1}, withscores=True)
    pipe.zdiff(["b", "a"])
    pipe.zintercard(3, ["a", "b", "s"])
    pipe.zpopmax("u")
    pipe.zmpop(2, ["missing", "u"], min=True, count=2)
    pipe.zrangestore("r", "a", 0, 1)
    pipe.zremrangebyscore("a", "-inf", "(2")
    pipe.zrange("a", 0, -1)
    assert pipe.execute() == [
        4,
        [(b"x", 1.0), (b"y", 10.0), (b"z", 20.0), (b"w", 30.0)],
        [(b"y", 14.0), (b"z", 26.0)],
        [b"w"],
        1,
        [(b"w", 30.0)],
        [b"u", [[b"x", b"1"], [b"y", b"10"]]],
        2,
        1,
        [b"y", b"z"],
    ]


def test_lex_ranges_scan_and_errors(kvik_port):
    r = client(kvik_port)
    r.zadd("names", {n: 0 for n in ["ann", "bob", "cid", "dan"]})
    assert r.zrangebylex("names", "[b", "(d") == [b"bob", b"cid"]
    assert r.zrevrangebylex("names", "+", "-", start=1, num=2) == [b"cid", b"bob"]
    assert r.zlexcount("names", "-", "+") == 4
    assert dict(r.zscan_iter("names")) == {b"ann": 0.0, b"bob": 0.0, b"cid": 0.0, b"dan": 0.0}
    r.set("plain", "text")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.zadd("plain", {"a": 1})
    with pytest.raises(redis.ResponseError, match="not compatible"):
        r.execute_command("ZADD", "names", "NX", "XX", 1, "a")
    with pytest.raises(redis.ResponseError, match="min or max is not a float"):
        r.zrangebyscore("names", "x", 1)
    r.zadd("inf", {"m": float("inf")})
    with pytest.raises(redis.ResponseError, match="resulting score is not a number"):
        r.zincrby("inf", float("-inf"), "m")
