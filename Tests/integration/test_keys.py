"""Generic key commands and expiry through redis-py."""
import time

import pytest
import redis


def test_del_exists_type(r):
    r.mset({"a": 1, "b": 2})
    assert r.exists("a", "b", "c", "a") == 3
    assert r.type("a") == b"string"
    assert r.type("zz") == b"none"
    assert r.delete("a", "c") == 1
    assert r.unlink("b") == 1
    assert r.exists("a", "b") == 0


def test_rename_copy(r):
    r.set("a", "1", ex=100)
    assert r.rename("a", "b") is True
    assert r.get("b") == b"1"
    assert r.ttl("b") > 0
    with pytest.raises(redis.ResponseError, match="no such key"):
        r.rename("a", "c")
    r.set("c", "3")
    assert r.renamenx("b", "c") is False
    assert r.copy("b", "c") is False
    assert r.copy("b", "c", replace=True) is True
    assert r.get("c") == b"1"


def test_keys_scan_dbsize(r):
    with r.pipeline(transaction=False) as p:
        for i in range(10000):
            p.set(f"key:{i}", i)
        p.set("other", 1)
        p.execute()
    assert r.dbsize() == 10001
    assert len(r.keys("key:1?")) == 10
    assert set(r.keys("key:1[0-2]")) == {b"key:10", b"key:11", b"key:12"}
    seen = []
    for key in r.scan_iter(match="key:*", count=137):
        seen.append(key)
    assert len(seen) == 10000
    assert len(set(seen)) == 10000
    assert r.randomkey() is not None
    assert r.flushdb() is True
    assert r.dbsize() == 0
    assert r.randomkey() is None


def test_expire_family(r):
    assert r.ttl("missing") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1
    assert r.expire("missing", 10) is False
    assert r.expire("k", 100) is True
    assert 90 <= r.ttl("k") <= 100
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 50, lt=True) is True
    assert r.pexpire("k", 200000) is True
    assert r.expiretime("k") >= int(time.time()) + 199
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    at = int(time.time()) + 1000
    assert r.expireat("k", at) is True
    assert r.expiretime("k") == at
    assert r.pexpireat("k", at * 1000 + 5) is True
    assert r.execute_command("PEXPIRETIME", "k") == at * 1000 + 5
    r.set("k", "v2")
    assert r.ttl("k") == -1, "SET without KEEPTTL clears the TTL"
    assert r.expire("k", -1) is True
    assert r.exists("k") == 0, "a negative TTL deletes the key"


def test_expired_keys_are_invisible(r):
    r.set("short", "v", px=50)
    r.set("long", "v")
    time.sleep(0.2)
    assert r.get("short") is None
    assert r.exists("short") == 0
    assert r.keys("*") == [b"long"]
    assert r.dbsize() == 1


def test_background_sweep_deletes_expired_keys_unread(fresh_server):
    s = fresh_server()
    c = s.client()
    with c.pipeline(transaction=False) as p:
        for i in range(20000):
            p.set(f"ttl:{i}", "v", px=300)
        for i in range(100):
            p.set(f"keep:{i}", "v")
        p.execute()
    # The sweep deletes them, or, once a pass has deleted 10,000 and compacts that range, the
    # compaction's expiry filter drops the rest it meets: each key goes one way or the other.
    def gone():
        stats = c.info("stats")
        return stats["expired_keys"], stats["expired_values_compacted"]
    deadline = time.time() + 20
    while time.time() < deadline and sum(gone()) < 20000:
        time.sleep(0.2)
    swept, compacted = gone()
    assert swept + compacted >= 20000, f"swept {swept}, dropped by compaction {compacted}: keys left behind"
    assert swept >= 10000, "the sweep, not compaction alone, deleted them without any read"
    assert c.dbsize() == 100
