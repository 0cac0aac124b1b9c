"""The redis-py client the tests talk to kvik through: RESP2 unless a test
asks for another protocol, and a timeout so a missing reply fails the test
instead of hanging it."""

import redis


def client(port: int, **kwargs) -> redis.Redis:
    kwargs.setdefault("protocol", 2)
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, **kwargs)
