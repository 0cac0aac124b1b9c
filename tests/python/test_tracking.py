"""Client-side caching with redis-py: a RESP3 connection whose push handler
drops cached values, and a RESP2 client redirecting its invalidations to a
pub/sub connection, the two ways applications receive them.

(redis-py's built-in cache insists on Redis 7.4, and kvik reports 7.0, so
the cache here is a small one of the test's own.)
"""

import time

import redis

from clients import confirmed


def client(port: int, **kwargs) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, **kwargs)


class CachingClient:
    """A RESP3 connection with tracking on and a dict as its cache."""

    def __init__(self, port: int, *tracking_args):
        self.conn = redis.Connection(host="127.0.0.1", port=port, protocol=3, socket_timeout=5)
        self.conn.connect()
        self.cache = {}
        self.invalidations = []
        self.conn._parser.set_invalidation_push_handler(self._invalidate)
        assert self.call("CLIENT", "TRACKING", "on", *tracking_args) == b"OK"

    def _invalidate(self, push):
        keys = push[1]
        self.invalidations.append(keys)
        if keys is None:
            self.cache.clear()
        else:
            for k in keys:
                self.cache.pop(k, None)

    def call(self, *args):
        self.conn.send_command(*args)
        return self.conn.read_response()

    def get(self, key: bytes):
        if key in self.cache:
            return self.cache[key]
        value = self.call("GET", key)
        self.cache[key] = value
        return value

    def sync(self):
        """Read what the server pushed so far (a PING's reply comes after it)."""
        assert self.call("PING") == b"PONG"

    def close(self):
        self.conn.disconnect()


def test_resp3_push_handler_keeps_a_cache_fresh(kvik_port):
    writer = client(kvik_port)
    writer.set("user:1", "ann")
    cc = CachingClient(kvik_port)
    assert cc.get(b"user:1") == b"ann"
    assert cc.get(b"user:1") == b"ann"  # from the cache
    assert cc.get(b"missing") is None
    writer.set("user:1", "bob")
    cc.sync()
    assert cc.invalidations == [[b"user:1"]]
    assert cc.get(b"user:1") == b"bob"
    writer.delete("missing")  # nothing to delete: no invalidation
    writer.set("missing", "now")
    cc.sync()
    assert cc.invalidations[-1] == [b"missing"]
    writer.flushall()
    cc.sync()
    assert cc.invalidations[-1] is None
    assert cc.cache == {}
    info = cc.call("CLIENT", "TRACKINGINFO")
    assert set(info[b"flags"]) == {b"on"} and info[b"redirect"] == 0
    cc.close()


def test_broadcast_prefixes_with_noloop(kvik_port):
    writer = client(kvik_port)
    cc = CachingClient(kvik_port, "BCAST", "PREFIX", "cfg:", "NOLOOP")
    assert cc.call("SET", "cfg:own", "1") == b"OK"
    writer.mset({"cfg:a": "1", "cfg:b": "2", "other": "3"})
    cc.sync()
    # Its own write is not echoed back; the writer's two keys come as one message.
    assert cc.invalidations == [[b"cfg:a", b"cfg:b"]]
    info = cc.call("CLIENT", "TRACKINGINFO")
    assert set(info[b"flags"]) == {b"on", b"bcast", b"noloop"}
    assert info[b"prefixes"] == [b"cfg:"]
    cc.close()


def next_message(p, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = p.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if msg is not None:
            return msg
    raise AssertionError("no message arrived")


def test_resp2_redirect_to_a_pubsub_connection(kvik_port):
    # redis-py speaks RESP3 by default; a RESP3 target would get pushes.
    r = client(kvik_port, protocol=2)
    p = r.pubsub()
    p.subscribe("__redis__:invalidate")
    confirmed(p, 1)
    assert r.pubsub_numsub("__redis__:invalidate") == [(b"__redis__:invalidate", 1)]
    listener = next(c for c in r.client_list() if c["sub"] == "1")
    tracker = client(kvik_port, single_connection_client=True, protocol=2)
    assert tracker.client_tracking_on(clientid=int(listener["id"]))
    assert tracker.client_getredir() == int(listener["id"])
    tracker.set("k", "v")
    assert tracker.get("k") == b"v"
    r.set("k", "w")
    msg = next_message(p)
    assert (msg["channel"], msg["data"]) == (b"__redis__:invalidate", [b"k"])
    tracker.get("k")
    r.flushdb()
    msg = next_message(p)
    assert (msg["channel"], msg["data"]) == (b"__redis__:invalidate", None)
    mine = next(c for c in r.client_list() if c["id"] == str(tracker.client_id()))
    assert mine["flags"] == "t" and mine["redir"] == listener["id"]
    # Once the listener is gone the redirect is broken (flag R).
    p.close()
    deadline = time.monotonic() + 5
    while any(c["id"] == listener["id"] for c in r.client_list()) and time.monotonic() < deadline:
        time.sleep(0.02)
    tracker.get("k")
    r.set("k", "x")
    mine = next(c for c in r.client_list() if c["id"] == str(tracker.client_id()))
    assert mine["flags"] == "tR"
    assert b"broken_redirect" in tracker.client_trackinginfo()[1]
    tracker.client_tracking_off()
    assert tracker.client_getredir() == -1
    tracker.close()


def test_errors_reach_the_client(kvik_port):
    r = client(kvik_port, single_connection_client=True)
    try:
        r.execute_command("CLIENT", "TRACKING", "on", "REDIRECT", "999999")
    except redis.ResponseError as e:
        assert str(e) == "The client ID you want redirect to does not exist"
    else:
        raise AssertionError("redirect to a missing client accepted")
    try:
        r.execute_command("CLIENT", "CACHING", "yes")
    except redis.ResponseError as e:
        assert "OPTIN or OPTOUT" in str(e)
    else:
        raise AssertionError("CLIENT CACHING accepted without tracking")
    r.close()
