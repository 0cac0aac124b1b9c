"""The redis-py client the tests talk to kvik through: RESP2 unless a test
asks for another protocol, and a timeout so a missing reply fails the test
instead of hanging it."""

import time

import redis


def client(port: int, **kwargs) -> redis.Redis:
    kwargs.setdefault("protocol", 2)
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, **kwargs)


def confirmed(p, count: int, timeout: float = 5.0) -> None:
    """Wait until the pub/sub object `p` has read `count` (p)subscribe
    confirmations. redis-py sends SUBSCRIBE without waiting for its reply, so
    a query on another connection could otherwise overtake it."""
    deadline = time.monotonic() + timeout
    seen = 0
    while seen < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{seen} of {count} subscribe confirmations arrived")
        msg = p.get_message(timeout=left)
        if msg is not None and msg["type"] in ("subscribe", "psubscribe", "ssubscribe"):
            seen += 1
