"""`Redis.pubsub()`: redis-py's PubSub API on a connection of its own.

One thread may wait for messages (`get_message`, `listen`, or the thread
of `run_in_thread`) while another subscribes: commands go out through the
connection's `Sender`, a second handle on its socket, and only the reader
takes what comes back. Messages are the dicts redis-py makes:
`{"type", "pattern", "channel", "data"}`, RESP2 or RESP3 alike (RESP3's
pushes are read as the same lists).
"""

import threading

from redis.exceptions import PubSubError

_PUBLISHED = ("message", "pmessage", "smessage")
_UNSUBSCRIBED = ("unsubscribe", "punsubscribe", "sunsubscribe")


class PubSub:
    def __init__(self, pool, ignore_subscribe_messages=False):
        self.connection_pool = pool
        self.ignore_subscribe_messages = ignore_subscribe_messages
        self._encoder = pool.get_encoder()
        self._conn = None
        self._sender = None
        self._lock = threading.Lock()
        self.channels = {}
        self.patterns = {}
        self.shard_channels = {}
        self._leaving = {"unsubscribe": set(), "punsubscribe": set(), "sunsubscribe": set()}
        self.subscribed_event = threading.Event()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def subscribed(self):
        return self.subscribed_event.is_set()

    def close(self):
        conn, self._conn, self._sender = self._conn, None, None
        if conn is not None:
            conn.close()
        self.channels, self.patterns, self.shard_channels = {}, {}, {}
        for leaving in self._leaving.values():
            leaving.clear()
        self.subscribed_event.clear()

    reset = close

    def _connection(self):
        with self._lock:
            if self._conn is None:
                self._conn = self.connection_pool._connect_dedicated()
                self._sender = self._conn.sender()
            return self._sender

    def execute_command(self, *args):
        """Send a command; its reply comes as a message."""
        self._connection().send(args)

    def _key(self, name):
        # As redis-py keys its tables: encoded, then decoded as replies are.
        return self._encoder.decode(self._encoder.encode(name))

    def _subscribe(self, command, table, leaving, args, kwargs):
        wanted = dict.fromkeys(args)
        wanted.update(kwargs)
        if not wanted:
            raise PubSubError("%s needs at least one name" % command)
        self.execute_command(command, *wanted.keys())
        for name, handler in wanted.items():
            key = self._key(name)
            table[key] = handler
            self._leaving[leaving].discard(key)
        self.subscribed_event.set()

    def _unsubscribe(self, command, table, args):
        names = [self._key(a) for a in args] if args else list(table)
        self._leaving[command.lower()].update(names)
        self.execute_command(command, *args)

    def subscribe(self, *args, **kwargs):
        self._subscribe("SUBSCRIBE", self.channels, "unsubscribe", args, kwargs)

    def psubscribe(self, *args, **kwargs):
        self._subscribe("PSUBSCRIBE", self.patterns, "punsubscribe", args, kwargs)

    def ssubscribe(self, *args, **kwargs):
        self._subscribe("SSUBSCRIBE", self.shard_channels, "sunsubscribe", args, kwargs)

    def unsubscribe(self, *args):
        self._unsubscribe("UNSUBSCRIBE", self.channels, args)

    def punsubscribe(self, *args):
        self._unsubscribe("PUNSUBSCRIBE", self.patterns, args)

    def sunsubscribe(self, *args):
        self._unsubscribe("SUNSUBSCRIBE", self.shard_channels, args)

    def ping(self, message=None):
        self.execute_command(*(("PING", message) if message is not None else ("PING",)))

    def get_message(self, ignore_subscribe_messages=False, timeout=0.0):
        """The next message within `timeout` seconds (None: wait for
        ever), or None."""
        if not self.subscribed:
            if not self.subscribed_event.wait(timeout):
                return None
        conn = self._conn
        if conn is None:
            return None
        if timeout is None:
            response = conn.read_reply()
        else:
            response = conn.poll_reply(timeout)
        if response is None:
            return None
        return self.handle_message(response, ignore_subscribe_messages)

    get_sharded_message = get_message

    def listen(self):
        """Every message, for as long as something is subscribed."""
        while self.subscribed:
            message = self.handle_message(self._conn.read_reply())
            if message is not None:
                yield message

    def handle_message(self, response, ignore_subscribe_messages=False):
        if isinstance(response, Exception):
            raise response
        if isinstance(response, bytes):
            # PING's answer while subscribed, in RESP3.
            response = [b"pong", b"" if response == b"PONG" else response]
        elif isinstance(response, str):
            response = ["pong", "" if response == "PONG" else response]
        kind = response[0].decode() if isinstance(response[0], bytes) else response[0]
        if kind == "pmessage":
            message = {"type": kind, "pattern": response[1], "channel": response[2], "data": response[3]}
        elif kind == "pong":
            message = {"type": kind, "pattern": None, "channel": None, "data": response[1]}
        else:
            message = {"type": kind, "pattern": None, "channel": response[1], "data": response[2]}
        if kind in _UNSUBSCRIBED:
            table = {"unsubscribe": self.channels, "punsubscribe": self.patterns, "sunsubscribe": self.shard_channels}[kind]
            name = response[1]
            if name in self._leaving[kind]:
                self._leaving[kind].discard(name)
                table.pop(name, None)
            if not self.channels and not self.patterns and not self.shard_channels:
                self.subscribed_event.clear()
        if kind in _PUBLISHED:
            if kind == "pmessage":
                handler = self.patterns.get(message["pattern"])
            elif kind == "smessage":
                handler = self.shard_channels.get(message["channel"])
            else:
                handler = self.channels.get(message["channel"])
            if handler:
                handler(message)
                return None
        elif kind != "pong" and (ignore_subscribe_messages or self.ignore_subscribe_messages):
            return None
        return message

    def run_in_thread(self, sleep_time=0.0, daemon=False, exception_handler=None):
        for table in (self.channels, self.patterns, self.shard_channels):
            for name, handler in table.items():
                if handler is None:
                    raise PubSubError("Channel: '%s' has no handler registered" % (name,))
        thread = PubSubWorkerThread(self, sleep_time, daemon=daemon, exception_handler=exception_handler)
        thread.start()
        return thread


class PubSubWorkerThread(threading.Thread):
    """Calls the handlers of `pubsub` until `stop()`."""

    def __init__(self, pubsub, sleep_time, daemon=False, exception_handler=None):
        super().__init__(daemon=daemon)
        self.pubsub = pubsub
        self.sleep_time = sleep_time
        self.exception_handler = exception_handler
        self._running = threading.Event()

    def run(self):
        if self._running.is_set():
            return
        self._running.set()
        pubsub, sleep_time = self.pubsub, self.sleep_time
        while self._running.is_set():
            try:
                pubsub.get_message(ignore_subscribe_messages=True, timeout=sleep_time)
            except BaseException as e:
                if self.exception_handler is None:
                    raise
                self.exception_handler(e, pubsub, self)
        pubsub.close()

    def stop(self):
        self._running.clear()
