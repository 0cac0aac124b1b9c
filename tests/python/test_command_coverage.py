"""Every command of the data types work, called through redis-py's own
methods, gives kvik the same results as redis-server.

Each scenario below runs once against each server with a fresh keyspace;
every call is recorded under the command names it exercises, with its
result (or the error it raised) made comparable: most are compared as
they are, the truly random ones (SPOP, SRANDMEMBER, HRANDFIELD,
ZRANDMEMBER, auto-generated stream ids, times in XINFO and XPENDING) by
shape or membership. The two recordings must be equal, and together the
scenarios must have called every command of `LISTED`, so a command kvik
lacks fails the comparison (redis-py raises "unknown command" only there).

Methods redis-py does not have (XSETID, GEORADIUS_RO,
GEORADIUSBYMEMBER_RO, CLIENT CACHING) go through `execute_command`.
"""

import threading
import time
import warnings

import pytest
import redis

LISTED = set(
    """
    LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LTRIM LINSERT LPOS RPOPLPUSH LMOVE LMPOP
    BLPOP BRPOP BRPOPLPUSH BLMOVE BLMPOP
    HSET HSETNX HGET HMGET HMSET HGETALL HDEL HEXISTS HLEN HSTRLEN HKEYS HVALS HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN
    SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE
    SDIFF SDIFFSTORE SMOVE SSCAN
    ZADD ZREM ZCARD ZCOUNT ZLEXCOUNT ZSCORE ZMSCORE ZINCRBY ZRANK ZREVRANK ZRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE
    ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE ZRANGESTORE ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX ZPOPMIN ZPOPMAX
    ZMPOP BZPOPMIN BZPOPMAX BZMPOP ZRANDMEMBER ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE ZINTERCARD ZSCAN
    PFADD PFCOUNT PFMERGE
    GEOADD GEODIST GEOHASH GEOPOS GEOSEARCH GEOSEARCHSTORE GEORADIUS GEORADIUSBYMEMBER GEORADIUS_RO
    GEORADIUSBYMEMBER_RO
    XADD XLEN XRANGE XREVRANGE XDEL XTRIM XREAD XGROUP|CREATE XGROUP|SETID XGROUP|DESTROY XGROUP|CREATECONSUMER
    XGROUP|DELCONSUMER XREADGROUP XACK XPENDING XCLAIM XAUTOCLAIM XINFO|STREAM XINFO|GROUPS XINFO|CONSUMERS XSETID
    SORT SORT_RO
    MULTI EXEC DISCARD WATCH UNWATCH
    SUBSCRIBE PSUBSCRIBE UNSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB|CHANNELS PUBSUB|NUMSUB PUBSUB|NUMPAT
    PUBSUB|SHARDCHANNELS PUBSUB|SHARDNUMSUB SSUBSCRIBE SUNSUBSCRIBE SPUBLISH
    CLIENT|TRACKING CLIENT|CACHING CLIENT|GETREDIR CLIENT|TRACKINGINFO CLIENT|UNBLOCK
    """.split()
)


# --- making results comparable ---------------------------------------------


def exact(value):
    return value


def unordered(value):
    """A set, or a list whose order is the server's hash order."""
    return sorted(value)


def kind(value):
    """Only the type and length of a random pick."""
    if isinstance(value, (list, tuple, set, dict)):
        return (type(value).__name__, len(value))
    return type(value).__name__


def scan_all(value):
    """A scan asked for everything in one go: cursor and the items, sorted."""
    cursor, items = value
    if isinstance(items, dict):
        items = sorted(items.items())
    else:
        items = sorted(items)
    return cursor, items


class Recorder:
    """Calls made on one server: their command names and comparable results."""

    def __init__(self, port: int, protocol: int):
        self.port = port
        self.protocol = protocol
        self.results = []
        self.called = set()

    def client(self, **kwargs) -> redis.Redis:
        kwargs.setdefault("protocol", self.protocol)
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5, **kwargs)

    def __call__(self, names: str, fn, *args, how=exact, **kwargs):
        """Call `fn`, record its result (or error) as `how` makes it, return the raw result."""
        try:
            value = fn(*args, **kwargs)
            shown = how(value)
        except redis.ResponseError as e:
            value, shown = e, ("error", type(e).__name__, str(e))
        self.results.append((names, shown))
        self.called.update(names.split())
        return value

    def note(self, names: str, value):
        """Record a value observed outside a call (a pub/sub message, a thread's result)."""
        self.results.append((names, value))
        self.called.update(names.split())


# --- scenarios ----------------------------------------------------------------


