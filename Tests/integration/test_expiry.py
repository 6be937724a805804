"""Expiry options and edge cases through redis-py, RESP2 and RESP3, against the real cairnd."""
import time

import pytest
import redis


def test_set_expiry_options(r):
    now = time.time()
    assert r.set("ex", "v", ex=100) is True
    assert 90 <= r.ttl("ex") <= 100
    assert r.set("px", "v", px=100_000) is True
    assert 90_000 <= r.pttl("px") <= 100_000
    assert r.set("exat", "v", exat=int(now) + 500) is True
    assert r.expiretime("exat") == int(now) + 500
    assert r.set("pxat", "v", pxat=int(now * 1000) + 600_000) is True
    assert r.execute_command("PEXPIRETIME", "pxat") == int(now * 1000) + 600_000
    assert r.set("ex", "new", keepttl=True) is True
    assert r.get("ex") == b"new" and 90 <= r.ttl("ex") <= 100, "KEEPTTL keeps the old expiry"
    assert r.set("ex", "plain") is True
    assert r.ttl("ex") == -1, "SET without KEEPTTL clears it"
    assert r.set("past", "v", pxat=int(now * 1000) - 1000) is True
    assert r.exists("past") == 0, "an expiry in the past leaves no key"


def test_setex_psetex_getex(r):
    assert r.setex("a", 100, "v") is True
    assert 90 <= r.ttl("a") <= 100
    assert r.psetex("b", 100_000, "v") is True
    assert 90_000 <= r.pttl("b") <= 100_000
    assert r.getex("b", px=5000) == b"v"
    assert 3000 <= r.pttl("b") <= 5000
    at = int(time.time()) + 700
    assert r.getex("b", exat=at) == b"v"
    assert r.expiretime("b") == at
    assert r.getex("b", pxat=at * 1000 + 1) == b"v"
    assert r.execute_command("PEXPIRETIME", "b") == at * 1000 + 1
    assert r.getex("missing", ex=10) is None


def test_expire_nx_xx_and_missing_keys(r):
    r.set("k", "v")
    assert r.expire("k", 100, xx=True) is False, "XX: no expiry yet"
    assert r.expire("k", 100, nx=True) is True
    assert r.expire("k", 200, nx=True) is False, "NX: it has one"
    assert r.expire("k", 300, xx=True) is True
    assert 290 <= r.ttl("k") <= 300
    assert r.expire("k", 10, gt=True) is False
    assert r.pexpire("missing", 100) is False
    assert r.expireat("missing", int(time.time()) + 10) is False
    assert r.persist("missing") is False
    assert r.persist("k") is True and r.persist("k") is False
    assert r.pttl("missing") == -2 and r.pttl("k") == -1
    assert r.expiretime("missing") == -2 and r.expiretime("k") == -1


def test_expiry_errors_have_redis_texts(r):
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'set' command"):
        r.set("k", "v", ex=0)
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'setex' command"):
        r.setex("k", -5, "v")
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.execute_command("EXPIRE", "k", "soon")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", "k", "v", "EX", "10", "PX", "10")
    with pytest.raises(redis.ResponseError):
        r.execute_command("EXPIRE", "k", "10", "NX", "XX")


def test_expired_keys_invisible_to_every_reader(r):
    r.set("gone", "v", px=100)
    r.set("kept", "v")
    snapshot = r.execute_command("SNAPSHOT.CREATE")
    time.sleep(0.25)
    assert r.type("gone") == b"none"
    assert r.mget("gone", "kept") == [None, b"v"]
    assert r.execute_command("RANGE", "-", "+", "KEYSONLY") == [b"kept"]
    it = r.execute_command("ITER.OPEN")
    entries = r.execute_command("ITER.NEXT", it, "10")
    assert [e for e in entries if isinstance(e, bytes)] == [b"kept", b"v"]
    # A snapshot taken while the key was live still never hands out an expired value.
    r.execute_command("SNAPSHOT.USE", snapshot)
    assert r.get("gone") is None and r.get("kept") == b"v"
    r.execute_command("SNAPSHOT.USE", "NONE")
    r.execute_command("SNAPSHOT.RELEASE", snapshot)
    assert r.getrange("gone", 0, -1) == b"" and r.strlen("gone") == 0


def test_ttl_in_another_family_and_merge_keeps_it(r):
    try:
        r.execute_command("CF.DROP", "counters")
    except redis.ResponseError:
        pass
    r.execute_command("CF.CREATE", "counters", "MERGE", "add")
    r.execute_command("CF.USE", "counters")
    try:
        r.set("hits", 1, ex=100)
        assert r.execute_command("MERGE", "hits", "5") is not None
        assert r.get("hits") == b"6"
        assert 90 <= r.ttl("hits") <= 100, "MERGE keeps the TTL, as INCR does"
        assert r.incr("hits") == 7 and 90 <= r.ttl("hits") <= 100
        r.set("brief", "v", px=100)
        time.sleep(0.25)
        assert r.exists("brief") == 0
        assert r.keys("*") == [b"hits"]
    finally:
        r.execute_command("CF.USE", "default")
