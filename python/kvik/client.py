"""`kvik.Redis`: redis-py's command methods over kvik's native connection.

The command methods (`set`, `hgetall`, `zrange`, `scan_iter`, `lock`,
`register_script`, ...) are redis-py's own command classes, and what they
return is what redis-py's response callbacks make of the reply, so results
are redis-py's to the type. What differs is underneath: one call into
`kvik._native` writes the command, waits for the reply with the GIL
released and builds the reply's objects from the bytes, in Rust, instead of
redis-py's connection, parser and retry machinery in Python.
"""

import threading
import time
from urllib.parse import parse_qs, unquote, urlparse

import redis
from redis.commands import CoreCommands
from redis.exceptions import ConnectionError, RedisError, ResponseError, WatchError

from . import _native

try:
    from redis._parsers.base import BaseParser
except ImportError:  # pragma: no cover - redis-py 5.0 and later have it
    raise ImportError("kvik needs redis-py 5 or later") from None

# redis-py's keys in a command's options that are not for its callback.
_EMPTY_RESPONSE = "EMPTY_RESPONSE"
_NEVER_DECODE = "NEVER_DECODE"
_NOT_FOR_CALLBACKS = (_EMPTY_RESPONSE, _NEVER_DECODE, "keys")

# The exception redis-py raises for an error reply, from its text.
_error_factory = BaseParser.parse_error


def _response_callbacks(protocol):
    """redis-py's response callbacks for `protocol`, as its own client sets
    them up (the way to get them moved between redis-py versions)."""
    try:
        from redis.client import default_response_callbacks  # redis-py 8
    except ImportError:
        from redis._parsers.helpers import _RedisCallbacks, _RedisCallbacksRESP2, _RedisCallbacksRESP3
        from redis.client import CaseInsensitiveDict

        callbacks = CaseInsensitiveDict(_RedisCallbacks)
        callbacks.update(_RedisCallbacksRESP3 if protocol == 3 else _RedisCallbacksRESP2)
        return callbacks
    return default_response_callbacks(protocol, True)


def _protocol(value):
    if value in (None, 2, "2"):
        return 2
    if value in (3, "3"):
        return 3
    raise redis.exceptions.DataError("protocol must be 2 or 3, not %r" % (value,))


class ConnectionPool:
    """Connections to one server, one per thread at a time: a thread takes
    one for a command (or a pipeline) and gives it back. Options are
    redis-py's names; an option kvik does not have is refused, not
    ignored."""

    def __init__(
        self,
        host="localhost",
        port=6379,
        db=0,
        password=None,
        username=None,
        socket_timeout=None,
        socket_connect_timeout=None,
        unix_socket_path=None,
        decode_responses=False,
        encoding="utf-8",
        encoding_errors="strict",
        protocol=2,
        client_name=None,
        max_connections=None,
    ):
        if str(encoding).replace("_", "-").lower() not in ("utf-8", "utf8"):
            raise NotImplementedError("kvik encodes and decodes UTF-8 only, not %r" % (encoding,))
        if encoding_errors != "strict":
            raise NotImplementedError("kvik decodes with encoding_errors='strict' only")
        self.connection_kwargs = {
            "host": host,
            "port": int(port),
            "db": int(db),
            "password": password,
            "username": username,
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
            "path": unix_socket_path,
            "decode_responses": bool(decode_responses),
            "encoding": "utf-8",
            "encoding_errors": "strict",
            "protocol": _protocol(protocol),
            "client_name": client_name,
        }
        self.max_connections = max_connections
        self._free = []
        self._made = 0
        self._lock = threading.Lock()

    def __repr__(self):
        kw = self.connection_kwargs
        where = kw["path"] or "%s:%s" % (kw["host"], kw["port"])
        return "<kvik.ConnectionPool(%s/%s)>" % (where, kw["db"])

    def get_protocol(self):
        return self.connection_kwargs["protocol"]

    def get_encoder(self):
        kw = self.connection_kwargs
        return redis.connection.Encoder(kw["encoding"], kw["encoding_errors"], kw["decode_responses"])

    def get(self):
        """A connection for this thread's next command."""
        try:
            return self._free.pop()
        except IndexError:
            return self._connect()

    def put(self, conn):
        """Give back a connection; a closed one is dropped."""
        if conn.closed:
            with self._lock:
                self._made -= 1
        else:
            self._free.append(conn)

    def disconnect(self):
        """Close every idle connection."""
        while self._free:
            try:
                conn = self._free.pop()
            except IndexError:
                break
            conn.close()
            with self._lock:
                self._made -= 1

    def _connect(self):
        with self._lock:
            if self.max_connections is not None and self._made >= self.max_connections:
                raise ConnectionError("Too many connections")
            self._made += 1
        try:
            return self._connect_dedicated()
        except BaseException:
            with self._lock:
                self._made -= 1
            raise

    def _connect_dedicated(self):
        """A new connection, handshake made, outside the pool's count (a
        pub/sub connection is one)."""
        kw = self.connection_kwargs
        conn = _native.Connection(
            host=kw["host"],
            port=kw["port"],
            path=kw["path"],
            connect_timeout=kw["socket_connect_timeout"],
            socket_timeout=kw["socket_timeout"],
            decode=kw["decode_responses"],
            error_factory=_error_factory,
        )
        self._handshake(conn)
        return conn

    def _handshake(self, conn):
        """What redis-py sends on connecting: HELLO 3 (with AUTH) for
        RESP3, AUTH for a password, CLIENT SETNAME, SELECT."""
        kw = self.connection_kwargs
        user, password = kw["username"], kw["password"]
        if kw["protocol"] == 3:
            hello = ["HELLO", "3"]
            if password is not None:
                hello += ["AUTH", user or "default", password]
            conn.call(tuple(hello))
        elif password is not None:
            conn.call(("AUTH", user, password) if user else ("AUTH", password))
        if kw["client_name"]:
            conn.call(("CLIENT", "SETNAME", kw["client_name"]))
        if kw["db"]:
            conn.call(("SELECT", kw["db"]))


