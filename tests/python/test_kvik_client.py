"""The Python client `kvik` (python/) against redis-py, its model.

- The codec: the shared reply vectors (spec/vectors/replies.json, the file
  the Rust tests read) parse to what redis-py's parser makes of them, and
  requests are written byte for byte as spec/vectors/resp_requests.json has
  them.
- Behaviour: the same calls through redis-py and through kvik, against
  redis-server and kvik-server, RESP2 and RESP3, bytes and decoded, give
  equal results of equal types (exceptions by class and text).
- Bad servers: garbage, a reply cut short, silence: a clear exception, no
  hang, and the next command on a fresh connection.
"""

import json
import math
import socket
import threading
import time

import pytest
import redis
from redis._parsers.base import BaseParser

# Built into the venv by `make test` (python/); not a test to skip.
import kvik
from kvik import _native

from conftest import REPO

VECTORS = REPO / "spec" / "vectors"


# --- the codec ----------------------------------------------------------------


def _expected(v, resp2):
    """What redis-py's parser gives for the vector value `v`, as RESP3 or
    down-converted to RESP2 the way Redis 7.0 writes it."""
    if "repeat" in v:
        if "byte" in v:
            return bytes([int(v["byte"])]) * v["repeat"]
        return [_expected(v["item"], resp2)] * v["repeat"]
    (kind, x), = ((k, val) for k, val in v.items())
    if kind in ("simple", "bulk"):
        return x.encode() if isinstance(x, str) else _expected(x, resp2)
    if kind == "hex":
        return bytes.fromhex(x)
    if kind == "error":
        # redis-py's exception for the text: its class and message.
        e = BaseParser.parse_error(x)
        return ("error", type(e).__name__, str(e))
    if kind == "integer":
        return int(x)
    if kind == "null":
        return None
    if kind == "double":
        # Redis 7.0 writes a double to RESP2 as a bulk string of %.17g.
        d = float(x)
        text = ("inf" if d > 0 else "-inf") if math.isinf(d) else "%.17g" % d
        return text.encode() if resp2 else d
    if kind == "boolean":
        return int(x) if resp2 else bool(x)
    if kind == "big_number":
        return x.encode() if resp2 else int(x)
    if kind == "verbatim":
        return x["text"].encode()
    if kind in ("array", "push"):
        return [_expected(i, resp2) for i in x]
    if kind == "set":
        items = [_expected(i, resp2) for i in x]
        return items if resp2 else set(items)
    if kind == "map":
        pairs = [(_expected(k, resp2), _expected(val, resp2)) for k, val in x]
        return [e for p in pairs for e in p] if resp2 else dict(pairs)
    if kind == "attribute":
        return _expected(x["value"], resp2)
    raise AssertionError("unknown vector kind %r" % kind)


def _comparable(got):
    if isinstance(got, redis.exceptions.ResponseError):
        return ("error", type(got).__name__, str(got))
    if isinstance(got, list):
        return [_comparable(g) for g in got]
    return got


@pytest.mark.parametrize("resp", ["resp2", "resp3"])
def test_replies_parse_as_the_shared_vectors_say(resp):
    cases = json.loads((VECTORS / "replies.json").read_text())["replies"]
    checked = 0
    for case in cases:
        data = case.get(resp)
        if not isinstance(data, str):
            continue  # a large encoding given by its hash only
        (got,) = _native.parse_replies(bytes.fromhex(data), BaseParser.parse_error)
        want = _expected(case["value"], resp == "resp2")
        assert _comparable(got) == want, case["name"]
        checked += 1
    assert checked >= 25


def test_requests_are_written_as_the_shared_vectors_say():
    cases = json.loads((VECTORS / "resp_requests.json").read_text())
    cases = next(v for k, v in cases.items() if k != "description")
    checked = 0
    for case in cases:
        args = case.get("result", {}).get("args")
        text = case.get("text", "")
        if not args or not text.startswith("*"):
            continue  # inline requests and errors: what servers take, not what clients write
        assert _native.encode_command(tuple(args)).hex() == case["input"], text
        checked += 1
    assert checked >= 3


