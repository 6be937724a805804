"""Sorted sets through redis-py, RESP2 and RESP3, against the real cairnd: every command,
Redis's replies and errors (scores in Redis 7.0's %.17g form), WRONGTYPE, MULTI/EXEC, restart,
and concurrent increments and pops."""
import math
import signal
import socket
import threading

import pytest
import redis

from conftest import resp_command
from test_sets import wire

def ws(entries):
    """Members with scores as (member, score) tuples, however redis-py shaped them (lists in
    RESP3, a flat list for ZDIFF in RESP2 and for ZPOPMIN without a count in RESP3)."""
    if entries and not isinstance(entries[0], (list, tuple)):
        return [(entries[i], float(entries[i + 1])) for i in range(0, len(entries), 2)]
    return [tuple(e) for e in entries]


WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_add_options(r):
    assert r.zadd("z", {"a": 1, "b": 2}) == 2
    assert r.zadd("z", {"a": 5, "c": 3}, nx=True) == 1 and r.zscore("z", "a") == 1
    assert r.zadd("z", {"a": 6, "nope": 4}, xx=True, ch=True) == 1 and r.zscore("z", "nope") is None
    assert r.zadd("z", {"a": 1, "b": 7}, gt=True, ch=True) == 1 and r.zscore("z", "a") == 6 and r.zscore("z", "b") == 7
    assert r.zadd("z", {"a": 1, "b": 9}, lt=True, ch=True) == 1 and r.zscore("z", "a") == 1 and r.zscore("z", "b") == 7
    assert r.zadd("z", {"a": 2}, incr=True) == 3.0
    assert r.zadd("z", {"a": 2}, nx=True, incr=True) is None, "INCR not applied answers nil"
    assert r.zadd("z", {"a": -10}, gt=True, incr=True) is None
    assert r.zadd("missing", {"a": 1}, xx=True) == 0 and r.exists("missing") == 0
    assert r.zadd("missing", {"a": 1}, xx=True, incr=True) is None and r.exists("missing") == 0
    assert r.execute_command("ZADD", "dup", "1", "m", "2", "m") == 1 and r.zscore("dup", "m") == 2
    assert r.zadd("z", {"neg": "-0"}) == 1 and r.zscore("z", "neg") == 0
    for args, text in ((("XX", "NX", "1", "a"), "XX and NX options at the same time are not compatible"),
                       (("GT", "LT", "1", "a"), "GT, LT, and/or NX options at the same time are not compatible"),
                       (("GT", "NX", "1", "a"), "GT, LT, and/or NX options at the same time are not compatible"),
                       (("INCR", "1", "a", "2", "b"), "INCR option supports a single increment-element pair"),
                       (("1", "a", "2"), "syntax error"),
                       (("nan", "a"), "value is not a valid float"),
                       (("abc", "a"), "value is not a valid float")):
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command("ZADD", "z", *args)
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'zadd' command$"):
        r.execute_command("ZADD", "z", "1")


def test_scores_are_formatted_as_redis_7(r):
    r.zadd("z", {"a": 1.1, "b": 1e20, "c": float("inf"), "d": float("-inf"), "e": 0.1})
    assert r.zscore("z", "a") == 1.1
    raw = r.execute_command("ZSCORE", "z", "a")
    assert raw in (b"1.1000000000000001", 1.1)
    assert dict(r.zscan("z", 0)[1]) == {b"a": 1.1, b"b": 1e20, b"c": math.inf, b"d": -math.inf, b"e": 0.1}
    assert r.zincrby("z", 1.5, "new") == 1.5
    with pytest.raises(redis.ResponseError, match=r"^resulting score is not a number \(NaN\)$"):
        r.zincrby("z", "-inf", "c")
    with pytest.raises(redis.ResponseError, match="^value is not a valid float$"):
        r.zincrby("z", "x", "a")


