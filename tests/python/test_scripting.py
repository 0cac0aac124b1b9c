"""Lua scripts the way redis-py applications use them: the Lock class
(acquire, extend, reacquire, release, all Lua scripts run by EVALSHA with
a fallback to EVAL), register_script, script errors as exceptions, and
functions (FUNCTION LOAD, FCALL, LIST, DUMP, RESTORE); and a job queue
built on them, RQ, taking a job through a worker."""

import threading

import pytest
import rq
from redis.exceptions import LockError, LockNotOwnedError, NoScriptError, ResponseError

from clients import client


def test_lock_acquires_extends_and_releases(kvik_port):
    r = client(kvik_port)
    lock = r.lock("resource", timeout=10)
    assert lock.acquire(blocking=False)
    assert r.get("resource") == lock.local.token
    # Another holder cannot take or release it.
    other = r.lock("resource", timeout=10)
    assert not other.acquire(blocking=False)
    # A holder whose token no longer matches is told it does not own it.
    stale = r.lock("resource", timeout=10)
    stale.local.token = b"not-the-token"
    with pytest.raises(LockNotOwnedError):
        stale.release()
    stale.local.token = b"not-the-token"
    with pytest.raises(LockNotOwnedError):
        stale.extend(5)
    assert lock.extend(20)
    assert 10_000 < r.pttl("resource") <= 30_000
    assert lock.reacquire()
    assert 0 < r.pttl("resource") <= 10_000
    assert lock.owned()
    lock.release()
    assert r.get("resource") is None
    with pytest.raises(LockError):
        lock.release()


def test_lock_excludes_other_threads(kvik_port):
    counter = {"value": 0, "inside": 0, "overlap": 0}

    def worker():
        r = client(kvik_port)
        for _ in range(30):
            with r.lock("mutex", timeout=5, blocking_timeout=10):
                counter["inside"] += 1
                if counter["inside"] > 1:
                    counter["overlap"] += 1
                counter["value"] += 1
                counter["inside"] -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter["overlap"] == 0
    assert counter["value"] == 120


def test_register_script_loads_once_and_runs_by_sha(kvik_port):
    r = client(kvik_port)
    incr_by = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert incr_by(keys=["n"], args=[5]) == 5
    r.script_flush()
    # The script is gone from the cache: redis-py loads it again.
    assert incr_by(keys=["n"], args=[2]) == 7
    assert r.script_exists(incr_by.sha) == [True]
    with pytest.raises(NoScriptError):
        r.evalsha("0" * 40, 0)


def test_script_errors_are_exceptions(kvik_port):
    r = client(kvik_port)
    r.set("s", "text")
    with pytest.raises(ResponseError, match="value is not an integer"):
        r.eval("return redis.call('incr', KEYS[1])", 1, "s")
    # A pcall's error table returned as the result is an error reply too.
    with pytest.raises(ResponseError, match="value is not an integer"):
        r.eval("return redis.pcall('incr', KEYS[1])", 1, "s")
    assert r.eval("local ok, e = pcall(redis.call, 'incr', KEYS[1]) return e", 1, "s") == (
        b"ERR value is not an integer or out of range"
    )
    assert r.eval("return {1, 'two', {ok = 'fine'}}", 0) == [1, b"two", b"fine"]


LIBRARY = """#!lua name=counters
redis.register_function('bump', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)
redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end,
  flags={'no-writes'}, description='reads a counter'}
"""


def test_functions_load_list_and_run_through_redis_py(kvik_port):
    r = client(kvik_port)
    r.function_flush()
    assert r.function_load(LIBRARY) == b"counters"
    assert r.fcall("bump", 1, "c", 3) == 3
    assert r.fcall_ro("peek", 1, "c") == b"3"
    with pytest.raises(ResponseError, match="write flag using \\*_ro command"):
        r.fcall_ro("bump", 1, "c", 1)
    with pytest.raises(ResponseError, match="already exists"):
        r.function_load(LIBRARY)
    assert r.function_load(LIBRARY, replace=True) == b"counters"
    [library] = r.function_list(library="count*", withcode=True)
    entries = {f[1]: f for f in library[5]}
    assert library[1] == b"counters" and library[7].decode() == LIBRARY
    assert set(entries) == {b"bump", b"peek"}
    payload = r.function_dump()
    r.function_delete("counters")
    with pytest.raises(ResponseError, match="Function not found"):
        r.fcall("bump", 1, "c", 1)
    assert r.function_restore(payload)
    assert r.fcall("bump", 1, "c", 1) == 4


def add(a, b):
    return a + b


def test_an_rq_job_goes_round_trip(kvik_port):
    r = client(kvik_port)
    queue = rq.Queue("kvik-jobs", connection=r)
    job = queue.enqueue(add, 2, 3)
    assert job.get_status() == "queued"
    worker = rq.SimpleWorker([queue], connection=r)
    assert worker.work(burst=True)
    job.refresh()
    assert job.get_status() == "finished"
    assert job.return_value() == 5
    assert queue.count == 0
