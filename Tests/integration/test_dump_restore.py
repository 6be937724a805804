"""DUMP / RESTORE / MIGRATE against the real cairnd and the real redis-server 7.0: payloads
move both ways for every type and every encoding Redis 7.0 writes (listpack, intset,
quicklist, skiplist, hashtable; strings raw, integer and LZF-compressed)."""
import os
import subprocess
import time

import pytest
import redis

from conftest import CLI, REDIS_SERVER, Cairnd, RedisServer, free_port

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def redis_server():
    s = RedisServer()
    yield s
    s.stop()


@pytest.fixture
def rs(redis_server):
    c = redis_server.client()
    c.flushall()
    yield c
    c.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(server, request):
    c = server.client(protocol=request.param)
    c.flushall()
    yield c
    c.close()


def fill(c, prefix="", big=False):
    """One key of every type; `big` makes Redis choose its large encodings (quicklist of many
    nodes, hashtable, skiplist, LZF-compressed strings)."""
    n = 300 if big else 3
    c.set(prefix + "str", "hello world")
    c.set(prefix + "int", 12345)
    c.set(prefix + "neg", -7)
    c.set(prefix + "long", "x" * 200 + "y" * 200)
    c.set(prefix + "bin", bytes(range(256)))
    c.rpush(prefix + "list", *[f"e{i}" for i in range(n)], 5, -300, 70000, 2**40, "z" * 100)
    c.sadd(prefix + "intset", *range(-2, n))
    c.sadd(prefix + "set", *[f"m{i}" for i in range(n)])
    c.zadd(prefix + "zset", {f"m{i}": i * 1.5 - 10 for i in range(n)} | {"inf": float("inf"), "ninf": float("-inf")})
    c.hset(prefix + "hash", mapping={f"f{i}": f"v{i}" for i in range(n)} | {"num": 42, "long": "q" * (100 if big else 40)})


def snapshot(c, keys):
    out = {}
    for k in keys:
        t = c.type(k).decode()
        if t == "string":
            v = c.get(k)
        elif t == "list":
            v = c.lrange(k, 0, -1)
        elif t == "set":
            v = sorted(c.smembers(k))
        elif t == "zset":
            v = [tuple(e) for e in c.zrange(k, 0, -1, withscores=True)]
        elif t == "hash":
            v = sorted(c.hgetall(k).items())
        else:
            v = None
        out[k] = (t, v)
    return out


KEYS = ["str", "int", "neg", "long", "bin", "list", "intset", "set", "zset", "hash"]


@pytest.mark.parametrize("big", [False, True], ids=["small", "big"])
def test_redis_payloads_restore_into_cairn(r, rs, big):
    fill(rs, big=big)
    expected = snapshot(rs, KEYS)
    encodings = {k: rs.object("encoding", k) for k in KEYS}
    if big:
        assert encodings["list"] == b"quicklist" and encodings["set"] == b"hashtable"
        assert encodings["zset"] == b"skiplist" and encodings["hash"] == b"hashtable"
    else:
        assert encodings["intset"] == b"intset" and encodings["zset"] == b"listpack"
        assert encodings["hash"] == b"listpack"
    for k in KEYS:
        assert r.restore(k, 0, rs.dump(k)) == b"OK"
    assert snapshot(r, KEYS) == expected
    # And back: Cairn's payloads restore into Redis as the same values.
    rs.flushall()
    for k in KEYS:
        assert rs.restore(k, 0, r.dump(k)) == b"OK"
    assert snapshot(rs, KEYS) == expected


def test_big_list_of_many_quicklist_nodes_and_plain_nodes(r, rs):
    rs.rpush("l", *[f"element-{i}" for i in range(5000)])
    rs.rpush("l", "p" * 20000)  # bigger than a node: a PLAIN quicklist node
    assert r.restore("l", 0, rs.dump("l")) == b"OK"
    assert r.llen("l") == 5001
    assert r.lrange("l", 0, -1) == rs.lrange("l", 0, -1)


def test_dump_missing_key_and_round_trip_in_cairn(r):
    assert r.dump("missing") is None
    fill(r)
    before = snapshot(r, KEYS)
    payloads = {k: r.dump(k) for k in KEYS}
    r.flushall()
    for k, p in payloads.items():
        assert r.restore(k, 0, p) == b"OK"
    assert snapshot(r, KEYS) == before


