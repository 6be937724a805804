"""Sets through redis-py, RESP2 and RESP3, against the real cairnd: every command, Redis's
replies and errors, WRONGTYPE, MULTI/EXEC, restart, and concurrent pops and adds."""
import signal
import threading

import socket

import pytest
import redis

from conftest import resp_command

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def is_resp3(r):
    return r.connection_pool.connection_kwargs.get("protocol") == 3


def test_add_remove_and_membership(r):
    assert r.sadd("s", "a", "b", "c", "a") == 3
    assert r.sadd("s", "c", "d") == 1, "only new members count"
    assert r.scard("s") == 4 and r.scard("missing") == 0
    assert r.sismember("s", "a") in (1, True) and r.sismember("s", "x") in (0, False)
    assert r.sismember("missing", "a") in (0, False)
    assert r.smismember("s", "a", "x", "d") == [1, 0, 1]
    assert r.smismember("missing", "a", "b") == [0, 0]
    assert r.smembers("s") == {b"a", b"b", b"c", b"d"}
    assert r.smembers("missing") == set()
    assert r.srem("s", "a", "a", "x") == 1
    assert r.srem("missing", "a") == 0
    assert r.srem("s", "b", "c", "d") == 3
    assert r.exists("s") == 0, "a set with no members is deleted"
    assert r.sadd("bin", b"\x00\xff", b"") == 2
    assert r.smembers("bin") == {b"\x00\xff", b""}


def test_random_members_and_pops(r):
    members = {f"m{i}".encode() for i in range(30)}
    r.sadd("s", *members)
    assert r.srandmember("s") in members
    assert r.srandmember("missing") is None
    picked = r.srandmember("s", 10)
    assert len(picked) == 10 and len(set(picked)) == 10 and set(picked) <= members
    assert set(r.srandmember("s", 100)) == members, "a positive count gives distinct members, at most all"
    repeated = r.srandmember("s", -50)
    assert len(repeated) == 50 and set(repeated) <= members
    assert r.srandmember("s", 0) == [] and r.srandmember("missing", 5) == []
    assert r.scard("s") == 30, "SRANDMEMBER removes nothing"
    one = r.spop("s")
    assert one in members and r.sismember("s", one) in (0, False)
    popped = r.spop("s", 5)
    assert len(popped) == 5 and len(set(popped)) == 5 and one not in popped
    assert r.scard("s") == 24
    assert r.spop("s", 0) in ([], set())
    rest = r.spop("s", 100)
    assert len(rest) == 24 and r.exists("s") == 0
    assert set(rest) | set(popped) | {one} == members
    assert r.spop("missing") is None
    assert r.spop("missing", 3) in ([], set())
    with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
        r.spop("s", -1)
    with pytest.raises(redis.ResponseError, match="^value is out of range, value must between -9223372036854775807 and 9223372036854775807$"):
        r.srandmember("s", -2**63)
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("SPOP", "s", "1", "2")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.execute_command("SRANDMEMBER", "s", "x")


def wire(server, *commands):
    """The raw RESP3 replies to `commands` (after HELLO 3), for checking reply types."""
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(resp_command("HELLO", "3"))
        hello = b""
        while not hello.endswith(b"*0\r\n"):
            hello += s.recv(4096)
        s.sendall(b"".join(resp_command(*c) for c in commands) + resp_command("PING"))
        data = b""
        while not data.endswith(b"+PONG\r\n"):
            data += s.recv(65536)
        return data[:-len(b"+PONG\r\n")]


def test_reply_types_in_resp3(server):
    c = server.client()
    c.delete("s")
    c.sadd("s", "a", "b")
    assert wire(server, ("SPOP", "s", "1")) in (b"~1\r\n$1\r\na\r\n", b"~1\r\n$1\r\nb\r\n"), "SPOP with a count: a set"
    assert wire(server, ("SRANDMEMBER", "s", "1")).startswith(b"*1\r\n"), "SRANDMEMBER with a count: an array"
    assert wire(server, ("SMEMBERS", "s"), ("SINTER", "s"), ("SPOP", "missing", "2")).startswith(b"~1\r\n$1\r\n")
    assert wire(server, ("SPOP", "missing", "2"), ("SRANDMEMBER", "missing", "2")) == b"~0\r\n*0\r\n"


def test_big_set_pops_every_member_once(r):
    members = [f"member:{i:06d}" for i in range(6000)]
    for i in range(0, len(members), 1000):
        r.sadd("big", *members[i:i + 1000])
    seen = set()
    while True:
        batch = r.spop("big", 700)
        if not batch:
            break
        assert not (set(batch) & seen)
        seen |= set(batch)
        assert r.scard("big") == 6000 - len(seen)
    assert seen == {m.encode() for m in members}
    assert r.exists("big") == 0
    r.sadd("big", *members[:5000])
    for _ in range(1000):
        assert r.spop("big") is not None
    assert r.scard("big") == 4000 and len(r.smembers("big")) == 4000