def test_score_wire_forms(server):
    c = server.client()
    c.delete("z")
    c.zadd("z", {"a": 1.1, "b": 1e20})
    assert wire(server, ("ZSCORE", "z", "a")) == b",1.1000000000000001\r\n"
    assert wire(server, ("ZRANGE", "z", "0", "-1", "WITHSCORES")) == \
        b"*2\r\n*2\r\n$1\r\na\r\n,1.1000000000000001\r\n*2\r\n$1\r\nb\r\n,1e+20\r\n"
    assert wire(server, ("ZSCAN", "z", "0")) == \
        b"*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$18\r\n1.1000000000000001\r\n$1\r\nb\r\n$5\r\n1e+20\r\n"
    assert wire(server, ("ZPOPMIN", "z")) == b"*2\r\n$1\r\na\r\n,1.1000000000000001\r\n", "no count: flat"
    assert wire(server, ("ZPOPMIN", "z", "1")) == b"*1\r\n*2\r\n$1\r\nb\r\n,1e+20\r\n", "a count: pairs"
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(resp_command("ZADD", "z", "1.1", "a") + resp_command("ZSCORE", "z", "a"))
        data = b""
        while not data.endswith(b"1.1000000000000001\r\n"):
            data += s.recv(4096)
        assert data == b":1\r\n$18\r\n1.1000000000000001\r\n", "RESP2: a bulk string"


