"""String commands through redis-py, in RESP2 and RESP3."""
import time

import pytest
import redis


def test_set_get_and_options(r):
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.set("k", "w", nx=True) is None
    assert r.set("k", "w", xx=True, get=True) == b"v"
    assert r.get("k") == b"w"
    assert r.set("missing", "x", xx=True) is None
    assert r.getset("k", "z") == b"w"
    assert r.getdel("k") == b"z"
    assert r.get("k") is None


def test_binary_values(r):
    value = bytes(range(256)) * 4
    r.set(b"\x00bin\xff", value)
    assert r.get(b"\x00bin\xff") == value


def test_setnx_setex_psetex(r):
    assert r.setnx("a", 1) is True
    assert r.setnx("a", 2) is False
    assert r.execute_command("SETEX", "b", 100, "x") in (True, b"OK", "OK")
    assert 90 <= r.ttl("b") <= 100
    assert r.psetex("c", 100000, "y") is True
    assert 90000 <= r.pttl("c") <= 100000


def test_counters(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 41) == 42
    assert r.decr("n") == 41
    assert r.decrby("n", 1) == 40
    assert r.incrbyfloat("f", 10.5) == 10.5
    assert r.incrbyfloat("f", 0.1) == pytest.approx(10.6)
    r.set("s", "abc")
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.incr("s")
    with pytest.raises(redis.ResponseError, match="value is not a valid float"):
        r.incrbyfloat("s", 1)
    r.set("max", 2**63 - 1)
    with pytest.raises(redis.ResponseError, match="increment or decrement would overflow"):
        r.incr("max")


def test_append_strlen_ranges(r):
    assert r.append("a", "Hello") == 5
    assert r.append("a", " World") == 11
    assert r.strlen("a") == 11
    assert r.strlen("nokey") == 0
    assert r.getrange("a", 0, 4) == b"Hello"
    assert r.getrange("a", -5, -1) == b"World"
    assert r.setrange("a", 6, "Cairn") == 11
    assert r.get("a") == b"Hello Cairn"
    assert r.setrange("pad", 2, "x") == 3
    assert r.get("pad") == b"\x00\x00x"


def test_mget_mset_msetnx(r):
    assert r.mset({"a": 1, "b": 2}) is True
    assert r.mget("a", "b", "c") == [b"1", b"2", None]
    assert r.msetnx({"c": 3, "a": 9}) is False
    assert r.get("c") is None
    assert r.msetnx({"c": 3, "d": 4}) is True


def test_getex(r):
    r.set("g", "v")
    assert r.getex("g", ex=100) == b"v"
    assert 90 <= r.ttl("g") <= 100
    assert r.getex("g", persist=True) == b"v"
    assert r.ttl("g") == -1


def test_error_replies(r):
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'get' command"):
        r.execute_command("GET")
    with pytest.raises(redis.ResponseError, match="unknown command 'FOO'"):
        r.execute_command("FOO", "bar")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", "k", "v", "NX", "XX")
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'set' command"):
        r.execute_command("SET", "k", "v", "EX", "-1")


def test_append_in_steps_keeps_ttl_and_survives_restart(fresh_server):
    """APPEND writes merge operands (only the new bytes); the value, its TTL and its length
    must be exactly what appending in place gives, before and after a restart."""
    s = fresh_server()
    c = s.client()
    c.set("log", "start:", ex=1000)
    expected = b"start:"
    for i in range(300):  # past the 64 operands kept per key in a memtable
        piece = f"{i},".encode()
        expected += piece
        assert c.append("log", piece) == len(expected)
    assert c.get("log") == expected and 990 < c.ttl("log") <= 1000
    assert c.append("fresh", "x") == 1 and c.ttl("fresh") == -1
    c.set("gone", "old", px=1)
    time.sleep(0.05)
    assert c.append("gone", "new") == 3 and c.get("gone") == b"new" and c.ttl("gone") == -1
    s.restart()
    c = s.client()
    assert c.get("log") == expected and c.strlen("log") == len(expected)
    assert c.get("gone") == b"new"