def lists(rec: Recorder):
    r = rec.client()
    rec("LPUSH", r.lpush, "l", "a", "b", "c")
    rec("RPUSH", r.rpush, "l", "d", "e", "b")
    rec("LPUSHX", r.lpushx, "l", "x")
    rec("LPUSHX", r.lpushx, "missing", "x")
    rec("RPUSHX", r.rpushx, "l", "y")
    rec("LLEN", r.llen, "l")
    rec("LRANGE", r.lrange, "l", 0, -1)
    rec("LINDEX", r.lindex, "l", 2)
    rec("LINDEX", r.lindex, "l", 100)
    rec("LSET", r.lset, "l", 0, "first")
    rec("LSET", r.lset, "l", 100, "nope")
    rec("LREM", r.lrem, "l", 1, "b")
    rec("LINSERT", r.linsert, "l", "BEFORE", "d", "before-d")
    rec("LINSERT", r.linsert, "l", "after", "nothing", "z")
    rec("LPOS", r.lpos, "l", "d")
    rec("LPOS", r.lpos, "l", "b", rank=-1, count=0, maxlen=10)
    rec("LTRIM", r.ltrim, "l", 0, 6)
    rec("LPOP", r.lpop, "l")
    rec("RPOP", r.rpop, "l", 2)
    rec("RPOPLPUSH", r.rpoplpush, "l", "l2")
    rec("LMOVE", r.lmove, "l", "l2", "LEFT", "RIGHT")
    rec("LMPOP", r.lmpop, 2, "missing", "l2", direction="RIGHT", count=5)
    rec("LMPOP", r.lmpop, 1, "missing", direction="LEFT")
    rec("LRANGE", r.lrange, "l", 0, -1)
    r.set("str", "text")
    rec("LPUSH", r.lpush, "str", "x")
    # Blocking ones with data answer at once; on empty keys they time out.
    r.rpush("b1", "1", "2", "3", "4", "5", "6")
    rec("BLPOP", r.blpop, ["empty", "b1"], timeout=1)
    rec("BRPOP", r.brpop, ["b1"], timeout=1)
    rec("BRPOPLPUSH", r.brpoplpush, "b1", "b2", timeout=1)
    rec("BLMOVE", r.blmove, "b1", "b2", 1, "RIGHT", "LEFT")
    rec("BLMPOP", r.blmpop, 1, 2, "empty", "b1", direction="LEFT", count=2)
    rec("BLPOP", r.blpop, ["empty"], timeout=0.05)
    rec("BRPOPLPUSH", r.brpoplpush, "empty", "b2", timeout=0.05)
    rec("BLMOVE", r.blmove, "empty", "b2", 0.05, "LEFT", "LEFT")
    rec("BLMPOP", r.blmpop, 0.05, 1, "empty", direction="RIGHT")
    rec("BLPOP", r.blpop, ["str"], timeout=0.05)
    rec("LRANGE", r.lrange, "b2", 0, -1)
    # A blocked client is served by another's push.
    blocked = rec.client()
    got = {}
    waiter = threading.Thread(target=lambda: got.update(v=blocked.brpop(["wake"], timeout=5)))
    waiter.start()
    wait_blocked(r, 1)
    r.lpush("wake", "late")
    waiter.join()
    rec.note("BRPOP", got["v"])


def wait_blocked(r: redis.Redis, n: int):
    """Until `n` clients are blocked (INFO clients)."""
    deadline = time.monotonic() + 5
    while r.info("clients")["blocked_clients"] < n:
        assert time.monotonic() < deadline, "the client did not block"
        time.sleep(0.01)


