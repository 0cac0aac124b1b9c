"""Fixtures that run kvik-server as a child process for client-driven tests.

The server binary is the one cargo built: $KVIK_SERVER_BIN when set,
otherwise the newest of target/debug and target/release (honouring
$CARGO_TARGET_DIR), so `make test` exercises the code it just compiled.
"""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

REPO = Path(__file__).resolve().parents[2]


def find_server_binary() -> Path:
    explicit = os.environ.get("KVIK_SERVER_BIN")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    candidates = [p for p in (target / "debug" / "kvik-server", target / "release" / "kvik-server") if p.is_file()]
    if not candidates:
        pytest.fail(f"kvik-server is not built under {target}; run `cargo build -p kvik-server` first")
    return max(candidates, key=lambda p: p.stat().st_mtime)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def wait_for_ping(proc, port, name, output):
    """Return once the server `proc` answers PING on `port`; fail the test if
    it exits first (showing `output()`) or stays silent for 10 s."""
    deadline = time.monotonic() + 10
    while True:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited early: {output()}")
        try:
            if redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).ping():
                return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not answer PING within 10 s")
            time.sleep(0.05)


@pytest.fixture
def kvik_port(tmp_path):
    """Start kvik-server on a free loopback port, wait until it answers PING, stop it afterwards.

    It has no save points and its own `dir`, as the redis-server it is
    compared with, so no snapshot of one test reaches another."""
    binary = find_server_binary()
    port = free_port()
    proc = subprocess.Popen(
        [str(binary), "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_ping(proc, port, "kvik-server", lambda: proc.stderr.read().decode(errors="replace"))
        yield port
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


@pytest.fixture
def redis_port():
    """Start a real redis-server on a free loopback port to compare kvik with.

    Skipped when redis-server is not installed, except under CI, where the
    comparison must not silently vanish."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not on PATH, and CI must compare against it")
        pytest.skip("redis-server is not on PATH")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_ping(proc, port, "redis-server", lambda: "")
        yield port
    finally:
        proc.kill()
        proc.wait()
