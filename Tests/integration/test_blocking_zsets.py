"""ZMPOP and the blocking BZPOPMIN, BZPOPMAX and BZMPOP against the real cairnd: Redis 7.0's
replies and errors, woken by ZADD from another client and by EXEC, timeouts, MULTI."""
import threading
import time

import pytest
import redis


def scored(reply):
    """[key, [[member, score] ...]] with scores as floats (RESP2 sends them as text)."""
    return None if reply is None else [reply[0], [[m, float(sc)] for m, sc in reply[1]]]


def test_zmpop(r):
    r.zadd("z", {"a": 1, "b": 2.5, "c": 3})
    assert scored(r.zmpop(1, ["z"], min=True)) == [b"z", [[b"a", 1.0]]]
    assert scored(r.zmpop(2, ["nope", "z"], max=True, count=5)) == [b"z", [[b"c", 3.0], [b"b", 2.5]]]
    assert r.exists("z") == 0
    assert r.zmpop(1, ["z"], min=True) is None
    with pytest.raises(redis.ResponseError, match="^numkeys should be greater than 0$"):
        r.execute_command("ZMPOP", 0, "z", "MIN")
    with pytest.raises(redis.ResponseError, match="^count should be greater than 0$"):
        r.execute_command("ZMPOP", 1, "z", "MIN", "COUNT", 0)
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("ZMPOP", 1, "z", "MIDDLE")
    r.set("s", "v")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.zmpop(1, ["s"], min=True)


def test_bzpop_answers_at_once_when_a_member_is_there(r):
    r.zadd("z", {"a": 1, "b": 2})
    assert tuple(r.bzpopmin(["nope", "z"], 1)) == (b"z", b"a", 1.0)
    assert tuple(r.bzpopmax(["z"], 1)) == (b"z", b"b", 2.0)
    assert r.bzpopmin(["z"], 0.1) is None
    r.zadd("z", {"x": 5, "y": 6})
    assert scored(r.bzmpop(1, 1, ["z"], min=True, count=10)) == [b"z", [[b"x", 5.0], [b"y", 6.0]]]
    with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
        r.bzpopmin(["z"], -1)


def test_bzpopmin_is_woken_by_zadd_and_by_exec(server):
    waiter = server.client()
    other = server.client()
    got = []
    t = threading.Thread(target=lambda: got.append(waiter.bzpopmin(["jobs"], 5)))
    t.start()
    time.sleep(0.3)
    assert got == [], "blocked while the sorted set is empty"
    other.zadd("jobs", {"first": 10, "second": 20})
    t.join(5)
    assert [tuple(g) for g in got] == [(b"jobs", b"first", 10.0)]
    t = threading.Thread(target=lambda: got.append(waiter.bzpopmax(["jobs2"], 5)))
    t.start()
    time.sleep(0.3)
    p = other.pipeline(transaction=True)
    p.zadd("jobs2", {"only": 1})
    p.execute()
    t.join(5)
    assert tuple(got[1]) == (b"jobs2", b"only", 1.0)


def test_bzpop_times_out_and_does_not_block_in_multi(server):
    c = server.client()
    started = time.time()
    assert c.bzpopmin(["empty"], 0.3) is None
    took = time.time() - started
    assert 0.25 <= took < 2, took
    p = c.pipeline(transaction=True)
    p.bzpopmin(["empty"], 0)
    assert p.execute() == [None], "inside MULTI a blocking pop answers at once"