def _pool_from_url(url, **kwargs):
    """`redis://[[user]:password@]host[:port][/db]` or
    `unix://[[user]:password@]/path?db=N`, as redis-py reads them."""
    parsed = urlparse(url)
    options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    args = {}
    if parsed.username:
        args["username"] = unquote(parsed.username)
    if parsed.password:
        args["password"] = unquote(parsed.password)
    if parsed.scheme == "unix":
        args["unix_socket_path"] = unquote(parsed.path)
    elif parsed.scheme == "redis":
        if parsed.hostname:
            args["host"] = unquote(parsed.hostname)
        if parsed.port:
            args["port"] = parsed.port
        path = parsed.path.lstrip("/")
        if path:
            args["db"] = int(path)
    elif parsed.scheme == "rediss":
        raise NotImplementedError("kvik's Python client has no TLS yet: use redis-py for rediss://")
    else:
        raise ValueError("Redis URL must specify one of the following schemes (redis://, rediss://, unix://)")
    for name, value in options.items():
        if name == "db":
            args["db"] = int(value)
        elif name in ("socket_timeout", "socket_connect_timeout"):
            args[name] = float(value)
        elif name == "decode_responses":
            args[name] = value.lower() in ("1", "true", "yes", "y")
        elif name == "protocol":
            args[name] = int(value)
        else:
            raise NotImplementedError("kvik does not take the URL option %r" % (name,))
    args.update(kwargs)
    return ConnectionPool(**args)