def hashes(rec: Recorder):
    r = rec.client()
    rec("HSET", r.hset, "h", "f1", "v1")
    rec("HSET", r.hset, "h", mapping={"f2": "2", "f3": "3.5", "f4": "text"})
    rec("HSETNX", r.hsetnx, "h", "f1", "other")
    rec("HSETNX", r.hsetnx, "h", "f5", "five")
    rec("HGET", r.hget, "h", "f1")
    rec("HGET", r.hget, "h", "none")
    rec("HMGET", r.hmget, "h", ["f1", "none", "f2"])
    # Some redis-py versions warn that hmset is deprecated; 8.2 does not.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        rec("HMSET", r.hmset, "h", {"f6": "6", "f7": "7"})
    rec("HGETALL", r.hgetall, "h")
    rec("HDEL", r.hdel, "h", "f7", "none")
    rec("HEXISTS", r.hexists, "h", "f6")
    rec("HEXISTS", r.hexists, "h", "f7")
    rec("HLEN", r.hlen, "h")
    rec("HSTRLEN", r.hstrlen, "h", "f4")
    rec("HKEYS", r.hkeys, "h", how=unordered)
    rec("HVALS", r.hvals, "h", how=unordered)
    rec("HINCRBY", r.hincrby, "h", "f2", 40)
    rec("HINCRBY", r.hincrby, "h", "f4", 1)
    rec("HINCRBYFLOAT", r.hincrbyfloat, "h", "f3", 0.25)
    rec("HINCRBYFLOAT", r.hincrbyfloat, "h", "f4", 1.0)
    fields = set(r.hkeys("h"))
    pick = rec("HRANDFIELD", r.hrandfield, "h", how=kind)
    assert pick in fields
    picks = rec("HRANDFIELD", r.hrandfield, "h", 3, how=kind)
    assert len(set(picks)) == 3 and set(picks) <= fields
    rec("HRANDFIELD", r.hrandfield, "h", -8, how=kind)
    rec("HRANDFIELD", r.hrandfield, "h", 2, withvalues=True, how=kind)
    rec("HRANDFIELD", r.hrandfield, "missing")
    rec("HSCAN", r.hscan, "h", 0, match="f*", count=1000, how=scan_all)
    rec("HGETALL", r.hgetall, "h")


def sets(rec: Recorder):
    r = rec.client()
    rec("SADD", r.sadd, "s1", "a", "b", "c", "d")
    rec("SADD", r.sadd, "s2", "c", "d", "e")
    rec("SADD", r.sadd, "nums", *range(10))
    rec("SREM", r.srem, "s1", "d", "zz")
    rec("SMEMBERS", r.smembers, "s1")
    rec("SISMEMBER", r.sismember, "s1", "a")
    rec("SMISMEMBER", r.smismember, "s1", ["a", "zz", "c"])
    rec("SCARD", r.scard, "s1")
    rec("SINTER", r.sinter, ["s1", "s2"])
    rec("SINTERCARD", r.sintercard, 2, ["s1", "s2"])
    rec("SINTERCARD", r.sintercard, 2, ["nums", "nums"], limit=3)
    rec("SINTERSTORE", r.sinterstore, "si", ["s1", "s2"])
    rec("SUNION", r.sunion, ["s1", "s2"])
    rec("SUNIONSTORE", r.sunionstore, "su", ["s1", "s2"])
    rec("SDIFF", r.sdiff, ["s1", "s2"])
    rec("SDIFFSTORE", r.sdiffstore, "sd", ["s1", "s2"])
    rec("SMOVE", r.smove, "s1", "s2", "a")
    rec("SMOVE", r.smove, "s1", "s2", "zz")
    rec("SMEMBERS", r.smembers, "s2")
    members = set(r.smembers("nums"))
    one = rec("SRANDMEMBER", r.srandmember, "nums", how=kind)
    assert one in members
    some = rec("SRANDMEMBER", r.srandmember, "nums", 4, how=kind)
    assert len(set(some)) == 4 and set(some) <= members
    rec("SRANDMEMBER", r.srandmember, "nums", -15, how=kind)
    popped = rec("SPOP", r.spop, "nums", how=kind)
    more = rec("SPOP", r.spop, "nums", 3, how=kind)
    assert {popped, *more} <= members and len({popped, *more}) == 4
    rec("SCARD", r.scard, "nums")
    rec("SSCAN", r.sscan, "s2", 0, count=1000, how=scan_all)
    r.set("str", "x")
    rec("SADD", r.sadd, "str", "a")