def test_restore_errors(r, rs):
    rs.set("k", "v")
    good = rs.dump("k")
    r.set("k", "old")
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists.$"):
        r.restore("k", 0, good)
    with pytest.raises(redis.ResponseError, match="^Invalid TTL value, must be >= 0$"):
        r.restore("new", -1, good)
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.restore("new", "x", good)
    bad = bytearray(good)
    bad[1] ^= 0xFF
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        r.restore("new", 0, bytes(bad))
    future = bytearray(good)
    future[-10] = 11  # RDB version 11
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        r.restore("new", 0, bytes(future))
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        r.restore("new", 0, b"short")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("RESTORE", "new", 0, good, "BOGUS")
    with pytest.raises(redis.ResponseError, match="^Invalid IDLETIME value, must be >= 0$"):
        r.execute_command("RESTORE", "new", 0, good, "IDLETIME", -1)
    with pytest.raises(redis.ResponseError, match=r"^Invalid FREQ value, must be >= 0 and <= 255$"):
        r.execute_command("RESTORE", "new", 0, good, "FREQ", 256)
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("RESTORE", "new", 0, good, "FREQ", 1, "IDLETIME", 1)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'restore' command"):
        r.execute_command("RESTORE", "new", 0)
    assert r.exists("new") == 0


def test_restore_errors_match_redis(r, rs):
    """The same bad requests get the same replies from both servers."""
    rs.set("k", "v")
    good = rs.dump("k")
    payload = bytearray(good)
    payload[0] = 15  # a stream: a type Cairn does not have, and a body that is not one
    body = bytes(payload[:-8])
    from_redis = None
    cases = [("k", 0, good), ("n", -5, good), ("n", 0, good[:-1] + b"\x00"), ("n", 0, b"")]
    rs_answers, r_answers = [], []
    for client, answers in ((rs, rs_answers), (r, r_answers)):
        client.set("k", "x")
        for args in cases:
            try:
                answers.append(client.restore(*args))
            except redis.ResponseError as e:
                answers.append(str(e))
    assert r_answers == rs_answers


def test_replace_absttl_idletime_freq(r, rs):
    rs.set("k", "new")
    p = rs.dump("k")
    r.rpush("k", "a", "b")
    assert r.restore("k", 0, p, replace=True) == b"OK"
    assert r.get("k") == b"new"
    assert r.restore("t", 5000, p) == b"OK"
    assert 4000 < r.pttl("t") <= 5000
    at = int(time.time() * 1000) + 100_000
    assert r.restore("a", at, p, absttl=True) == b"OK"
    assert r.execute_command("PEXPIRETIME", "a") == at
    assert r.restore("i", 0, p, idletime=10) == b"OK" and r.get("i") == b"new"
    assert r.restore("f", 0, p, frequency=10) == b"OK" and r.get("f") == b"new"
    # An absolute expiry already past: OK, and REPLACE removes what was there.
    r.set("gone", "x")
    assert r.restore("gone", 1000, p, replace=True, absttl=True) == b"OK"
    assert r.exists("gone") == 0
    # A collection restored with a TTL keeps it; one restored over another type replaces it.
    rs.hset("h", mapping={"a": 1})
    r.set("h", "string")
    assert r.restore("h", 9000, rs.dump("h"), replace=True) == b"OK"
    assert r.hgetall("h") == {b"a": b"1"} and 8000 < r.pttl("h") <= 9000


def test_bad_data_format(r, rs):
    rs.hset("h", mapping={"a": 1})
    p = bytearray(rs.dump("h"))
    # A valid footer over a truncated body: checksum right, data wrong.
    body = bytes(p[:5]) + b"\x0a\x00"
    crc = crc64(body)
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        r.restore("x", 0, body + crc.to_bytes(8, "little"))
    # A set with a duplicate member, as a plain RDB set.
    body = b"\x02\x02\x01a\x01a" + b"\x0a\x00"
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        r.restore("x", 0, body + crc64(body).to_bytes(8, "little"))
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        rs.restore("x", 0, body + crc64(body).to_bytes(8, "little"))


def crc64(data):
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x95AC9329AC4BC9B5 if crc & 1 else crc >> 1
    return crc


def test_restore_inside_multi_and_blocked_pop(server, rs):
    rs.rpush("l", "x", "y")
    p = rs.dump("l")
    c = server.client()
    c.flushall()
    pipe = c.pipeline(transaction=True)
    pipe.restore("l", 0, p)
    pipe.lrange("l", 0, -1)
    pipe.dump("l")
    assert pipe.execute() == [b"OK", [b"x", b"y"], c.dump("l")]
    c.close()