def test_reads(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert r.zcard("z") == 5 and r.zcard("missing") == 0
    assert r.zmscore("z", ["a", "x", "e"]) == [1, None, 5]
    assert r.zmscore("missing", ["a"]) == [None]
    assert r.zscore("missing", "a") is None
    assert r.zcount("z", "-inf", "+inf") == 5 and r.zcount("z", "(1", "(5") == 3 and r.zcount("z", 2, 2) == 1
    assert r.zcount("z", 3, 1) == 0 and r.zcount("missing", 0, 1) == 0
    assert r.zrank("z", "a") == 0 and r.zrank("z", "e") == 4 and r.zrevrank("z", "e") == 0
    assert r.zrank("z", "x") is None and r.zrevrank("missing", "a") is None
    with pytest.raises(redis.ResponseError, match="^min or max is not a float$"):
        r.zcount("z", "x", 1)


def test_ranges(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert r.zrange("z", 0, -1) == [b"a", b"b", b"c", b"d", b"e"]
    assert ws(r.zrange("z", -2, -1, withscores=True)) == [(b"d", 4), (b"e", 5)]
    assert r.zrange("z", 0, 1, desc=True) == [b"e", b"d"]
    assert r.zrange("z", 3, 1) == [] and r.zrange("z", 0, 100) == [b"a", b"b", b"c", b"d", b"e"]
    assert r.zrange("z", 10, 20) == [] and r.zrange("missing", 0, -1) == []
    assert r.zrange("z", "(1", 3, byscore=True) == [b"b", b"c"]
    assert r.zrange("z", "+inf", "(3", byscore=True, desc=True) == [b"e", b"d"]
    assert r.zrange("z", "-inf", "+inf", byscore=True, offset=1, num=2) == [b"b", b"c"]
    assert r.zrange("z", "-inf", "+inf", byscore=True, offset=3, num=-1) == [b"d", b"e"]
    assert r.zrange("z", "-inf", "+inf", byscore=True, offset=-1, num=2) == []
    assert ws(r.zrevrange("z", 0, 1, withscores=True)) == [(b"e", 5), (b"d", 4)]
    assert ws(r.zrangebyscore("z", 2, 4, withscores=True)) == [(b"b", 2), (b"c", 3), (b"d", 4)]
    assert r.zrangebyscore("z", 1, 5, start=1, num=2) == [b"b", b"c"]
    assert r.zrevrangebyscore("z", 4, "(2") == [b"d", b"c"]
    with pytest.raises(redis.ResponseError, match="^syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX$"):
        r.execute_command("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1")
    with pytest.raises(redis.ResponseError, match="^syntax error, WITHSCORES not supported in combination with BYLEX$"):
        r.execute_command("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES")
    for args in (("0", "-1", "FOO"), ("0", "-1", "REV", "REV"), ("0", "-1", "BYSCORE", "BYLEX")):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            r.execute_command("ZRANGE", "z", *args)
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("ZREVRANGEBYSCORE", "z", "5", "1", "REV")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.execute_command("ZRANGE", "z", "a", "b")
    with pytest.raises(redis.ResponseError, match="^min or max is not a float$"):
        r.execute_command("ZRANGEBYSCORE", "z", "(x", "1")


def test_lex_ranges(r):
    r.zadd("l", {m: 0 for m in "abcde"})
    assert r.zrangebylex("l", "[b", "(d") == [b"b", b"c"]
    assert r.zrangebylex("l", "-", "+") == [b"a", b"b", b"c", b"d", b"e"]
    assert r.zrangebylex("l", "+", "-") == []
    assert r.zrangebylex("l", "(a", "[c", start=1, num=1) == [b"c"]
    assert r.zrevrangebylex("l", "[d", "[b") == [b"d", b"c", b"b"]
    assert r.zrange("l", "[d", "-", bylex=True, desc=True) == [b"d", b"c", b"b", b"a"]
    assert r.zlexcount("l", "[b", "+") == 4 and r.zlexcount("l", "-", "(c") == 2
    with pytest.raises(redis.ResponseError, match="^min or max not valid string range item$"):
        r.zrangebylex("l", "x", "y")


def test_store_and_remove_ranges(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert r.zrangestore("dst", "z", 0, 1) == 2 and ws(r.zrange("dst", 0, -1, withscores=True)) == [(b"a", 1), (b"b", 2)]
    assert r.zrangestore("dst", "z", 5, 3, byscore=True, desc=True) == 3 and r.zrange("dst", 0, -1) == [b"c", b"d", b"e"]
    r.set("str", "x")
    assert r.zrangestore("str", "z", 0, 0) == 1 and r.type("str") in (b"zset", "zset"), "the destination may hold any type"
    assert r.zrangestore("dst", "missing", 0, -1) == 0 and r.exists("dst") == 0
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("ZRANGESTORE", "dst", "z", "0", "1", "WITHSCORES")
    assert r.zremrangebyrank("z", 0, 1) == 2 and r.zrange("z", 0, -1) == [b"c", b"d", b"e"]
    assert r.zremrangebyscore("z", "(3", 4) == 1 and r.zrange("z", 0, -1) == [b"c", b"e"]
    r.zadd("l", {m: 0 for m in "abcde"})
    assert r.zremrangebylex("l", "[d", "+") == 2 and r.zrange("l", 0, -1) == [b"a", b"b", b"c"]
    assert r.zremrangebyrank("z", 0, -1) == 2 and r.exists("z") == 0
    assert r.zremrangebyscore("missing", 0, 1) == 0
    # Ranges that cover every member remove the key without reading a member (and those that
    # miss one, however little, do not).
    r.zadd("w", {"a": float("-inf"), "b": 1, "c": float("inf")})
    assert r.zremrangebyscore("w", "(-inf", "+inf") == 2 and r.zrange("w", 0, -1) == [b"a"]
    assert r.zremrangebyscore("w", "-inf", "+inf") == 1 and r.exists("w") == 0
    r.zadd("w", {m: 0 for m in "abc"})
    assert r.zremrangebylex("w", "-", "(c") == 2 and r.zremrangebylex("w", "-", "+") == 1 and r.exists("w") == 0
    r.zadd("w", {m: i for i, m in enumerate("abcd")})
    assert r.zremrangebyrank("w", -100, -2) == 3 and r.zremrangebyrank("w", -1, 100) == 1 and r.exists("w") == 0
    assert r.zrem("l", "a", "a", "x") == 1 and r.zrem("missing", "a") == 0
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.zremrangebyrank("l", "x", 1)


def test_pops_and_random_members(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert ws(r.zpopmin("z")) == [(b"a", 1)]
    assert ws(r.zpopmax("z", 2)) == [(b"d", 4), (b"c", 3)]
    assert ws(r.zpopmin("z", 0)) == []
    assert ws(r.zpopmin("z", 10)) == [(b"b", 2)] and r.exists("z") == 0
    assert ws(r.zpopmin("missing")) == [] and ws(r.zpopmax("missing", 3)) == []
    with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
        ws(r.zpopmin("z", -1))
    members = {f"m{i}": i for i in range(20)}
    r.zadd("z", members)
    assert r.zrandmember("z").decode() in members and r.zrandmember("missing") is None
    picked = r.zrandmember("z", 5)
    assert len(set(picked)) == 5
    assert len(r.zrandmember("z", -30)) == 30
    pairs = r.zrandmember("z", 3, withscores=True)
    if r.connection_pool.connection_kwargs.get("protocol") != 3:
        pairs = list(zip(pairs[0::2], pairs[1::2]))
    assert len(pairs) == 3 and all(members[m.decode()] == float(s) for m, s in pairs)
    assert r.zrandmember("missing", 2) == []
    with pytest.raises(redis.ResponseError, match="^value is out of range$"):
        r.execute_command("ZRANDMEMBER", "z", str(2**62), "WITHSCORES")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("ZRANDMEMBER", "z", "3", "FOO")


def test_big_sorted_set_pops_in_order(r):
    members = {f"m{i:05d}": i for i in range(5000)}
    for i in range(0, 5000, 1000):
        r.zadd("big", dict(list(members.items())[i:i + 1000]))
    expected = 0
    while expected < 2500:
        for m, s in ws(r.zpopmin("big", 250)):
            assert s == expected
            expected += 1
    top = 4999
    while top >= 2500:
        for m, s in ws(r.zpopmax("big", 250)):
            assert s == top
            top -= 1
    assert r.exists("big") == 0
    r.zadd("big", {"again": 1, "low": -5})
    assert ws(r.zpopmin("big")) == [(b"low", -5)], "members added below earlier pops are found"


def test_algebra(r):
    r.zadd("a", {"x": 1, "y": 2, "z": 3})
    r.zadd("b", {"y": 10, "z": 20, "w": 30})
    r.sadd("s", "y", "w", "q")
    assert ws(r.zunion(["a", "b"], withscores=True)) == [(b"x", 1), (b"y", 12), (b"z", 23), (b"w", 30)]
    assert ws(r.zunion({"a": 2, "b": 0.5}, withscores=True)) == [(b"x", 2), (b"y", 9), (b"w", 15), (b"z", 16)]
    assert ws(r.zunion(["a", "b"], aggregate="MAX", withscores=True)) == [(b"x", 1), (b"y", 10), (b"z", 20), (b"w", 30)]
    assert ws(r.zunion(["a", "b", "s"], withscores=True)) == [(b"q", 1), (b"x", 1), (b"y", 13), (b"z", 23), (b"w", 31)]
    assert ws(r.zinter(["a", "b"], withscores=True)) == [(b"y", 12), (b"z", 23)]
    assert ws(r.zinter(["a", "b"], aggregate="MIN", withscores=True)) == [(b"y", 2), (b"z", 3)]
    assert ws(r.zinter(["a", "b", "s"], withscores=True)) == [(b"y", 13)]
    assert r.zinter(["a", "missing"]) == []
    assert ws(r.zdiff(["a", "b"], withscores=True)) == [(b"x", 1)]
    assert r.zdiff(["b", "s"]) == [b"z"]
    assert r.zunionstore("out", ["a", "b"]) == 4 and ws(r.zrange("out", 0, -1, withscores=True))[-1] == (b"w", 30)
    assert r.zinterstore("out", {"a": 1, "b": 2}) == 2 and ws(r.zrange("out", 0, -1, withscores=True)) == [(b"y", 22), (b"z", 43)]
    assert r.zdiffstore("out", ["a", "b"]) == 1 and r.zrange("out", 0, -1) == [b"x"]
    assert r.zinterstore("out", ["a", "missing"]) == 0 and r.exists("out") == 0
    assert r.zunionstore("a", ["a", "b"]) == 4, "the destination may be a source"
    assert r.zintercard(2, ["a", "b"]) == 3 and r.zintercard(2, ["a", "b"], limit=1) == 1
    r.zadd("i1", {"m": "inf"})
    r.zadd("i2", {"m": "-inf"})
    assert ws(r.zunion(["i1", "i2"], withscores=True)) == [(b"m", 0)], "inf + -inf is 0, as Redis"
    assert ws(r.zunion({"i1": 0}, withscores=True)) == [(b"m", 0)], "inf * 0 is 0"


def test_algebra_errors(r):
    r.zadd("a", {"x": 1})
    r.set("str", "v")
    for args, text in ((("ZUNION", "0", "a"), "at least 1 input key is needed for 'zunion' command"),
                       (("ZUNIONSTORE", "d", "0", "a"), "at least 1 input key is needed for 'zunionstore' command"),
                       (("ZINTERCARD", "0", "a"), "at least 1 input key is needed for 'zintercard' command"),
                       (("ZUNION", "3", "a"), "syntax error"),
                       (("ZUNION", "1", "a", "WEIGHTS", "x"), "weight value is not a float"),
                       (("ZUNION", "2", "a", "a", "WEIGHTS", "1"), "syntax error"),
                       (("ZUNION", "1", "a", "AGGREGATE", "foo"), "syntax error"),
                       (("ZDIFF", "1", "a", "WEIGHTS", "1"), "syntax error"),
                       (("ZUNIONSTORE", "d", "1", "a", "WITHSCORES"), "syntax error"),
                       (("ZUNION", "2", "a", "str"), WRONGTYPE),
                       (("ZINTERCARD", "1", "a", "LIMIT", "-1"), "LIMIT can't be negative")):
        with pytest.raises(redis.ResponseError, match=f"^{text}$"):
            r.execute_command(*args)
    assert r.execute_command("COMMAND GETKEYS", "ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2") in \
        ([b"d", b"a", b"b"], ["d", "a", "b"])


def test_wrongtype(r):
    r.set("str", "v")
    for call in (lambda: r.zadd("str", {"a": 1}), lambda: r.zscore("str", "a"), lambda: r.zrange("str", 0, -1),
                 lambda: r.zrank("str", "a"), lambda: ws(r.zpopmin("str")), lambda: r.zcard("str"), lambda: r.zrem("str", "a"),
                 lambda: r.zincrby("str", 1, "a"), lambda: r.zscan("str", 0), lambda: r.zrangebylex("str", "-", "+"),
                 lambda: r.zremrangebyrank("str", 0, 1), lambda: r.zrandmember("str")):
        with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
            call()
    r.zadd("z", {"a": 1})
    for call in (lambda: r.get("z"), lambda: r.sadd("z", "a"), lambda: r.hget("z", "a")):
        with pytest.raises(redis.ResponseError, match=f"^{WRONGTYPE}$"):
            call()
    assert r.type("z") in (b"zset", "zset")


def test_zscan_visits_every_member_once(r):
    members = {f"m{i:04d}": i for i in range(1000)}
    r.zadd("z", members)
    seen = {}
    cursor = 0
    while True:
        cursor, page = r.zscan("z", cursor, count=97)
        for m, s in page:
            assert m not in seen
            seen[m] = s
        if cursor == 0:
            break
    assert seen == {k.encode(): float(v) for k, v in members.items()}


def test_transactions(r):
    r.zadd("z", {"a": 1})
    p = r.pipeline(transaction=True)
    p.zadd("z", {"b": 2, "c": 3})
    p.zincrby("z", 5, "a")
    p.zrange("z", 0, -1, withscores=True)
    p.zpopmin("z")
    p.zrank("z", "a")
    p.zrangestore("copy", "z", 0, -1)
    p.zrange("copy", 0, -1)
    p.delete("z")
    p.zadd("z", {"fresh": 1})
    p.zrange("z", 0, -1)
    out = p.execute()
    assert out[0] == 2 and out[1] == 6
    assert ws(out[2]) == [(b"b", 2), (b"c", 3), (b"a", 6)], "reads in EXEC see earlier writes"
    assert ws(out[3]) == [(b"b", 2)] and out[4] == 1
    assert out[5] == 2 and out[6] == [b"c", b"a"]
    assert out[9] == [b"fresh"]
    assert r.zrange("z", 0, -1) == [b"fresh"] and r.zrange("copy", 0, -1) == [b"c", b"a"]


def test_concurrent_increments_and_pops_are_exact(server):
    c = server.client()
    c.delete("board", "queue")
    c.zadd("queue", {f"job{i}": i for i in range(1600)})
    threads, per = 8, 200
    popped = []

    def work():
        k = server.client()
        mine = []
        for _ in range(per):
            k.zincrby("board", 1, "total")
            k.zincrby("board", 0.5, f"t{threading.get_ident()}")
            mine += k.zpopmin("queue")
        popped.append(mine)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert c.zscore("board", "total") == threads * per
    assert c.zcard("board") == 1 + threads
    everything = [m for mine in popped for m, _ in mine]
    assert len(everything) == 1600 and len(set(everything)) == 1600 and c.exists("queue") == 0


def test_sorted_sets_survive_a_restart_and_a_kill(fresh_server):
    srv = fresh_server()
    try:
        c = srv.client()
        c.zadd("z", {f"m{i}": i for i in range(500)})
        srv.restart()
        c = srv.client()
        assert c.zcard("z") == 500 and c.zscore("z", "m42") == 42 and c.zrank("z", "m42") == 42
        c.zpopmin("z", 10)
        c.zadd("z", {"low": -1})
        srv.stop(signal.SIGKILL)
        srv.start()
        c = srv.client()
        assert c.zcard("z") == 491 and c.zrange("z", 0, 1) == [b"low", b"m10"]
    finally:
        srv.cleanup()


def test_pops_find_members_added_where_earlier_pops_were(r):
    r.zadd("q", {f"m{i:05d}": i for i in range(100)})
    assert ws(r.zpopmin("q", 10))[-1] == (b"m00009", 9)
    r.zadd("q", {"early": 5})
    assert ws(r.zpopmin("q")) == [(b"early", 5)]
    assert ws(r.zpopmax("q", 10))[-1] == (b"m00090", 90)
    r.zadd("q", {"late": 95})
    assert ws(r.zpopmax("q")) == [(b"late", 95)]
    r.zincrby("q", -100, "m00050")
    assert ws(r.zpopmin("q")) == [(b"m00050", -50)]
    p = r.pipeline(transaction=True)
    p.zpopmin("q", 5)
    p.zadd("q", {"inside": 0})
    p.zpopmin("q")
    out = p.execute()
    assert ws(out[0])[0] == (b"m00010", 10) and ws(out[2]) == [(b"inside", 0)]
    assert ws(r.zpopmin("q")) == [(b"m00015", 15)]
    r.sadd("s", *[f"m{i:05d}" for i in range(6000)])
    first = r.spop("s", 3000)
    r.sadd("s", "a-first")
    rest = r.spop("s", 10000)
    assert b"a-first" in rest and len(rest) == 3001 and not (set(first) & set(rest))