def zsets(rec: Recorder):
    r = rec.client()
    rec("ZADD", r.zadd, "z", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    rec("ZADD", r.zadd, "z", {"a": 10, "b": 0}, gt=True, ch=True)
    rec("ZADD", r.zadd, "z", {"c": 2.5}, lt=True)
    rec("ZADD", r.zadd, "z", {"f": 1}, xx=True)
    rec("ZADD", r.zadd, "z", {"a": 1}, nx=True)
    rec("ZADD", r.zadd, "z", {"e": 1.5}, incr=True)
    rec("ZADD", r.zadd, "lex", {m: 0 for m in "abcdefg"})
    rec("ZADD", r.zadd, "z2", {"a": 1, "c": 1, "x": 7})
    rec("ZREM", r.zrem, "z", "d", "zz")
    rec("ZCARD", r.zcard, "z")
    rec("ZCOUNT", r.zcount, "z", 1, "(10")
    rec("ZLEXCOUNT", r.zlexcount, "lex", "[b", "(e")
    rec("ZSCORE", r.zscore, "z", "e")
    rec("ZMSCORE", r.zmscore, "z", ["a", "zz", "c"])
    rec("ZINCRBY", r.zincrby, "z", 2.5, "b")
    rec("ZRANK", r.zrank, "z", "c")
    rec("ZREVRANK", r.zrevrank, "z", "c")
    rec("ZRANK", r.zrank, "z", "zz")
    rec("ZRANGE", r.zrange, "z", 0, -1, withscores=True)
    rec("ZRANGE", r.zrange, "z", "(1", "+inf", byscore=True, offset=1, num=2)
    rec("ZRANGE", r.zrange, "lex", "[c", "-", desc=True, bylex=True)
    rec("ZRANGEBYSCORE", r.zrangebyscore, "z", "-inf", 5, withscores=True)
    rec("ZREVRANGEBYSCORE", r.zrevrangebyscore, "z", "+inf", "(2", start=0, num=2)
    rec("ZRANGEBYLEX", r.zrangebylex, "lex", "(a", "[d")
    rec("ZREVRANGEBYLEX", r.zrevrangebylex, "lex", "+", "[e")
    rec("ZREVRANGE", r.zrevrange, "z", 0, 2, withscores=True)
    rec("ZRANGESTORE", r.zrangestore, "zs", "z", 1, 3)
    rec("ZRANGESTORE", r.zrangestore, "zs2", "z", 2, 10, byscore=True)
    rec("ZUNION", r.zunion, ["z", "z2"], withscores=True)
    rec("ZUNION", r.zunion, {"z": 2, "z2": 1}, aggregate="MAX", withscores=True)
    rec("ZINTER", r.zinter, ["z", "z2"], withscores=True)
    rec("ZDIFF", r.zdiff, ["z", "z2"], withscores=True)
    rec("ZUNIONSTORE", r.zunionstore, "zu", ["z", "z2"], aggregate="MIN")
    rec("ZINTERSTORE", r.zinterstore, "zi", {"z": 1, "z2": 3})
    rec("ZDIFFSTORE", r.zdiffstore, "zd", ["z", "z2"])
    rec("ZINTERCARD", r.zintercard, 2, ["z", "z2"])
    rec("ZINTERCARD", r.zintercard, 2, ["z", "z"], limit=2)
    rec("ZRANGE", r.zrange, "zu", 0, -1, withscores=True)
    members = set(r.zrange("z", 0, -1))
    pick = rec("ZRANDMEMBER", r.zrandmember, "z", how=kind)
    assert pick in members
    picks = rec("ZRANDMEMBER", r.zrandmember, "z", 3, how=kind)
    assert len(set(picks)) == 3 and set(picks) <= members
    rec("ZRANDMEMBER", r.zrandmember, "z", -7, withscores=True, how=kind)
    rec("ZSCAN", r.zscan, "z", 0, count=1000, how=scan_all)
    rec("ZREMRANGEBYRANK", r.zremrangebyrank, "zu", 0, 0)
    rec("ZREMRANGEBYSCORE", r.zremrangebyscore, "zu", "(1", 3)
    rec("ZREMRANGEBYLEX", r.zremrangebylex, "lex", "[f", "+")
    rec("ZPOPMIN", r.zpopmin, "z")
    rec("ZPOPMAX", r.zpopmax, "z", 2)
    rec("ZMPOP", r.zmpop, 2, ["missing", "z2"], min=True, count=2)
    rec("ZMPOP", r.zmpop, 1, ["missing"], max=True)
    r.zadd("bz", {"p": 1, "q": 2, "r": 3, "s": 4})
    rec("BZPOPMIN", r.bzpopmin, ["empty", "bz"], timeout=1)
    rec("BZPOPMAX", r.bzpopmax, ["bz"], timeout=1)
    rec("BZMPOP", r.bzmpop, 1, 2, ["empty", "bz"], min=True, count=5)
    rec("BZPOPMIN", r.bzpopmin, ["empty"], timeout=0.05)
    rec("BZPOPMAX", r.bzpopmax, ["empty"], timeout=0.05)
    rec("BZMPOP", r.bzmpop, 0.05, 1, ["empty"], max=True)
    r.set("str", "x")
    rec("ZADD", r.zadd, "str", {"a": 1})


def hyperloglogs(rec: Recorder):
    r = rec.client()
    rec("PFADD", r.pfadd, "h1", "a", "b", "c")
    rec("PFADD", r.pfadd, "h1", "a")
    rec("PFADD", r.pfadd, "h2", *[f"e{i}" for i in range(500)])
    rec("PFCOUNT", r.pfcount, "h1")
    rec("PFCOUNT", r.pfcount, "h1", "h2", "missing")
    rec("PFMERGE", r.pfmerge, "h3", "h1", "h2")
    rec("PFCOUNT", r.pfcount, "h3")
    r.set("str", "not an hll")
    rec("PFCOUNT", r.pfcount, "str")


def geo(rec: Recorder):
    r = rec.client()
    places = (13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania", 12.496366, 41.902782, "Rome")
    rec("GEOADD", r.geoadd, "sicily", places)
    rec("GEOADD", r.geoadd, "sicily", (13.361389, 38.115556, "Palermo"), ch=True)
    rec("GEOADD", r.geoadd, "sicily", (200, 0, "bad"))
    rec("GEODIST", r.geodist, "sicily", "Palermo", "Catania", unit="km")
    rec("GEODIST", r.geodist, "sicily", "Palermo", "nowhere")
    rec("GEOHASH", r.geohash, "sicily", "Palermo", "nowhere")
    rec("GEOPOS", r.geopos, "sicily", "Rome", "nowhere")
    rec(
        "GEOSEARCH",
        r.geosearch,
        "sicily",
        longitude=15,
        latitude=37,
        radius=200,
        unit="km",
        sort="ASC",
        withcoord=True,
        withdist=True,
        withhash=True,
    )
    rec("GEOSEARCH", r.geosearch, "sicily", member="Palermo", width=400, height=900, unit="km", sort="DESC", count=2)
    rec("GEOSEARCHSTORE", r.geosearchstore, "near", "sicily", longitude=15, latitude=37, radius=300, unit="km")
    rec("GEOSEARCHSTORE", r.geosearchstore, "dists", "sicily", member="Rome", radius=1000, unit="km", storedist=True)
    rec("ZRANGE", r.zrange, "dists", 0, -1, withscores=True)
    rec("GEORADIUS", r.georadius, "sicily", 15, 37, 200, unit="km", withdist=True, sort="ASC")
    rec("GEORADIUS", r.georadius, "sicily", 15, 37, 500, unit="km", store="stored")
    rec("GEORADIUSBYMEMBER", r.georadiusbymember, "sicily", "Palermo", 300, unit="km", withcoord=True, sort="ASC")
    rec("GEORADIUS_RO", r.execute_command, "GEORADIUS_RO", "sicily", 15, 37, 200, "km", "WITHDIST", "ASC")
    rec("GEORADIUSBYMEMBER_RO", r.execute_command, "GEORADIUSBYMEMBER_RO", "sicily", "Rome", 500, "km", "ASC")
    rec("GEORADIUS_RO", r.execute_command, "GEORADIUS_RO", "sicily", 15, 37, 200, "km", "STORE", "x")


def no_times(value):
    """XINFO and XPENDING results without the fields that hold clock readings."""
    clock = {b"idle", b"inactive", b"seen-time", b"active-time", b"time_since_delivered", b"seen_time", b"delivery_time"}
    clock |= {k.decode() for k in clock}
    if isinstance(value, dict):
        return {k: no_times(v) for k, v in value.items() if k not in clock}
    if isinstance(value, list):
        return [no_times(v) for v in value]
    if isinstance(value, int) and value > 10**12:
        return "<unix time in ms>"
    return value


def streams(rec: Recorder):
    r = rec.client()
    auto = rec("XADD", r.xadd, "s", {"f": "v"}, how=kind)
    assert b"-" in auto
    rec("XADD", r.xadd, "x", {"a": "1"}, id="1-1")
    rec("XADD", r.xadd, "x", {"b": "2"}, id="2-1")
    rec("XADD", r.xadd, "x", {"c": "3", "d": "4"}, id="3-*")
    rec("XADD", r.xadd, "x", {"e": "5"}, id="1-0")
    rec("XADD", r.xadd, "nostream", {"e": "5"}, id="1-0", nomkstream=True)
    rec("XADD", r.xadd, "x", {"g": "7"}, id="5-0", maxlen=10, approximate=False)
    rec("XLEN", r.xlen, "x")
    rec("XRANGE", r.xrange, "x", "-", "+")
    rec("XRANGE", r.xrange, "x", "(1-1", "+", count=2)
    rec("XREVRANGE", r.xrevrange, "x", "+", "-", count=3)
    rec("XDEL", r.xdel, "x", "5-0", "9-9")
    rec("XADD", r.xadd, "t", {"n": "1"}, id="1-0")
    rec("XADD", r.xadd, "t", {"n": "2"}, id="2-0")
    rec("XADD", r.xadd, "t", {"n": "3"}, id="3-0")
    rec("XTRIM", r.xtrim, "t", maxlen=2, approximate=False)
    rec("XTRIM", r.xtrim, "t", minid="3-0")
    rec("XSETID", r.execute_command, "XSETID", "t", "10-0")
    rec("XSETID", r.execute_command, "XSETID", "t", "1-0")
    rec("XREAD", r.xread, {"x": "0", "t": "0"}, count=2)
    rec("XREAD", r.xread, {"x": "$"}, block=50)
    rec("XREAD", r.xread, {"x": "2-0"}, block=1000)
    rec("XGROUP|CREATE", r.xgroup_create, "x", "g", id="0")
    rec("XGROUP|CREATE", r.xgroup_create, "x", "g", id="0")
    rec("XGROUP|CREATE", r.xgroup_create, "new", "g", id="$", mkstream=True)
    rec("XGROUP|CREATE", r.xgroup_create, "x", "late", id="$")
    rec("XGROUP|SETID", r.xgroup_setid, "x", "late", id="2-1")
    rec("XGROUP|CREATECONSUMER", r.xgroup_createconsumer, "x", "g", "alice")
    rec("XGROUP|CREATECONSUMER", r.xgroup_createconsumer, "x", "g", "alice")
    rec("XREADGROUP", r.xreadgroup, "g", "alice", {"x": ">"}, count=2)
    rec("XREADGROUP", r.xreadgroup, "g", "bob", {"x": ">"})
    rec("XREADGROUP", r.xreadgroup, "g", "bob", {"x": ">"}, block=50)
    rec("XREADGROUP", r.xreadgroup, "g", "alice", {"x": "0"})
    rec("XREADGROUP", r.xreadgroup, "late", "carol", {"x": ">"}, noack=True)
    rec("XREADGROUP", r.xreadgroup, "nogroup", "c", {"x": ">"})
    rec("XPENDING", r.xpending, "x", "g")
    rec("XPENDING", r.xpending_range, "x", "g", "-", "+", 10, how=no_times)
    rec("XPENDING", r.xpending_range, "x", "g", "-", "+", 10, consumername="bob", how=no_times)
    rec("XACK", r.xack, "x", "g", "1-1", "9-9")
    rec("XCLAIM", r.xclaim, "x", "g", "dave", 0, ["2-1"])
    rec("XCLAIM", r.xclaim, "x", "g", "dave", 0, ["3-0"], justid=True)
    rec("XAUTOCLAIM", r.xautoclaim, "x", "g", "erin", 0, "0-0", count=1)
    rec("XAUTOCLAIM", r.xautoclaim, "x", "g", "erin", 0, "0-0", justid=True)
    rec("XINFO|STREAM", r.xinfo_stream, "x", how=no_times)
    rec("XINFO|STREAM", r.xinfo_stream, "x", full=True, how=no_times)
    rec("XINFO|GROUPS", r.xinfo_groups, "x", how=no_times)
    rec("XINFO|CONSUMERS", r.xinfo_consumers, "x", "g", how=no_times)
    rec("XGROUP|DELCONSUMER", r.xgroup_delconsumer, "x", "g", "erin")
    rec("XGROUP|DESTROY", r.xgroup_destroy, "x", "late")
    rec("XGROUP|DESTROY", r.xgroup_destroy, "x", "late")
    rec("XINFO|GROUPS", r.xinfo_groups, "x", how=no_times)
    # A reader blocked on the stream is served by another client's XADD.
    blocked = rec.client()
    got = {}
    waiter = threading.Thread(target=lambda: got.update(v=blocked.xread({"x": "$"}, block=5000)))
    waiter.start()
    wait_blocked(r, 1)
    r.xadd("x", {"late": "1"}, id="50-0")
    waiter.join()
    rec.note("XREAD", got["v"])


def sorting(rec: Recorder):
    r = rec.client()
    r.rpush("ids", 3, 1, 2, 10)
    r.mset({"w_1": 30, "w_2": 10, "w_3": 20, "w_10": 5, "n_1": "one", "n_2": "two", "n_3": "three"})
    r.hset("o_1", "name", "first")
    r.rpush("words", "pear", "apple", "fig")
    rec("SORT", r.sort, "ids")
    rec("SORT", r.sort, "ids", desc=True, start=1, num=2)
    rec("SORT", r.sort, "words", alpha=True)
    rec("SORT", r.sort, "words")
    rec("SORT", r.sort, "ids", by="w_*", get=["#", "n_*", "o_*->name"])
    rec("SORT", r.sort, "ids", by="nosort", store="sorted")
    rec("LRANGE", r.lrange, "sorted", 0, -1)
    rec("SORT_RO", r.sort_ro, "ids", by="w_*", desc=True)
    rec("SORT_RO", r.sort_ro, "words", alpha=True, start=0, num=2)


def transactions(rec: Recorder):
    r = rec.client()
    pipe = r.pipeline(transaction=True)
    pipe.set("a", 1).incr("a").lpush("l", "x").get("missing").zadd("z", {"m": 1}).zrange("z", 0, -1, withscores=True)
    rec("MULTI EXEC", pipe.execute)
    # A runtime error comes back in its place.
    pipe = r.pipeline(transaction=True)
    pipe.lpush("a", "x").incr("a")
    rec("MULTI EXEC", pipe.execute, raise_on_error=False, how=lambda v: [repr(x) for x in v])
    # A queue-time error aborts it all.
    pipe = r.pipeline(transaction=True)
    pipe.set("b", 1).execute_command("NOSUCHCOMMAND")
    try:
        pipe.execute()
        rec.note("MULTI EXEC", "ran")
    except redis.ResponseError as e:
        rec.note("MULTI EXEC", str(e))
    rec("GET", r.get, "b")
    # WATCH: a change by another client fails EXEC; UNWATCH forgets.
    other = rec.client()
    with r.pipeline() as pipe:
        rec("WATCH", pipe.watch, "a")
        other.incr("a")
        pipe.multi()
        pipe.get("a")
        try:
            pipe.execute()
            rec.note("EXEC", "ran")
        except redis.WatchError:
            rec.note("EXEC", "watch failed")
    with r.pipeline() as pipe:
        pipe.watch("a")
        other.incr("a")
        rec("UNWATCH", pipe.unwatch)
        pipe.multi()
        pipe.get("a")
        rec("MULTI EXEC", pipe.execute)
    # The client's own write after WATCH fails its EXEC too.
    with r.pipeline() as pipe:
        pipe.watch("a")
        pipe.set("a", 100)
        pipe.multi()
        pipe.get("a")
        try:
            pipe.execute()
            rec.note("EXEC", "ran")
        except redis.WatchError:
            rec.note("EXEC", "watch failed")
    # DISCARD drops what was queued.
    single = rec.client(single_connection_client=True)
    rec("MULTI", single.execute_command, "MULTI")
    rec("MULTI", single.execute_command, "SET", "c", "queued")
    rec("DISCARD", single.execute_command, "DISCARD")
    rec("DISCARD", single.execute_command, "DISCARD")
    rec("GET", single.get, "c")
    # Blocking commands inside a transaction never block.
    pipe = r.pipeline(transaction=True)
    pipe.blpop(["empty"], timeout=0).bzpopmin(["empty"], timeout=0).blmove("empty", "x", 0, "LEFT", "LEFT")
    pipe.xread({"x": "$"}, block=0)
    rec("MULTI EXEC BLPOP BZPOPMIN BLMOVE XREAD", pipe.execute)


def next_message(p, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = p.get_message(timeout=0.1)
        if msg is not None:
            return msg
    return None


def pubsub(rec: Recorder):
    r = rec.client()
    p = r.pubsub()
    p.subscribe("news", "sport")
    p.psubscribe("n*")
    p.ssubscribe("shard")
    confirmations = [next_message(p) for _ in range(4)]
    rec.note("SUBSCRIBE PSUBSCRIBE SSUBSCRIBE", confirmations)
    rec("PUBLISH", r.publish, "news", "hello")
    rec("SPUBLISH", r.spublish, "shard", "sharded")
    rec("PUBLISH", r.publish, "nobody", "x")
    rec.note("SUBSCRIBE PSUBSCRIBE SSUBSCRIBE", [next_message(p) for _ in range(4)])
    rec("PUBSUB|CHANNELS", r.pubsub_channels, how=unordered)
    rec("PUBSUB|CHANNELS", r.pubsub_channels, "s*")
    rec("PUBSUB|NUMSUB", r.pubsub_numsub, "news", "none")
    rec("PUBSUB|NUMPAT", r.pubsub_numpat)
    rec("PUBSUB|SHARDCHANNELS", r.pubsub_shardchannels)
    rec("PUBSUB|SHARDNUMSUB", r.pubsub_shardnumsub, "shard", "none")
    p.unsubscribe("sport")
    p.punsubscribe()
    p.sunsubscribe("shard")
    rec.note("UNSUBSCRIBE PUNSUBSCRIBE SUNSUBSCRIBE", [next_message(p) for _ in range(3)])
    rec("PUBSUB|NUMPAT", r.pubsub_numpat)
    rec("PUBSUB|CHANNELS", r.pubsub_channels)
    p.close()


def tracking(rec: Recorder):
    r = rec.client(single_connection_client=True)
    # A RESP2 listener gets invalidations as pub/sub messages (a RESP3 one as pushes).
    p = rec.client(protocol=2).pubsub()
    p.subscribe("__redis__:invalidate")
    rec.note("SUBSCRIBE", next_message(p))
    # The listener is the one connection subscribed to a channel.
    listeners = [c for c in r.client_list() if c.get("sub") == "1"]
    assert len(listeners) == 1, listeners
    listener_id = int(listeners[0]["id"])
    r.set("k", "v")
    r.set("other", "v")
    rec("CLIENT|TRACKING", r.client_tracking_on, clientid=listener_id)
    rec.note("CLIENT|GETREDIR", r.client_getredir() == listener_id)
    info = r.client_trackinginfo()
    rec.note("CLIENT|TRACKINGINFO", [x if x != listener_id else "<listener>" for x in info])
    rec("GET", r.get, "k")
    rec("SET", rec.client().set, "k", "changed")
    msg = next_message(p)
    rec.note("CLIENT|TRACKING", (msg["type"], msg["channel"], msg["data"]))
    rec("CLIENT|TRACKING", r.client_tracking_off)
    rec("CLIENT|TRACKING", r.client_tracking_on, clientid=listener_id, optin=True)
    rec("CLIENT|CACHING", r.execute_command, "CLIENT", "CACHING", "YES")
    rec("GET", r.get, "other")
    rec("SET", rec.client().set, "other", "changed")
    msg = next_message(p)
    rec.note("CLIENT|TRACKING", (msg["type"], msg["channel"], msg["data"]))
    rec("CLIENT|CACHING", r.execute_command, "CLIENT", "CACHING", "NO")
    rec("CLIENT|TRACKING", r.client_tracking_off)
    rec("CLIENT|TRACKING", r.client_tracking_on, clientid=listener_id, bcast=True, prefix=["user:"])
    info = r.client_trackinginfo()
    rec.note("CLIENT|TRACKINGINFO", [x if x != listener_id else "<listener>" for x in info])
    rec("SET", rec.client().set, "user:1", "x")
    msg = next_message(p)
    rec.note("CLIENT|TRACKING", (msg["type"], msg["channel"], msg["data"]))
    rec("CLIENT|TRACKING", r.client_tracking_off)
    rec.note("CLIENT|GETREDIR", r.client_getredir())
    p.close()


def unblock(rec: Recorder):
    r = rec.client()
    blocked = rec.client(single_connection_client=True)
    blocked_id = blocked.client_id()
    for error in (False, True):
        got = {}

        def wait():
            try:
                got["v"] = blocked.blpop(["nothing"], timeout=0)
            except redis.ResponseError as e:
                got["v"] = ("error", str(e))

        waiter = threading.Thread(target=wait)
        waiter.start()
        wait_blocked(r, 1)
        rec("CLIENT|UNBLOCK", r.client_unblock, blocked_id, error=error)
        waiter.join()
        rec.note("CLIENT|UNBLOCK BLPOP", got["v"])
    rec("CLIENT|UNBLOCK", r.client_unblock, blocked_id)


SCENARIOS = [lists, hashes, sets, zsets, hyperloglogs, geo, streams, sorting, transactions, pubsub, tracking, unblock]


def record(port: int, protocol: int, scenario) -> Recorder:
    rec = Recorder(port, protocol)
    rec.client().flushall()
    scenario(rec)
    return rec


@pytest.mark.parametrize("protocol", [2, 3])
def test_every_listed_command_matches_redis(kvik_port, redis_port, protocol):
    called = set()
    for scenario in SCENARIOS:
        want = record(redis_port, protocol, scenario)
        have = record(kvik_port, protocol, scenario)
        assert len(have.results) == len(want.results), scenario.__name__
        for i, ((names, expected), (_, got)) in enumerate(zip(want.results, have.results)):
            assert got == expected, f"{scenario.__name__} call {i} ({names}): redis {expected!r}, kvik {got!r}"
        called |= have.called
    missing = LISTED - called
    assert not missing, f"commands never exercised: {sorted(missing)}"


def test_kvik_knows_every_listed_command(kvik_port):
    """COMMAND INFO of each listed command (container commands by their parent) is not nil."""
    r = redis.Redis(host="127.0.0.1", port=kvik_port, socket_timeout=5, protocol=2)
    names = sorted({name.split("|")[0] for name in LISTED})
    infos = r.execute_command("COMMAND", "INFO", *names)
    unknown = [name for name, info in zip(names, infos) if info is None]
    assert not unknown, f"kvik does not know {unknown}"
    assert len(infos) == len(names)