class Redis(CoreCommands):
    """A client with redis-py's API. `kvik.Redis(host, port, db, password,
    username, decode_responses, protocol=2|3, socket_timeout, ...)`."""

    @classmethod
    def from_url(cls, url, **kwargs):
        return cls(connection_pool=_pool_from_url(url, **kwargs))

    def __init__(self, host="localhost", port=6379, db=0, password=None, connection_pool=None, **kwargs):
        if connection_pool is None:
            connection_pool = ConnectionPool(host=host, port=port, db=db, password=password, **kwargs)
        elif kwargs:
            raise TypeError("options go to the connection pool, not beside it: %s" % ", ".join(sorted(kwargs)))
        self.connection_pool = connection_pool
        self.response_callbacks = _response_callbacks(connection_pool.get_protocol())

    def __repr__(self):
        return "<kvik.Redis(%r)>" % (self.connection_pool,)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.connection_pool.disconnect()

    def get_encoder(self):
        return self.connection_pool.get_encoder()

    def get_connection_kwargs(self):
        return self.connection_pool.connection_kwargs

    def set_response_callback(self, command, callback):
        self.response_callbacks[command] = callback

    def execute_command(self, *args, **options):
        pool = self.connection_pool
        conn = pool.get()
        try:
            if _NEVER_DECODE in options:
                response = self._call_undecoded(conn, args)
            else:
                response = conn.call(args)
        except ResponseError:
            pool.put(conn)
            if _EMPTY_RESPONSE in options:
                return options[_EMPTY_RESPONSE]
            raise
        except BaseException:
            pool.put(conn)
            raise
        pool.put(conn)
        return self._parse(args[0], response, options)

    def _call_undecoded(self, conn, args):
        decode = self.connection_pool.connection_kwargs["decode_responses"]
        conn.set_decode(False)
        try:
            return conn.call(args)
        finally:
            conn.set_decode(decode)

    def _parse(self, command, response, options):
        if options:
            for key in _NOT_FOR_CALLBACKS:
                options.pop(key, None)
        callback = self.response_callbacks.get(command)
        if callback is not None:
            return callback(response, **options)
        return response

    def pipeline(self, transaction=True, shard_hint=None):
        return Pipeline(self, transaction)

    def bulk_load(self, commands, window=1000, max_errors=100):
        """Send every command of `commands` (an iterable of argument
        tuples) as fast as the socket takes them, as `redis-cli --pipe`
        does, with `window` commands in flight. Returns the number of
        replies and the error replies (exceptions, at most `max_errors`)."""
        pool = self.connection_pool
        conn = pool.get()
        try:
            return conn.bulk(commands, window, max_errors)
        finally:
            pool.put(conn)

    def transaction(self, func, *watches, shard_hint=None, value_from_callable=False, watch_delay=None):
        """Run `func(pipe)` and the pipeline it fills, again for as long as
        a key of `watches` changes before EXEC (a `WatchError`)."""
        with self.pipeline(True) as pipe:
            while True:
                try:
                    if watches:
                        pipe.watch(*watches)
                    value = func(pipe)
                    executed = pipe.execute()
                    return value if value_from_callable else executed
                except WatchError:
                    if watch_delay is not None and watch_delay > 0:
                        time.sleep(watch_delay)

    def lock(self, name, timeout=None, sleep=0.1, blocking=True, blocking_timeout=None, lock_class=None, thread_local=True, **kwargs):
        """redis-py's lock (`redis.lock.Lock`, or `lock_class`) on this client."""
        if lock_class is None:
            from redis.lock import Lock as lock_class
        return lock_class(
            self,
            name,
            timeout=timeout,
            sleep=sleep,
            blocking=blocking,
            blocking_timeout=blocking_timeout,
            thread_local=thread_local,
            **kwargs,
        )

    def pubsub(self, ignore_subscribe_messages=False):
        """redis-py's PubSub, on a connection of its own."""
        from .pubsub import PubSub

        return PubSub(self.connection_pool, ignore_subscribe_messages=ignore_subscribe_messages)

    def monitor(self):
        raise NotImplementedError("kvik.Redis.monitor is not there yet: use redis-py's")