def test_migrate_between_cairn_servers(fresh_server):
    a, b = fresh_server(), fresh_server()
    ca, cb = a.client(), b.client()
    fill(ca)
    ca.expire("str", 500)
    before = snapshot(ca, KEYS)
    assert ca.migrate("127.0.0.1", b.port, "str", 0, 5000) == b"OK"
    assert ca.exists("str") == 0 and cb.get("str") == b"hello world"
    assert 400 < cb.ttl("str") <= 500
    rest = [k for k in KEYS if k != "str"]
    assert ca.execute_command("MIGRATE", "127.0.0.1", b.port, "", 0, 5000, "KEYS", *rest, "missing") == b"OK"
    assert ca.dbsize() == 0
    assert snapshot(cb, KEYS) == before
    # COPY keeps the source; without REPLACE an existing target key is an error.
    ca.set("c", "1")
    assert ca.execute_command("MIGRATE", "127.0.0.1", b.port, "c", 0, 5000, "COPY") == b"OK"
    assert ca.get("c") == b"1" and cb.get("c") == b"1"
    ca.set("c", "2")
    with pytest.raises(redis.ResponseError, match="^Target instance replied with error: BUSYKEY Target key name already exists.$"):
        ca.execute_command("MIGRATE", "127.0.0.1", b.port, "c", 0, 5000)
    assert ca.get("c") == b"2", "a refused key stays"
    assert ca.execute_command("MIGRATE", "127.0.0.1", b.port, "c", 0, 5000, "REPLACE") == b"OK"
    assert cb.get("c") == b"2" and ca.exists("c") == 0
    # Only db 0 exists in Cairn: the target's SELECT error comes back.
    ca.set("d", "1")
    with pytest.raises(redis.ResponseError, match="^Target instance replied with error: "):
        ca.execute_command("MIGRATE", "127.0.0.1", b.port, "d", 1, 5000)


def test_migrate_to_redis_with_auth_and_errors(fresh_server, rs, redis_server):
    a = fresh_server()
    ca = a.client()
    fill(ca, big=True)
    before = snapshot(ca, KEYS)
    rs.config_set("requirepass", "sesame")
    try:
        with pytest.raises(redis.ResponseError, match="^Target instance replied with error: NOAUTH"):
            ca.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "", 0, 5000, "KEYS", *KEYS)
        assert ca.dbsize() == len(KEYS), "nothing moved"
        assert ca.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "", 0, 5000,
                                  "AUTH", "sesame", "KEYS", *KEYS) == b"OK"
        authed = redis_server.client(password="sesame")
        assert snapshot(authed, KEYS) == before
        ca.set("x", "1")
        assert ca.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "x", 0, 5000,
                                  "AUTH2", "default", "sesame") == b"OK"
        assert authed.get("x") == b"1"
    finally:
        redis_server.client(password="sesame").config_set("requirepass", "")
    assert ca.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "nokey", 0, 100) == b"NOKEY"
    ca.set("k", "v")
    with pytest.raises(redis.ResponseError, match="^IOERR error or timeout writing to target instance$"):
        ca.execute_command("MIGRATE", "127.0.0.1", free_port(), "k", 0, 100)
    with pytest.raises(redis.ResponseError, match="^When using MIGRATE KEYS option, the key argument must be set to the empty string$"):
        ca.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "k", 0, 100, "KEYS", "k")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        ca.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "k", 0, 100, "BOGUS")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        ca.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "k", "x", 100)
    assert ca.get("k") == b"v"


# cairn-cli migrate: a live Redis copied into Cairn.

def load_redis(c, n_strings=90_000, n_each=2_500):
    p = c.pipeline(transaction=False)
    for i in range(n_strings):
        if i % 3 == 0:
            p.set(f"s:{i}", f"value-{i}", ex=3600 + i % 100)
        elif i % 3 == 1:
            p.set(f"s:{i}", i)
        else:
            p.set(f"s:{i}", "x" * (30 + i % 50))
        if i % 5000 == 4999:
            p.execute()
    for i in range(n_each):
        size = 200 if i % 500 == 0 else 5  # a few big encodings among the listpacks
        p.hset(f"h:{i}", mapping={f"f{j}": j for j in range(size)})
        p.sadd(f"set:{i}", *(range(size) if i % 2 else [f"m{j}" for j in range(size)]))
        p.zadd(f"z:{i}", {f"m{j}": j / 3 for j in range(size)})
        p.rpush(f"l:{i}", *[f"e{j}" for j in range(size)])
        if i % 7 == 0:
            p.expire(f"h:{i}", 7200)
        if i % 1000 == 999:
            p.execute()
    p.execute()