def test_arguments_are_encoded_as_redis_py_encodes_them():
    encoder = redis.connection.Encoder("utf-8", "strict", False)
    for value in [b"bin\x00ary", "text é", 42, -7, 2**70, 1.5, 1e100, memoryview(b"view")]:
        want = redis.connection.Connection().pack_command("SET", "k", value)
        assert _native.encode_command(("SET", "k", value)) == b"".join(want), value
        encoder.encode(value)
    for bad in [True, None, [1], {"a": 1}]:
        with pytest.raises(redis.exceptions.DataError) as theirs:
            encoder.encode(bad)
        with pytest.raises(redis.exceptions.DataError) as ours:
            _native.encode_command(("SET", "k", bad))
        assert str(ours.value) == str(theirs.value)


# --- against servers ----------------------------------------------------------


@pytest.fixture(params=["redis", "kvik"])
def server_port(request):
    return request.getfixturevalue(request.param + "_port")


def _calls(r):
    """A session of calls; each returns what the client gave, or the
    exception it raised."""
    out = []

    def call(f, *args, **kwargs):
        try:
            out.append(f(*args, **kwargs))
        except (redis.exceptions.RedisError, UnicodeDecodeError) as e:
            out.append(("raised", type(e).__name__, str(e)))

    call(r.ping)
    call(r.set, "s", "v")
    call(r.set, "s", "w", nx=True)
    call(r.get, "s")
    call(r.get, "missing")
    call(r.mset, {"a": 1, "b": "two", "c": b"\xff\x00"})
    call(r.mget, "a", "b", "c", "missing")
    call(r.incr, "n")
    call(r.incrby, "n", 10)
    call(r.incrbyfloat, "f", 1.5)
    call(r.append, "s", "!")
    call(r.strlen, "s")
    call(r.getrange, "s", 0, 1)
    call(r.setex, "e", 100, "x")
    call(r.ttl, "e")
    call(r.expire, "s", 50)
    call(r.persist, "s")
    call(r.exists, "a", "b", "zz")
    call(r.type, "a")
    call(r.hset, "h", mapping={"f1": "1", "f2": "2"})
    call(r.hgetall, "h")
    call(r.hmget, "h", "f1", "nope")
    call(r.hincrby, "h", "f1", 5)
    call(r.hincrbyfloat, "h", "f3", 0.25)
    call(r.hkeys, "h")
    call(r.hexists, "h", "f2")
    call(r.rpush, "l", 1, 2, 3, "x")
    call(r.lrange, "l", 0, -1)
    call(r.lpop, "l", 2)
    call(r.lpos, "l", "x")
    call(r.sadd, "set", "a", "b", "c")
    call(lambda: sorted(r.smembers("set")))
    call(r.sismember, "set", "a")
    call(r.smismember, "set", ["a", "z"])
    call(r.zadd, "z", {"a": 1, "b": 2.5, "c": 3})
    call(r.zrange, "z", 0, -1, withscores=True)
    call(r.zrangebyscore, "z", 1, 3)
    call(r.zscore, "z", "b")
    call(r.zincrby, "z", 1.5, "a")
    call(r.zrank, "z", "c")
    call(r.zpopmin, "z")
    call(r.xadd, "x", {"f": "v"}, id="1-1")
    call(r.xrange, "x")
    call(r.xlen, "x")
    call(r.lpush, "s", "wrong type")
    call(r.execute_command, "NOSUCHCOMMAND")
    call(r.hget, "h", "f1")
    call(r.eval, "return {1, 'two', {3}}", 0)
    call(r.eval, "return redis.call('GET', KEYS[1])", 1, "s")
    script = r.register_script("return ARGV[1]")
    call(script, args=["arg"])
    call(lambda: sorted(r.scan_iter(match="[hlz]*")))
    call(r.dbsize)
    call(r.delete, "a", "b")
    call(r.rename, "c", "c2")
    call(r.rename, "nosuch", "x")
    call(r.config_get, "maxmemory-policy")
    call(r.object, "encoding", "l")
    # INFO's parser, without the one figure that moves with the clock.
    call(lambda: {k: v for k, v in r.info("keyspace")["db0"].items() if k != "avg_ttl"})
    with r.pipeline() as p:
        p.set("p", 1).incr("p").lpush("p", 1).get("p")
        call(p.execute, raise_on_error=False)
    with r.pipeline() as p:
        p.set("p", 1).lpush("p", 1).incr("p")
        call(p.execute)
    with r.pipeline(transaction=False) as p:
        p.incr("q").incr("q").get("q")
        call(p.execute)
    with r.pipeline() as p:
        p.watch("w")
        call(p.get, "w")
        p.multi()
        p.set("w", "mine")
        r.set("w", "theirs")
        call(p.execute)
    call(r.get, "w")
    def bump(p):
        current = int(p.get("t") or 0)
        p.multi()
        p.set("t", current + 1)

    call(r.transaction, bump, "t")
    call(r.get, "t")
    lock = r.lock("resource", timeout=5)
    call(lock.acquire, blocking=False)
    call(lambda: r.lock("resource", timeout=5).acquire(blocking=False))
    call(lock.release)
    return out


