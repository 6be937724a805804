"""Hashes through redis-py, RESP2 and RESP3, against the real cairnd: every command, Redis's
replies and errors, WRONGTYPE, MULTI/EXEC, restart, and concurrent increments."""
import threading

import pytest
import redis

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_set_get_and_counts(r):
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hset("h", mapping={"b": "3", "c": "4"}) == 1, "only new fields count"
    assert r.hget("h", "b") == b"3"
    assert r.hget("h", "nope") is None
    assert r.hget("missing", "a") is None
    assert r.hlen("h") == 3 and r.hlen("missing") == 0
    assert r.hmget("h", "a", "x", "c") == [b"1", None, b"4"]
    assert r.hmget("missing", "a") == [None]
    assert r.hstrlen("h", "a") == 1 and r.hstrlen("h", "x") == 0
    assert r.hexists("h", "a") is True and r.hexists("h", "x") is False
    assert r.execute_command("HMSET", "h", "d", "5") in (b"OK", "OK", True)
    assert r.hsetnx("h", "d", "9") == 0 and r.hget("h", "d") == b"5"
    assert r.hsetnx("h", "e", "6") == 1
    assert r.hkeys("h") == [b"a", b"b", b"c", b"d", b"e"], "fields in byte order"
    assert r.hvals("h") == [b"1", b"3", b"4", b"5", b"6"]
    assert r.hgetall("h") == {b"a": b"1", b"b": b"3", b"c": b"4", b"d": b"5", b"e": b"6"}
    assert r.hgetall("missing") == {}
    assert r.execute_command("HSET", "dup", "f", "1", "f", "2") == 1, "a field given twice counts once"
    assert r.hget("dup", "f") == b"2", "the last value wins"