def test_smove(r):
    r.sadd("a", "x", "y")
    r.sadd("b", "z")
    assert r.smove("a", "b", "x") is True
    assert r.smembers("a") == {b"y"} and r.smembers("b") == {b"x", b"z"}
    assert r.smove("a", "b", "nope") is False
    assert r.smove("missing", "b", "x") is False
    assert r.smove("a", "a", "y") is True and r.smembers("a") == {b"y"}
    assert r.smove("a", "a", "q") is False
    r.sadd("b", "y")
    assert r.smove("a", "b", "y") is True, "moving a member the destination has"
    assert r.exists("a") == 0 and r.scard("b") == 3
    assert r.smove("b", "new", "z") is True and r.smembers("new") == {b"z"}
    r.set("str", "v")
    with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
        r.smove("b", "str", "x")
    with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
        r.smove("str", "b", "x")
    assert r.smove("missing", "str", "x") is False, "a missing source answers 0 before the type check"
    assert r.scard("b") == 2


def test_algebra(r):
    r.sadd("a", "1", "2", "3", "4")
    r.sadd("b", "2", "3", "5")
    r.sadd("c", "3", "4", "5")
    assert r.sinter("a", "b") == {b"2", b"3"}
    assert r.sinter("a", "b", "c") == {b"3"}
    assert r.sinter("a", "missing") == set()
    assert r.sunion("a", "b", "missing") == {b"1", b"2", b"3", b"4", b"5"}
    assert r.sdiff("a", "b") == {b"1", b"4"}
    assert r.sdiff("a", "b", "c") == {b"1"}
    assert r.sdiff("missing", "a") == set()
    assert r.sintercard(2, ["a", "b"]) == 2
    assert r.sintercard(3, ["a", "b", "c"]) == 1
    assert r.sintercard(2, ["a", "b"], limit=1) == 1
    assert r.sintercard(2, ["a", "b"], limit=0) == 2, "LIMIT 0 means no limit"
    assert r.sintercard(2, ["a", "missing"]) == 0
    assert r.sinterstore("d", "a", "b") == 2 and r.smembers("d") == {b"2", b"3"}
    assert r.sunionstore("d", "b", "c") == 4 and r.smembers("d") == {b"2", b"3", b"4", b"5"}
    assert r.sdiffstore("d", "a", "c") == 2 and r.smembers("d") == {b"1", b"2"}
    assert r.sdiffstore("a", "a", "b") == 2 and r.smembers("a") == {b"1", b"4"}, "the destination may be a source"
    r.set("str", "v")
    assert r.sunionstore("str", "b") == 3 and r.type("str") in (b"set", "set"), "STORE replaces any type"
    assert r.sinterstore("str", "a", "missing") == 0 and r.exists("str") == 0, "an empty result deletes the destination"
    big_a = [f"m{i}" for i in range(2000)]
    r.sadd("ba", *big_a)
    r.sadd("bb", *big_a[1000:], "other")
    assert len(r.sinter("ba", "bb")) == 1000
    assert r.sintercard(2, ["ba", "bb"], limit=600) == 600
    assert len(r.sdiff("ba", "bb")) == 1000


def test_algebra_errors(r):
    r.sadd("a", "1")
    r.set("str", "v")
    for call in (lambda: r.sinter("missing", "str"), lambda: r.sunion("a", "str"), lambda: r.sdiff("missing", "str"),
                 lambda: r.sinterstore("d", "a", "str"), lambda: r.sintercard(2, ["missing", "str"])):
        with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
            call()
    with pytest.raises(redis.ResponseError, match="^numkeys should be greater than 0$"):
        r.execute_command("SINTERCARD", "0", "a")
    with pytest.raises(redis.ResponseError, match="^numkeys should be greater than 0$"):
        r.execute_command("SINTERCARD", "x", "a")
    with pytest.raises(redis.ResponseError, match="^Number of keys can't be greater than number of args$"):
        r.execute_command("SINTERCARD", "3", "a")
    with pytest.raises(redis.ResponseError, match="^LIMIT can't be negative$"):
        r.execute_command("SINTERCARD", "1", "a", "LIMIT", "-1")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("SINTERCARD", "1", "a", "FOO")
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'sinterstore' command$"):
        r.execute_command("SINTERSTORE", "d")
    assert r.execute_command("COMMAND GETKEYS", "SINTERCARD", "2", "a", "b", "LIMIT", "1") in ([b"a", b"b"], ["a", "b"])


