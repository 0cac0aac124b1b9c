"""redis-py, used the way applications use it, against a kvik-server."""

import pytest
import redis


def client(port: int, **kwargs) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, **kwargs)


def test_ping(kvik_port):
    r = client(kvik_port)
    assert r.ping() is True
    # redis-py turns any PING reply into a bool; the raw connection shows the bulk reply.
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command("PING", "hello")
        assert conn.read_response() == b"hello"
    finally:
        r.connection_pool.release(conn)


def test_echo_is_binary_safe(kvik_port):
    r = client(kvik_port)
    assert r.echo("hi") == b"hi"
    assert r.echo(b"\x00\r\n\xff") == b"\x00\r\n\xff"


def test_resp3_hello(kvik_port):
    r = client(kvik_port, protocol=3)
    # redis-py sends HELLO 3 when it connects; this asks again to see the reply.
    hello = r.execute_command("HELLO", "3")
    assert hello[b"server"] == b"redis"
    assert hello[b"version"] == b"7.0.15"
    assert hello[b"proto"] == 3
    assert hello[b"mode"] == b"standalone"
    assert hello[b"role"] == b"master"
    assert hello[b"modules"] == []
    assert isinstance(hello[b"id"], int)
    assert r.ping() is True
    assert r.echo("resp3") == b"resp3"


def test_unknown_command_raises_with_redis_text(kvik_port):
    r = client(kvik_port)
    with pytest.raises(redis.ResponseError) as err:
        r.execute_command("NOSUCHCOMMAND", "a", "b")
    assert str(err.value) == "unknown command 'NOSUCHCOMMAND', with args beginning with: 'a' 'b' "
    # The connection is still usable after a command error.
    assert r.ping() is True


def test_wrong_arity_raises(kvik_port):
    r = client(kvik_port)
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'echo' command$"):
        r.execute_command("ECHO")


def test_pipeline(kvik_port):
    r = client(kvik_port)
    pipe = r.pipeline(transaction=False)
    pipe.ping()
    pipe.echo("one")
    pipe.echo("two")
    assert pipe.execute() == [True, b"one", b"two"]