class Pipeline(Redis):
    """redis-py's pipeline: commands are buffered and sent at once by
    `execute()`, inside MULTI/EXEC when `transaction` (or after `multi()`);
    `watch()` pins a connection and runs at once until `multi()`."""

    def __init__(self, client, transaction):
        self.connection_pool = client.connection_pool
        self.response_callbacks = client.response_callbacks
        self.transaction = transaction
        self.command_stack = []
        self.watching = False
        self.explicit_transaction = False
        self._conn = None

    def __repr__(self):
        return "<kvik.Pipeline(%r)>" % (self.connection_pool,)

    def __len__(self):
        return len(self.command_stack)

    def __bool__(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.reset()

    def __del__(self):
        try:
            self.reset()
        except Exception:
            pass

    def reset(self):
        self.command_stack = []
        conn, self._conn = self._conn, None
        if conn is not None:
            if self.watching and not conn.closed:
                try:
                    conn.call(("UNWATCH",))
                except RedisError:
                    conn.close()
            self.connection_pool.put(conn)
        self.watching = False
        self.explicit_transaction = False

    def multi(self):
        if self.explicit_transaction:
            raise RedisError("Cannot issue nested calls to MULTI")
        if self.command_stack:
            raise RedisError("Commands without an initial WATCH have already been issued")
        self.explicit_transaction = True

    def execute_command(self, *args, **options):
        if (self.watching or args[0] == "WATCH") and not self.explicit_transaction:
            return self._immediate(args, options)
        self.command_stack.append((args, options))
        return self

    def pipeline_execute_command(self, *args, **options):
        self.command_stack.append((args, options))
        return self

    def _immediate(self, args, options):
        if self._conn is None:
            self._conn = self.connection_pool.get()
        try:
            response = self._conn.call(args)
        except ConnectionError:
            if self.watching:
                self.reset()
                raise WatchError("A ConnectionError occurred on while watching one or more keys") from None
            raise
        name = args[0]
        if name == "WATCH":
            self.watching = True
        elif name == "UNWATCH":
            self.watching = False
        return self._parse(name, response, options)

    def watch(self, *names):
        if self.explicit_transaction:
            raise RedisError("Cannot issue a WATCH after a MULTI")
        return self.execute_command("WATCH", *names)

    def unwatch(self):
        return self.watching and self.execute_command("UNWATCH") or True

    def execute(self, raise_on_error=True):
        stack = self.command_stack
        if not stack and not self.watching:
            return []
        conn = self._conn or self.connection_pool.get()
        self._conn = conn
        try:
            if self.transaction or self.explicit_transaction:
                return self._execute_transaction(conn, stack, raise_on_error)
            return self._execute_pipeline(conn, stack, raise_on_error)
        finally:
            # EXEC (or its failure) ends a WATCH on the server's side.
            self.watching = False
            self.reset()

    def _execute_pipeline(self, conn, stack, raise_on_error):
        replies = conn.call_many([args for args, _ in stack])
        if raise_on_error:
            self._raise_first_error(stack, replies)
        return self._results(stack, replies)

    def _results(self, stack, replies):
        """Each reply through its command's callback (errors as they are),
        each callback looked up once per name."""
        callbacks, found, out = self.response_callbacks, {}, []
        for (args, opts), reply in zip(stack, replies):
            if isinstance(reply, Exception):
                out.append(reply)
                continue
            name = args[0]
            try:
                callback = found[name]
            except KeyError:
                callback = found[name] = callbacks.get(name)
            if opts:
                opts = {k: v for k, v in opts.items() if k not in _NOT_FOR_CALLBACKS}
            out.append(reply if callback is None else callback(reply, **opts))
        return out

    def _execute_transaction(self, conn, stack, raise_on_error):
        replies = conn.call_many([("MULTI",)] + [args for args, _ in stack] + [("EXEC",)])
        if isinstance(replies[0], Exception):
            raise replies[0]
        queued, response = replies[1:-1], replies[-1]
        errors = [(i, e) for i, e in enumerate(queued) if isinstance(e, ResponseError)]
        if isinstance(response, redis.exceptions.ExecAbortError):
            if errors:
                raise errors[0][1]
            raise response
        if isinstance(response, Exception):
            raise response
        if response is None:
            raise WatchError("Watched variable changed.")
        for i, e in errors:
            response.insert(i, e)
        if len(response) != len(stack):
            conn.close()
            raise ResponseError("Wrong number of response items from pipeline execution")
        if raise_on_error:
            self._raise_first_error(stack, response)
        return self._results(stack, response)

    def _raise_first_error(self, stack, replies):
        for i, r in enumerate(replies):
            if isinstance(r, ResponseError):
                self._annotate(r, i + 1, stack[i][0])
                raise r

    @staticmethod
    def _annotate(exception, number, command):
        msg = "Command # %d (%s) of pipeline caused error: %s" % (number, _command_text(command), exception.args[0])
        exception.args = (msg,) + exception.args[1:]


def _command_text(command):
    """A command as redis-py shows it in a pipeline's error: redis-py 8
    hides credentials and shortens it, 5 to 7 join it whole."""
    try:
        from redis.utils import command_text, truncate_text
    except ImportError:
        return " ".join(map(redis.utils.safe_str, command))
    return truncate_text(command_text(command))