def test_errors_and_wrongtype(r):
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'sadd' command$"):
        r.execute_command("SADD", "s")
    r.set("str", "v")
    for call in (lambda: r.sadd("str", "a"), lambda: r.srem("str", "a"), lambda: r.scard("str"),
                 lambda: r.sismember("str", "a"), lambda: r.smismember("str", "a"), lambda: r.smembers("str"),
                 lambda: r.srandmember("str"), lambda: r.spop("str"), lambda: r.sscan("str", 0)):
        with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
            call()
    r.sadd("s", "a")
    for call in (lambda: r.get("s"), lambda: r.hget("s", "a"), lambda: r.incr("s")):
        with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
            call()
    assert r.type("s") in (b"set", "set")


def test_sscan_visits_every_member_once(r):
    members = {f"m{i:04d}".encode() for i in range(1000)}
    r.sadd("s", *members)
    seen = set()
    cursor = 0
    while True:
        cursor, page = r.sscan("s", cursor, count=97)
        assert not (set(page) & seen)
        seen |= set(page)
        if cursor == 0:
            break
    assert seen == members
    cursor, page = r.sscan("s", 0, match="m000*", count=2000)
    assert cursor == 0 and sorted(page) == [f"m000{i}".encode() for i in range(10)]
    assert r.sscan("missing", 0) == (0, [])
    with pytest.raises(redis.ResponseError, match="^invalid cursor$"):
        r.execute_command("SSCAN", "s", "x")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("SSCAN", "s", "0", "COUNT", "0")


def test_transactions(r):
    r.sadd("s", "a")
    p = r.pipeline(transaction=True)
    p.sadd("s", "b", "c")
    p.smembers("s")
    p.srem("s", "a")
    p.spop("s", 10)
    p.exists("s")
    p.sadd("s", "fresh")
    p.sunionstore("u", "s", "missing")
    p.smembers("u")
    p.smove("u", "v", "fresh")
    p.smembers("v")
    out = p.execute()
    assert out[0] == 2 and out[1] == {b"a", b"b", b"c"}, "reads in EXEC see earlier writes"
    assert out[2] == 1 and set(out[3]) == {b"b", b"c"} and out[4] == 0
    assert out[5] == 1 and out[6] == 1 and out[7] == {b"fresh"}
    assert out[8] is True or out[8] == 1
    assert out[9] == {b"fresh"}
    assert r.smembers("s") == {b"fresh"} and r.exists("u") == 0 and r.smembers("v") == {b"fresh"}
    with r.pipeline(transaction=True) as p:
        p.watch("s")
        r.sadd("s", "other")
        p.multi()
        p.sadd("s", "mine")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.sismember("s", "mine") in (0, False)


def test_concurrent_adds_and_pops_are_exact(server):
    c = server.client()
    c.delete("pool", "taken")
    c.sadd("pool", *[f"m{i}" for i in range(2000)])
    threads, per = 8, 200
    results = []

    def work():
        k = server.client()
        got = []
        for i in range(per):
            m = k.spop("pool")
            got.append(m)
            k.sadd("taken", m)
        results.append(got)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    popped = [m for got in results for m in got]
    assert len(popped) == threads * per and len(set(popped)) == threads * per, "no member popped twice"
    assert c.scard("pool") == 2000 - threads * per
    assert c.scard("taken") == threads * per
    assert not (c.smembers("pool") & c.smembers("taken"))


def test_sets_survive_a_restart_and_a_kill(fresh_server):
    srv = fresh_server()
    try:
        c = srv.client()
        c.sadd("s", *[f"m{i}" for i in range(500)])
        c.expire("s", 1000)
        srv.restart()
        c = srv.client()
        assert c.scard("s") == 500 and c.sismember("s", "m42") in (1, True) and c.ttl("s") > 900
        c.srem("s", "m1")
        c.spop("s", 10)
        srv.stop(signal.SIGKILL)
        srv.start()
        c = srv.client()
        assert c.scard("s") == 489 and c.sismember("s", "m1") in (0, False) and len(c.smembers("s")) == 489
    finally:
        srv.cleanup()


def test_key_commands_and_snapshots_see_sets(r):
    r.sadd("s", "a", "b")
    assert r.rename("s", "t") is True and r.smembers("t") == {b"a", b"b"}
    assert r.copy("t", "u") is True
    r.sadd("u", "c")
    assert r.scard("t") == 2 and r.scard("u") == 3
    assert sorted(r.scan(0, _type="set", count=100)[1]) == [b"t", b"u"]
    snap = r.execute_command("SNAPSHOT.CREATE")
    r.sadd("t", "later")
    r.execute_command("SNAPSHOT.USE", snap)
    try:
        assert r.smembers("t") == {b"a", b"b"} and r.scard("t") == 2
    finally:
        r.execute_command("SNAPSHOT.USE", "NONE")
        r.execute_command("SNAPSHOT.RELEASE", snap)
    assert r.scard("t") == 3