def _same(a, b):
    if isinstance(a, Exception):
        return type(a) is type(b) and str(a) == str(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("decode", [False, True])
def test_the_same_calls_give_what_redis_py_gives(server_port, protocol, decode):
    theirs = redis.Redis(port=server_port, protocol=protocol, decode_responses=decode)
    ours = kvik.Redis(port=server_port, protocol=protocol, decode_responses=decode)
    theirs.flushall()
    want = _calls(theirs)
    theirs.flushall()
    got = _calls(ours)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert _same(g, w), "call %d: kvik gave %r, redis-py %r" % (i, g, w)
    ours.close()
    theirs.close()


def test_threads_share_a_client(server_port):
    r = kvik.Redis(port=server_port)
    r.flushall()

    def work(i):
        for j in range(200):
            r.incr("counter")
            r.rpush("l:%d" % i, j)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.get("counter") == b"1600"
    assert all(r.llen("l:%d" % i) == 200 for i in range(8))


def test_bulk_load_counts_replies_and_keeps_the_errors(server_port):
    r = kvik.Redis(port=server_port)
    r.flushall()
    r.set("str", "x")
    commands = (("RPUSH", "big", i) for i in range(50_000))
    assert r.bulk_load(commands, window=1000) == (50_000, [])
    replies, errors = r.bulk_load([("SET", "a", 1), ("LPUSH", "str", 1), ("INCR", "a")])
    assert replies == 3 and len(errors) == 1 and str(errors[0]).startswith("WRONGTYPE")
    assert r.llen("big") == 50_000 and r.get("a") == b"2"


def test_from_url_and_a_unix_socket(tmp_path, redis_port):
    r = kvik.from_url("redis://127.0.0.1:%d/3?decode_responses=true" % redis_port)
    r.set("k", "v")
    assert redis.Redis(port=redis_port, db=3).get("k") == b"v"
    assert r.get("k") == "v"
    with pytest.raises(NotImplementedError):
        kvik.from_url("rediss://127.0.0.1:%d" % redis_port)
    with pytest.raises(NotImplementedError):
        kvik.from_url("redis://127.0.0.1:%d?retry_on_timeout=yes" % redis_port)
    with pytest.raises(TypeError):
        kvik.Redis(port=redis_port, ssl=True)


def test_a_password_and_a_database(kvik_port):
    admin = redis.Redis(port=kvik_port)
    admin.config_set("requirepass", "sesame")
    try:
        with pytest.raises(redis.exceptions.AuthenticationError):
            kvik.Redis(port=kvik_port, password="wrong").ping()
        for protocol in (2, 3):
            r = kvik.Redis(port=kvik_port, password="sesame", db=2, protocol=protocol, client_name="kv")
            r.set("k", protocol)
            theirs = redis.Redis(port=kvik_port, password="sesame", protocol=protocol, client_name="kv")
            assert _same(r.client_getname(), theirs.client_getname())
            assert redis.Redis(port=kvik_port, password="sesame", db=2).get("k") == str(protocol).encode()
    finally:
        redis.Redis(port=kvik_port, password="sesame").config_set("requirepass", "")


# --- bad servers --------------------------------------------------------------


class FakeServer:
    """A Unix-socket server that answers the first request on each
    connection with `first` (then closes if `close`, or says nothing more
    if `first` is None) and every later one with `then`."""

    def __init__(self, path, first, close=False, then=b"+OK\r\n"):
        self.path = str(path)
        self.first, self.close_after, self.then = first, close, then
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn):
        with conn:
            if not conn.recv(65536):
                return
            if self.first is None:
                self.stop.wait(5)
                return
            conn.sendall(self.first)
            if self.close_after:
                return
            while not self.stop.is_set() and conn.recv(65536):
                conn.sendall(self.then)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.mark.parametrize(
    "first, close, error",
    [
        (b"?what\r\n", False, redis.exceptions.InvalidResponse),
        (b"*3\r\n$1\r\na\r\n", True, redis.exceptions.ConnectionError),
        (None, False, redis.exceptions.TimeoutError),
        (b"$999999999999\r\n", False, redis.exceptions.InvalidResponse),
        (b"*1\r\n" * 200 + b":1\r\n", False, redis.exceptions.InvalidResponse),
    ],
    ids=["garbage", "closed mid-reply", "silent", "huge length", "deep nesting"],
)
def test_a_bad_server_gives_a_clear_error_and_no_hang(tmp_path, first, close, error):
    server = FakeServer(tmp_path / "s.sock", first, close=close, then=b"$1\r\nv\r\n")
    try:
        r = kvik.Redis(unix_socket_path=server.path, socket_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(error):
            r.get("k")
        assert time.monotonic() - started < 3
        if first is not None:
            # The broken connection is dropped; a new one is made, whose
            # first request gets the same bad answer again.
            with pytest.raises(error):
                r.get("k")
    finally:
        server.close()


# --- publish/subscribe --------------------------------------------------------


def _pubsub_session(client, publisher):
    """Messages as a subscriber sees them: subscriptions, messages of a
    channel and of a pattern, PING, and the unsubscriptions."""
    seen = []
    p = client.pubsub()
    p.subscribe("news", "sport")
    p.psubscribe("w*")
    for _ in range(3):
        seen.append(p.get_message(timeout=2))
    publisher.publish("news", "hello")
    publisher.publish("weather", "rain")
    publisher.publish("nobody", "lost")
    seen.append(p.get_message(timeout=2))
    seen.append(p.get_message(timeout=2))
    seen.append(p.get_message(timeout=0.05))
    p.ping()
    seen.append(p.get_message(timeout=2))
    p.unsubscribe()
    p.punsubscribe("w*")
    for _ in range(3):
        seen.append(p.get_message(timeout=2))
    seen.append(p.subscribed)
    p.close()
    return seen


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("decode", [False, True])
def test_pubsub_gives_what_redis_py_gives(server_port, protocol, decode):
    publisher = redis.Redis(port=server_port)
    want = _pubsub_session(redis.Redis(port=server_port, protocol=protocol, decode_responses=decode), publisher)
    got = _pubsub_session(kvik.Redis(port=server_port, protocol=protocol, decode_responses=decode), publisher)
    assert got == want


def test_pubsub_handlers_listen_and_run_in_thread(server_port):
    r = kvik.Redis(port=server_port)
    got = []
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe(**{"jobs": got.append})
    plain = r.pubsub()
    plain.subscribe("plain")
    with pytest.raises(redis.exceptions.PubSubError):
        plain.run_in_thread()
    plain.close()
    thread = p.run_in_thread(sleep_time=0.05, daemon=True)
    # Another thread subscribes while the worker waits for messages.
    p.psubscribe(**{"j*": got.append})
    deadline = time.monotonic() + 5
    while r.pubsub_numpat() < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    r.publish("jobs", "one")
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.stop()
    thread.join(5)
    assert sorted((m["type"], m["data"]) for m in got) == [("message", b"one"), ("pmessage", b"one")]

    listener = r.pubsub()
    listener.subscribe("l")
    messages = listener.listen()
    assert next(messages)["type"] == "subscribe"
    r.publish("l", "x")
    assert next(messages) == {"type": "message", "pattern": None, "channel": b"l", "data": b"x"}
    listener.close()