def test_delete_fields_and_the_emptied_hash(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hdel("h", "a", "a", "x") == 1
    assert r.hlen("h") == 2
    assert r.hdel("h", "b", "c") == 2
    assert r.exists("h") == 0, "a hash with no fields is deleted"
    assert r.type("h") in (b"none", "none")
    assert r.hdel("missing", "a") == 0


def test_increments(r):
    assert r.hincrby("h", "n", 5) == 5
    assert r.hincrby("h", "n", -7) == -2
    assert r.hincrbyfloat("h", "f", 1.5) == 1.5
    assert r.hincrbyfloat("h", "f", "2.25") == 3.75
    assert r.hget("h", "f") == b"3.75"
    r.hset("h", "s", "abc")
    with pytest.raises(redis.ResponseError, match="^hash value is not an integer$"):
        r.hincrby("h", "s", 1)
    with pytest.raises(redis.ResponseError, match="^hash value is not a float$"):
        r.hincrbyfloat("h", "s", 1)
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.execute_command("HINCRBY", "h", "n", "x")
    with pytest.raises(redis.ResponseError, match="^value is not a valid float$"):
        r.execute_command("HINCRBYFLOAT", "h", "f", "x")
    r.hset("h", "big", str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match="^increment or decrement would overflow$"):
        r.hincrby("h", "big", 1)
    # An infinite increment is refused before the field is read, with Redis 7.0's own text.
    with pytest.raises(redis.ResponseError, match="^value is NaN or Infinity$"):
        r.execute_command("HINCRBYFLOAT", "h", "f", "inf")
    r.hset("h", "huge", "1e4932")  # near the largest long double
    with pytest.raises(redis.ResponseError, match="^increment would produce NaN or Infinity$"):
        r.execute_command("HINCRBYFLOAT", "h", "huge", "1e4932")


def test_errors_and_wrongtype(r):
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'hset' command$"):
        r.execute_command("HSET", "h", "f")
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'hset' command$"):
        r.execute_command("HSET", "h", "f", "v", "g")
    r.set("s", "v")
    for call in (lambda: r.hget("s", "f"), lambda: r.hset("s", "f", "v"), lambda: r.hgetall("s"),
                 lambda: r.hlen("s"), lambda: r.hdel("s", "f"), lambda: r.hincrby("s", "f", 1)):
        with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
            call()
    r.hset("h", "f", "v")
    for call in (lambda: r.get("h"), lambda: r.incr("h"), lambda: r.append("h", "x"),
                 lambda: r.strlen("h"), lambda: r.getrange("h", 0, 1), lambda: r.getset("h", "x"),
                 lambda: r.set("h", "x", get=True)):
        with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
            call()
    assert r.mget("h", "s") == [None, b"v"], "MGET answers nil for another type"
    assert r.set("h", "x", nx=True) is None, "NX sees the hash"
    assert r.setnx("h", "x") is False
    assert r.hget("h", "f") == b"v"
    assert r.set("h", "now a string") is True, "SET replaces any type"
    assert r.get("h") == b"now a string"
    assert r.hget("h2", "f") is None


def test_pipelined_gets_answer_wrongtype_for_a_hash(r):
    r.hset("h", "f", "v")
    r.set("s", "v")
    p = r.pipeline(transaction=False)
    for key in ("s", "h", "s", "missing", "h"):
        p.get(key)
    out = p.execute(raise_on_error=False)
    assert out[0] == b"v" and out[2] == b"v" and out[3] is None
    assert isinstance(out[1], redis.ResponseError) and str(out[1]) == WRONGTYPE
    assert isinstance(out[4], redis.ResponseError)
    p = r.pipeline(transaction=False)
    for _ in range(3):
        p.incr("h")
    assert all(isinstance(e, redis.ResponseError) and str(e) == WRONGTYPE for e in p.execute(raise_on_error=False))
    assert r.hget("h", "f") == b"v"


def test_random_fields(r):
    fields = {f"f{i}": str(i) for i in range(20)}
    r.hset("h", mapping=fields)
    assert r.hrandfield("h").decode() in fields
    assert r.hrandfield("missing") is None
    picked = r.hrandfield("h", 5)
    assert len(picked) == 5 and len(set(picked)) == 5
    assert len(r.hrandfield("h", 100)) == 20, "a positive count gives distinct fields, at most all"
    repeated = r.hrandfield("h", -50)
    assert len(repeated) == 50 and all(f.decode() in fields for f in repeated)
    with_values = r.hrandfield("h", 3, withvalues=True)
    if r.connection_pool.connection_kwargs.get("protocol") == 3:
        pairs = with_values
    else:
        pairs = list(zip(with_values[0::2], with_values[1::2]))
    assert len(pairs) == 3 and all(fields[f.decode()] == v.decode() for f, v in pairs)
    assert r.hrandfield("h", 0) == []
    assert r.hrandfield("missing", 3) == []
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("HRANDFIELD", "h", "1", "WITHSCORES")


def test_hscan_visits_every_field_once(r):
    fields = {f"f{i:04d}": str(i) for i in range(1000)}
    r.hset("h", mapping=fields)
    seen = {}
    cursor = 0
    while True:
        cursor, page = r.hscan("h", cursor, count=97)
        for f, v in page.items():
            assert f not in seen
            seen[f] = v
        if cursor == 0:
            break
    assert seen == {k.encode(): v.encode() for k, v in fields.items()}
    cursor, page = r.hscan("h", 0, match="f000*", count=2000)
    assert cursor == 0 and sorted(page) == [f"f000{i}".encode() for i in range(10)]
    assert r.hscan("missing", 0) == (0, {})


def test_key_commands_see_hashes(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.set("s", "v")
    assert r.type("h") in (b"hash", "hash")
    assert r.expire("h", 100) is True and 90 <= r.ttl("h") <= 100
    assert r.hget("h", "a") == b"1", "EXPIRE keeps the fields"
    assert r.persist("h") is True and r.ttl("h") == -1
    assert r.hlen("h") == 2
    assert r.rename("h", "h2") is True
    assert r.exists("h") == 0 and r.hgetall("h2") == {b"a": b"1", b"b": b"2"}
    assert r.copy("h2", "h3") is True
    r.hset("h3", "c", "3")
    assert r.hlen("h2") == 2 and r.hlen("h3") == 3, "a copy is independent"
    assert r.rename("h3", "s") is True, "RENAME over a string"
    assert r.hlen("s") == 3 and r.type("s") in (b"hash", "hash")
    assert sorted(r.scan(0, _type="hash", count=100)[1]) == [b"h2", b"s"]
    r.set("plain", "v")
    assert r.scan(0, _type="string", count=100)[1] == [b"plain"]
    assert r.scan(0, _type="nosuchtype", count=100)[1] == []
    assert sorted(r.keys("*")) == [b"h2", b"plain", b"s"]
    assert r.dbsize() == 3
    assert r.delete("h2", "s", "plain") == 3
    assert r.dbsize() == 0
    r.hset("gone", "f", "v")
    r.pexpire("gone", 1)
    import time
    time.sleep(0.05)
    assert r.hget("gone", "f") is None and r.exists("gone") == 0
    r.hset("gone", "g", "w")
    assert r.hgetall("gone") == {b"g": b"w"}, "a hash made again under an expired one starts empty"


def test_transactions(r):
    r.hset("h", "n", "1")
    p = r.pipeline(transaction=True)
    p.hincrby("h", "n", 2)
    p.hset("h", "m", "x")
    p.hgetall("h")
    p.hdel("h", "n")
    p.hlen("h")
    p.delete("h")
    p.hset("h", "fresh", "1")
    p.hgetall("h")
    out = p.execute()
    assert out[0] == 3 and out[1] == 1
    assert out[2] == {b"n": b"3", b"m": b"x"}, "reads in EXEC see earlier writes"
    assert out[3] == 1 and out[4] == 1 and out[5] == 1 and out[6] == 1
    assert out[7] == {b"fresh": b"1"}, "a hash deleted and made again inside EXEC"
    assert r.hgetall("h") == {b"fresh": b"1"}
    # A WATCHed hash changed by another client aborts the transaction.
    with r.pipeline(transaction=True) as p:
        p.watch("h")
        r.hset("h", "other", "1")
        p.multi()
        p.hset("h", "mine", "1")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.hexists("h", "mine") is False


def test_concurrent_increments_are_exact(server):
    c = server.client()
    c.delete("counter")
    threads, per = 8, 250

    def work():
        k = server.client()
        for _ in range(per):
            k.hincrby("counter", "n", 1)
            k.hincrbyfloat("counter", "f", 0.5)
            k.hset("counter", f"t{threading.get_ident()}", "1")

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert c.hget("counter", "n") == str(threads * per).encode()
    assert float(c.hget("counter", "f")) == threads * per * 0.5
    assert c.hlen("counter") == 2 + threads


def test_hashes_survive_a_restart_and_a_kill(fresh_server):
    srv = fresh_server()
    try:
        c = srv.client()
        c.hset("h", mapping={f"f{i}": str(i) for i in range(500)})
        c.expire("h", 1000)
        c.hset("other", "x", "y")
        srv.restart()
        c = srv.client()
        assert c.hlen("h") == 500 and c.hget("h", "f42") == b"42" and c.ttl("h") > 900
        c.hdel("h", "f1")
        srv.stop(__import__("signal").SIGKILL)
        srv.start()
        c = srv.client()
        assert c.hlen("h") == 499 and c.hget("h", "f1") is None and c.hgetall("other") == {b"x": b"y"}
    finally:
        srv.cleanup()


def test_snapshot_reads_a_hash_as_it_was(r):
    r.hset("h", mapping={"a": "1"})
    snap = r.execute_command("SNAPSHOT.CREATE")
    r.hset("h", mapping={"a": "2", "b": "2"})
    r.execute_command("SNAPSHOT.USE", snap)
    try:
        assert r.hgetall("h") == {b"a": b"1"}
        assert r.hget("h", "a") == b"1" and r.hlen("h") == 1
    finally:
        r.execute_command("SNAPSHOT.USE", "NONE")
        r.execute_command("SNAPSHOT.RELEASE", snap)
    assert r.hgetall("h") == {b"a": b"2", b"b": b"2"}


def test_column_families_keep_hashes_apart(r):
    r.execute_command("CF.CREATE", "hashfam")
    try:
        r.hset("h", "f", "default")
        r.execute_command("CF.USE", "hashfam")
        assert r.hget("h", "f") is None
        r.hset("h", "f", "other")
        assert r.hget("h", "f") == b"other"
        r.flushdb()
        assert r.hget("h", "f") is None
        r.hset("h", "f", "again")
        r.execute_command("CF.USE", "default")
        assert r.hget("h", "f") == b"default"
    finally:
        r.execute_command("CF.USE", "default")
        r.execute_command("CF.DROP", "hashfam")
    r.execute_command("CF.CREATE", "hashfam")
    r.execute_command("CF.USE", "hashfam")
    try:
        assert r.hget("h", "f") is None, "a family made again does not see the dropped one's hashes"
    finally:
        r.execute_command("CF.USE", "default")
        r.execute_command("CF.DROP", "hashfam")
    assert b"cairn.members" not in r.execute_command("CF.LIST")


def test_range_lists_a_hash_key_with_a_null_value(r):
    r.set("a", "1")
    r.hset("b", "f", "v")
    r.set("c", "3")
    assert r.execute_command("RANGE", "-", "+") == [b"a", b"1", b"b", None, b"c", b"3"]


def test_deleting_a_big_hash_is_quick_and_compaction_reclaims_it(fresh_server):
    import os
    import time
    srv = fresh_server()
    try:
        c = srv.client()
        value = os.urandom(50).hex()  # incompressible, so the files show the data
        for start in range(0, 200_000, 10_000):
            c.hset("big", mapping={f"field:{i:07d}": value + str(i) for i in range(start, start + 10_000)})
        assert c.hlen("big") == 200_000
        c.execute_command("COMPACT")

        def size():
            return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(os.path.join(srv.directory, "data")) for f in fs
                       if f.endswith(".sst"))

        before = size()
        started = time.perf_counter()
        assert c.delete("big") == 1
        took = time.perf_counter() - started
        assert c.exists("big") == 0 and c.hget("big", "field:0000001") is None
        c.execute_command("COMPACT")
        after = size()
        print(f"200,000-field hash: DEL took {took * 1000:.1f} ms; table files {before >> 20} MiB -> {after >> 20} MiB")
        assert after < before / 4, (before, after)
    finally:
        srv.cleanup()


def test_encoding_thresholds_are_accepted_and_change_nothing(r):
    assert r.config_get("hash-max-ziplist-entries") == {"hash-max-ziplist-entries": "128"}
    assert r.config_set("hash-max-listpack-entries", 1) is True
    assert r.config_get("hash-max-ziplist-entries") == {"hash-max-ziplist-entries": "1"}, "the old name is the same setting"
    for name, value in [("zset-max-ziplist-entries", 0), ("set-max-intset-entries", 4), ("list-max-listpack-size", -3),
                        ("hash-max-listpack-value", 8), ("list-compress-depth", 1)]:
        assert r.config_set(name, value) is True
    r.hset("h", mapping={"a": "x" * 100, "b": "y", "c": "z"})
    assert r.object("encoding", "h") in (b"hashtable", "hashtable")
    assert r.hgetall("h") == {b"a": b"x" * 100, b"b": b"y", b"c": b"z"}
    with pytest.raises(redis.ResponseError, match="argument couldn't be parsed into an integer"):
        r.config_set("zset-max-listpack-entries", "many")
    r.config_set("hash-max-listpack-entries", 128)
