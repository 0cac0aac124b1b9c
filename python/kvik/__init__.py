"""kvik: a Redis client for Python with redis-py's API, whose connection and
protocol codec are native (kvik-protocol, in Rust).

    import kvik
    r = kvik.Redis(host="localhost", port=6379, decode_responses=True)
    r.set("greeting", "hello")
    with r.pipeline() as p:
        p.incr("n").get("greeting")
        print(p.execute())

Exceptions are redis-py's own classes (`kvik.ResponseError` is
`redis.exceptions.ResponseError`), so code that catches them works with
either client.
"""

from redis.exceptions import (  # noqa: F401  (re-exported)
    AuthenticationError,
    BusyLoadingError,
    ConnectionError,
    DataError,
    InvalidResponse,
    NoScriptError,
    ReadOnlyError,
    RedisError,
    ResponseError,
    TimeoutError,
    WatchError,
)

from .client import ConnectionPool, Pipeline, Redis  # noqa: F401

from_url = Redis.from_url

__all__ = [
    "Redis",
    "ConnectionPool",
    "Pipeline",
    "from_url",
    "AuthenticationError",
    "BusyLoadingError",
    "ConnectionError",
    "DataError",
    "InvalidResponse",
    "NoScriptError",
    "ReadOnlyError",
    "RedisError",
    "ResponseError",
    "TimeoutError",
    "WatchError",
]