def all_data(c):
    out = {}
    keys = sorted(c.scan_iter(count=5000))
    p = c.pipeline(transaction=False)
    for k in keys:
        p.type(k)
    types = p.execute()
    for k, t in zip(keys, types):
        t = t.decode()
        if t == "string":
            p.get(k)
        elif t == "hash":
            p.hgetall(k)
        elif t == "set":
            p.smembers(k)
        elif t == "zset":
            p.zrange(k, 0, -1, withscores=True)
        else:
            p.lrange(k, 0, -1)
        p.ttl(k)
    values = p.execute()
    for i, k in enumerate(keys):
        v, ttl = values[2 * i], values[2 * i + 1]
        v = [tuple(e) for e in v] if isinstance(v, list) and v and isinstance(v[0], (list, tuple)) else v
        out[k] = (v, ttl > 0)
    return out


def cli_run(*args, timeout=600):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, timeout=timeout)


def test_cli_migrate_copies_a_100k_key_redis(fresh_server, redis_server, rs):
    load_redis(rs)
    assert rs.dbsize() == 100_000
    target = fresh_server()
    result = cli_run("-p", target.port, "migrate", "--from", f"redis://127.0.0.1:{redis_server.port}", "--batch", 1000)
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "copied 100000 keys" in err and "DBSIZE source 100000, target 100000" in err
    assert "copied " in err.splitlines()[0], "plain progress lines when stderr is not a terminal"
    c = target.client()
    assert c.dbsize() == 100_000
    assert all_data(c) == all_data(rs)
    assert 3000 < c.ttl("s:0") <= 3700 and c.ttl("s:1") == -1


def test_cli_migrate_count_check_and_errors(fresh_server, redis_server, rs):
    rs.set("a", "1")
    rs.set("b", "2")
    target = fresh_server()
    c = target.client()
    c.set("extra", "x")
    result = cli_run("-p", target.port, "migrate", "--from", f"redis://127.0.0.1:{redis_server.port}")
    assert result.returncode == 1 and b"FAILED: the key counts differ" in result.stderr
    assert c.get("a") == b"1"
    # Cairn to Redis with --to, and credentials in the address.
    rs.flushall()
    rs.config_set("requirepass", "pw")
    try:
        result = cli_run("-p", target.port, "migrate", "--from", f"redis://127.0.0.1:{target.port}",
                         "--to", f"redis://:pw@127.0.0.1:{redis_server.port}")
        assert result.returncode == 0, result.stderr
        assert redis_server.client(password="pw").mget("a", "b", "extra") == [b"1", b"2", b"x"]
        result = cli_run("-p", target.port, "migrate", "--from", f"redis://127.0.0.1:{target.port}",
                         "--to", f"redis://127.0.0.1:{redis_server.port}")
        result2 = cli_run("-p", target.port, "migrate", "--from", f"redis://127.0.0.1:{target.port}",
                          "--to", f"redis://default:wrong@127.0.0.1:{redis_server.port}")
        assert result2.returncode == 2 and b"the target refused the login: WRONGPASS" in result2.stderr, result2.stderr
        assert result.returncode == 2 and b"NOAUTH" in result.stderr, result.stderr
    finally:
        redis_server.client(password="pw").config_set("requirepass", "")
    result = cli_run("-p", target.port, "migrate", "--from", f"redis://127.0.0.1:{free_port()}")
    assert result.returncode == 2 and b"Could not connect to the source" in result.stderr
    result = cli_run("migrate", "--from", "nonsense:x")
    assert result.returncode == 64


def test_restore_wakes_a_blocked_pop(server, rs):
    import threading
    rs.rpush("jobs", "from-redis")
    payload = rs.dump("jobs")
    c = server.client()
    c.delete("jobs")
    got = []
    t = threading.Thread(target=lambda: got.append(server.client().blpop("jobs", timeout=10)))
    t.start()
    deadline = time.time() + 5
    while c.info("clients")["blocked_clients"] == 0 and time.time() < deadline:
        time.sleep(0.02)
    assert c.restore("jobs", 0, payload) == b"OK"
    t.join(10)
    assert got == [(b"jobs", b"from-redis")]
