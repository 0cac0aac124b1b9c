"""ACL users the way redis-py applications use them: users made and read
through its ACL methods (acl_setuser, acl_getuser, acl_list, acl_whoami,
acl_log, acl_deluser), clients that log in with username and password,
and refusals raised as redis-py's NoPermissionError and
AuthenticationError, the same classes redis-server's replies give."""

import pytest
import redis
from redis.exceptions import AuthenticationError, NoPermissionError

from clients import client


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def make_app_user(r):
    assert r.acl_setuser(
        "app",
        enabled=True,
        passwords=["+app-secret"],
        keys=["app:*"],
        channels=["app:*"],
        categories=["+@read", "+@write", "-@dangerous"],
        commands=["+ping", "+eval", "+multi", "+exec", "+publish"],
    )


@pytest.mark.parametrize("which", ["kvik", "redis"])
def test_users_are_made_and_read_through_redis_py(which, kvik_port, redis_port):
    port = kvik_port if which == "kvik" else redis_port
    r = client(port)
    make_app_user(r)
    user = r.acl_getuser("app")
    assert user["enabled"] is True
    assert user["keys"] == ["~app:*"]
    assert user["channels"] == ["&app:*"]
    assert "+@read" in user["categories"] or "+@string" in user["categories"]
    assert len(user["passwords"]) == 1 and len(user["passwords"][0]) == 64
    assert "app" in r.acl_users()
    assert any(line.startswith("user app on #") for line in r.acl_list())


@pytest.mark.parametrize("which", ["kvik", "redis"])
def test_a_user_logs_in_and_is_held_to_its_rules(which, kvik_port, redis_port):
    port = kvik_port if which == "kvik" else redis_port
    admin = client(port)
    make_app_user(admin)
    app = client(port, username="app", password="app-secret")
    assert app.ping()
    assert app.set("app:1", "v")
    assert app.get("app:1") == b"v"
    with pytest.raises(NoPermissionError, match="one of the keys"):
        app.get("other")
    with pytest.raises(NoPermissionError, match="'flushall' command"):
        app.flushall()
    with pytest.raises(NoPermissionError, match="one of the channels"):
        app.publish("news", "m")
    with pytest.raises(AuthenticationError):
        client(port, username="app", password="wrong").ping()
    # redis-py names itself with CLIENT SETINFO, which redis-server 7.0 does
    # not have and kvik has: refused to this user, and logged, only by kvik.
    entries = [e for e in admin.acl_log() if text(e["object"]) != "client|setinfo"]
    reasons = sorted(text(e["reason"]) for e in entries)
    assert reasons == ["auth", "channel", "command", "key"]
    assert {text(e["username"]) for e in entries} == {"app"}
    assert admin.acl_deluser("app") == 1


def test_a_pipeline_and_a_script_keep_the_users_rules(kvik_port):
    admin = client(kvik_port)
    make_app_user(admin)
    app = client(kvik_port, username="app", password="app-secret")
    pipe = app.pipeline(transaction=True)
    pipe.set("app:a", 1).incr("app:a")
    assert pipe.execute() == [True, 2]
    with pytest.raises(redis.exceptions.ResponseError, match="can't access at least one of the keys"):
        app.eval("return redis.call('get', 'secret')", 0)
