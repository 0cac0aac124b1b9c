"""redis-py over TLS (`ssl=True`) against kvik-server's `tls-port`: RESP2
and RESP3, pipelines, pub/sub and BLPOP, client certificates required, optional or not
asked for, and an untrusted server certificate refused.

The certificates are made when the test runs, with the `openssl`
command (`make test` installs it), so no private key is committed.
"""

import os
import shutil
import ssl
import subprocess
import threading
import time

import pytest
import redis

from conftest import find_server_binary, free_port


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d):
    """A CA, a server and a client certificate it signed, and another CA."""
    if shutil.which("openssl") is None:
        if os.environ.get("CI"):
            pytest.fail("openssl is needed under CI (make test installs it)")
        pytest.skip("openssl is not installed")
    (d / "leaf.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
    )
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-days", "2", "-subj", f"/CN={ca}", cwd=d)
    for leaf in ("server", "client"):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{leaf}.key", "-out", f"{leaf}.csr", "-subj", f"/CN={leaf}", cwd=d)
        openssl("x509", "-req", "-in", f"{leaf}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{leaf}.crt", "-days", "2", "-extfile", "leaf.ext", cwd=d)
    return d


@pytest.fixture
def tls_server(tmp_path):
    """kvik-server with TLS on a free port (client certificates required);
    yields (tls_port, plain_port, pki directory)."""
    pki = make_pki(tmp_path)
    port, tls_port = free_port(), free_port()
    proc = subprocess.Popen(
        [str(find_server_binary()), "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", str(tmp_path),
         "--tls-port", str(tls_port), "--tls-cert-file", str(pki / "server.crt"),
         "--tls-key-file", str(pki / "server.key"), "--tls-ca-cert-file", str(pki / "ca.crt")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                pytest.fail(f"kvik-server exited early: {proc.stderr.read().decode(errors='replace')}")
            try:
                if redis.Redis(port=port, socket_timeout=1).ping():
                    break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    pytest.fail("kvik-server did not answer PING within 10 s")
                time.sleep(0.05)
        yield tls_port, port, pki
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


def tls_client(port, pki, cert=True, ca="ca.crt", **kw):
    extra = {"ssl_certfile": str(pki / "client.crt"), "ssl_keyfile": str(pki / "client.key")} if cert else {}
    return redis.Redis(host="localhost", port=port, ssl=True, ssl_ca_certs=str(pki / ca), socket_timeout=5,
                       **extra, **kw)


def test_resp2_and_resp3_over_tls(tls_server):
    tls_port, port, pki = tls_server
    r = tls_client(tls_port, pki)
    assert r.ping()
    assert r.set("greeting", "hello over tls")
    assert r.get("greeting") == b"hello over tls"
    pipe = r.pipeline(transaction=True)
    for i in range(100):
        pipe.incr("counter")
    assert pipe.execute()[-1] == 100
    big = b"x" * 1_000_000
    r.set("big", big)
    assert r.get("big") == big, "a reply larger than one TLS record comes back whole"
    r3 = tls_client(tls_port, pki, protocol=3)
    assert r3.hset("h", mapping={"a": "1"}) == 1
    assert r3.hgetall("h") == {b"a": b"1"}
    assert redis.Redis(port=port).get("greeting") == b"hello over tls", "the plain port sees the same data"


def test_client_certificate_modes(tls_server):
    tls_port, port, pki = tls_server
    with pytest.raises(redis.ConnectionError):
        tls_client(tls_port, pki, cert=False).ping()
    admin = redis.Redis(port=port)
    assert admin.config_set("tls-auth-clients", "optional")
    assert tls_client(tls_port, pki, cert=False).ping()
    assert tls_client(tls_port, pki).ping()
    assert admin.config_set("tls-auth-clients", "no")
    assert tls_client(tls_port, pki, cert=False).ping()
    with pytest.raises(redis.ResponseError, match="Unable to update TLS configuration"):
        admin.config_set("tls-cert-file", str(pki / "missing.crt"))
    assert tls_client(tls_port, pki, cert=False).ping(), "the old certificate still serves"


def test_an_untrusted_server_certificate_is_refused(tls_server):
    tls_port, _, pki = tls_server
    with pytest.raises(redis.ConnectionError):
        tls_client(tls_port, pki, ca="other-ca.crt").ping()
    insecure = tls_client(tls_port, pki, ca="other-ca.crt", ssl_cert_reqs=ssl.CERT_NONE)
    assert insecure.ping()


def test_pubsub_and_blocking_commands_over_tls(tls_server):
    tls_port, port, pki = tls_server
    sub = tls_client(tls_port, pki).pubsub()
    sub.subscribe("news")
    assert sub.get_message(timeout=5)["type"] == "subscribe"
    assert tls_client(tls_port, pki).publish("news", "over tls") == 1
    message = sub.get_message(timeout=5)
    assert message["data"] == b"over tls"
    sub.close()
    pusher = threading.Timer(0.2, lambda: redis.Redis(port=port).rpush("queue", "job"))
    pusher.start()
    assert tls_client(tls_port, pki).blpop("queue", timeout=5) == (b"queue", b"job")
    pusher.join()
