"""Lists through redis-py, RESP2 and RESP3, against the real cairnd: every command with its
replies and errors (Redis 7.0's texts), WRONGTYPE, MULTI/EXEC, a restart, and concurrent
read-modify-writes with exact totals."""
import signal
import threading

import pytest
import redis

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def error_of(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def test_push_pop_len(r):
    assert r.rpush("l", "a", "b", "c") == 3
    assert r.lpush("l", "x", "y") == 5
    assert r.lrange("l", 0, -1) == [b"y", b"x", b"a", b"b", b"c"]
    assert r.llen("l") == 5 and r.llen("missing") == 0
    assert r.lpushx("missing", "a") == 0 and r.rpushx("missing", "a") == 0
    assert r.exists("missing") == 0
    assert r.lpushx("l", "p") == 6 and r.rpushx("l", "q", "r") == 8
    assert r.lpop("l") == b"p" and r.rpop("l") == b"r"
    assert r.lpop("l", 2) == [b"y", b"x"]
    assert r.rpop("l", 2) == [b"q", b"c"]
    assert r.lpop("l", 0) == []
    assert r.lpop("l", 10) == [b"a", b"b"]
    assert r.exists("l") == 0, "an emptied list is deleted"
    assert r.lpop("l") is None and r.rpop("l") is None
    assert r.lpop("l", 2) is None and r.execute_command("LPOP", "l", 0) is None
    assert r.type("l") == b"none"
    r.rpush("l", "again")
    assert r.lrange("l", 0, -1) == [b"again"] and r.type("l") == b"list"


def test_pop_errors(r):
    r.rpush("l", "a")
    assert error_of(r, "LPOP", "l", -1) == "value is out of range, must be positive"
    assert error_of(r, "RPOP", "l", "x") == "value is out of range, must be positive"
    assert error_of(r, "LPOP", "l", 1, 2) == "wrong number of arguments for 'lpop' command"
    assert error_of(r, "LPUSH", "l") == "wrong number of arguments for 'lpush' command"


def test_range_and_index(r):
    r.rpush("l", *"abcde")
    assert r.lrange("l", 1, 3) == [b"b", b"c", b"d"]
    assert r.lrange("l", -2, -1) == [b"d", b"e"]
    assert r.lrange("l", -100, 1) == [b"a", b"b"]
    assert r.lrange("l", 3, 100) == [b"d", b"e"]
    assert r.lrange("l", 4, 2) == [] and r.lrange("l", 5, 10) == [] and r.lrange("l", 0, -6) == []
    assert r.lrange("missing", 0, -1) == []
    assert r.lindex("l", 0) == b"a" and r.lindex("l", -1) == b"e" and r.lindex("l", 2) == b"c"
    assert r.lindex("l", 5) is None and r.lindex("l", -6) is None and r.lindex("missing", 0) is None
    assert error_of(r, "LRANGE", "l", "a", 1) == "value is not an integer or out of range"
    assert error_of(r, "LINDEX", "l", "x") == "value is not an integer or out of range"


def test_lrange_through_a_snapshot_and_of_many_elements(r):
    r.rpush("l", *[f"e{i}" for i in range(300)])
    snap = r.execute_command("SNAPSHOT.CREATE")
    r.lpush("l", "new")
    r.rpop("l", 2)
    r.execute_command("SNAPSHOT.USE", snap)
    try:
        assert r.lrange("l", 0, -1) == [f"e{i}".encode() for i in range(300)]
        assert r.lrange("l", -3, -1) == [b"e297", b"e298", b"e299"]
    finally:
        r.execute_command("SNAPSHOT.USE", "NONE")
        r.execute_command("SNAPSHOT.RELEASE", snap)
    assert r.lrange("l", 0, 2) == [b"new", b"e0", b"e1"]
    assert r.lrange("l", 290, 1000) == [f"e{i}".encode() for i in range(289, 298)]
    r.rpush("bin", b"\x00\r\n", b"")
    assert r.lrange("bin", 0, -1) == [b"\x00\r\n", b""]


def test_lset(r):
    r.rpush("l", "a", "b", "c")
    assert r.lset("l", 1, "B") is True and r.lset("l", -1, "C") is True
    assert r.lrange("l", 0, -1) == [b"a", b"B", b"C"]
    assert error_of(r, "LSET", "l", 3, "x") == "index out of range"
    assert error_of(r, "LSET", "l", -4, "x") == "index out of range"
    assert error_of(r, "LSET", "missing", 0, "x") == "no such key"
    assert error_of(r, "LSET", "l", "x", "x") == "value is not an integer or out of range"


def test_linsert_both_sides(r):
    r.rpush("l", *"abcdefgh")
    assert r.linsert("l", "before", "b", "X") == 9  # near the head: the front moves
    assert r.linsert("l", "after", "g", "Y") == 10  # near the tail: the back moves
    assert r.linsert("l", "BEFORE", "a", "first") == 11
    assert r.linsert("l", "AFTER", "h", "last") == 12
    assert r.lrange("l", 0, -1) == [b"first", b"a", b"X", b"b", b"c", b"d", b"e", b"f", b"g", b"Y", b"h", b"last"]
    assert r.lindex("l", 2) == b"X" and r.lindex("l", -3) == b"Y" and r.llen("l") == 12
    assert r.linsert("l", "before", "zz", "x") == -1
    assert r.linsert("missing", "before", "a", "x") == 0 and r.exists("missing") == 0
    assert error_of(r, "LINSERT", "l", "middle", "a", "x") == "syntax error"
    # Pushes at both ends still line up after the shifts.
    r.lpush("l", "L")
    r.rpush("l", "R")
    assert r.lrange("l", 0, 1) == [b"L", b"first"] and r.lrange("l", -2, -1) == [b"last", b"R"]


def test_lrem(r):
    r.rpush("l", *"axbxcxdx")
    assert r.lrem("l", 2, "x") == 2
    assert r.lrange("l", 0, -1) == [b"a", b"b", b"c", b"d", b"x"][:3] + [b"x", b"d", b"x"]
    assert r.lrem("l", -1, "x") == 1
    assert r.lrange("l", 0, -1) == [b"a", b"b", b"c", b"x", b"d"]
    assert r.lrem("l", 0, "x") == 1 and r.lrem("l", 0, "zz") == 0
    assert r.lrange("l", 0, -1) == [b"a", b"b", b"c", b"d"]
    assert r.lrem("missing", 0, "a") == 0
    r.delete("m")
    r.rpush("m", "v", "v")
    assert r.lrem("m", 0, "v") == 2 and r.exists("m") == 0
    assert error_of(r, "LREM", "l", "x", "a") == "value is not an integer or out of range"
    r.rpush("n", *[str(i % 3) for i in range(30)])
    assert r.lrem("n", -4, "1") == 4
    assert r.lrange("n", 0, -1) == [str(i % 3).encode() for i in range(30) if not (i % 3 == 1 and i > 17)]
    assert r.llen("n") == 26 and r.lindex("n", -1) == b"2"


def test_ltrim(r):
    r.rpush("l", *"abcdef")
    assert r.ltrim("l", 1, -2) is True
    assert r.lrange("l", 0, -1) == [b"b", b"c", b"d", b"e"]
    assert r.ltrim("l", 0, 100) is True and r.llen("l") == 4
    assert r.ltrim("l", -2, -1) is True and r.lrange("l", 0, -1) == [b"d", b"e"]
    assert r.ltrim("l", 5, 10) is True and r.exists("l") == 0
    assert r.ltrim("missing", 0, 1) is True
    assert error_of(r, "LTRIM", "l", "a", 1) == "value is not an integer or out of range"


def test_lpos(r):
    r.rpush("l", "a", "b", "c", "a", "b")
    assert r.lpos("l", "a") == 0 and r.lpos("l", "b") == 1 and r.lpos("l", "zz") is None
    assert r.lpos("l", "a", rank=2) == 3 and r.lpos("l", "a", rank=-1) == 3 and r.lpos("l", "a", rank=3) is None
    assert r.lpos("l", "b", count=0) == [1, 4] and r.lpos("l", "b", count=1) == [1]
    assert r.lpos("l", "b", rank=-1, count=0) == [4, 1]
    assert r.lpos("l", "b", count=0, maxlen=2) == [1]
    assert r.lpos("l", "b", rank=-1, count=0, maxlen=1) == [4]
    assert r.execute_command("LPOS", "l", "a", "RANK", "-9223372036854775808") == 3
    assert r.lpos("missing", "a") is None and r.lpos("missing", "a", count=2) == []
    assert error_of(r, "LPOS", "l", "a", "RANK", 0).startswith("RANK can't be zero: use 1 to start from the first match")
    assert error_of(r, "LPOS", "l", "a", "COUNT", -1) == "COUNT can't be negative"
    assert error_of(r, "LPOS", "l", "a", "MAXLEN", -1) == "MAXLEN can't be negative"
    assert error_of(r, "LPOS", "l", "a", "RANK", "x") == "value is not an integer or out of range"
    assert error_of(r, "LPOS", "l", "a", "FOO", 1) == "syntax error"
    assert error_of(r, "LPOS", "l", "a", "RANK") == "syntax error"


def test_lmove_and_rpoplpush(r):
    r.rpush("src", "a", "b", "c")
    assert r.lmove("src", "dst", "LEFT", "RIGHT") == b"a"
    assert r.lmove("src", "dst", "RIGHT", "LEFT") == b"c"
    assert r.lrange("dst", 0, -1) == [b"c", b"a"]
    assert r.rpoplpush("src", "dst") == b"b"
    assert r.exists("src") == 0 and r.lrange("dst", 0, -1) == [b"b", b"c", b"a"]
    assert r.lmove("src", "dst", "LEFT", "LEFT") is None and r.rpoplpush("src", "dst") is None
    # Rotation on one list.
    assert r.lmove("dst", "dst", "LEFT", "RIGHT") == b"b"
    assert r.lrange("dst", 0, -1) == [b"c", b"a", b"b"]
    assert r.rpoplpush("dst", "dst") == b"b"
    assert r.lrange("dst", 0, -1) == [b"b", b"c", b"a"]
    assert r.lmove("dst", "dst", "LEFT", "LEFT") == b"b" and r.lrange("dst", 0, -1) == [b"b", b"c", b"a"]
    r.delete("one")
    r.rpush("one", "x")
    assert r.lmove("one", "one", "RIGHT", "LEFT") == b"x" and r.lrange("one", 0, -1) == [b"x"]
    assert error_of(r, "LMOVE", "dst", "x", "UP", "LEFT") == "syntax error"
    r.set("s", "v")
    assert error_of(r, "LMOVE", "dst", "s", "LEFT", "LEFT") == WRONGTYPE
    assert r.lrange("dst", 0, -1) == [b"b", b"c", b"a"], "nothing moved"
    assert r.lmove("empty", "s", "LEFT", "LEFT") is None, "an empty source answers nil first"


def test_lmpop(r):
    r.rpush("b", "1", "2", "3")
    assert r.lmpop(2, "a", "b", direction="LEFT") == [b"b", [b"1"]]
    assert r.lmpop(2, "a", "b", direction="RIGHT", count=5) == [b"b", [b"3", b"2"]]
    assert r.lmpop(2, "a", "b", direction="LEFT") is None
    assert error_of(r, "LMPOP", 0, "a", "LEFT") == "numkeys should be greater than 0"
    assert error_of(r, "LMPOP", "x", "a", "LEFT") == "numkeys should be greater than 0"
    assert error_of(r, "LMPOP", 5, "a", "LEFT") == "syntax error"
    assert error_of(r, "LMPOP", 1, "a", "UP") == "syntax error"
    assert error_of(r, "LMPOP", 1, "a", "LEFT", "COUNT") == "syntax error"
    assert error_of(r, "LMPOP", 1, "a", "LEFT", "COUNT", 0) == "count should be greater than 0"
    assert error_of(r, "LMPOP", 1, "a", "LEFT", "COUNT", "x") == "count should be greater than 0"
    assert error_of(r, "LMPOP", 1, "a", "LEFT", "COUNT", 1, "COUNT", 2) == "syntax error"
    assert error_of(r, "LMPOP", 1, "a", "LEFT", "FOO") == "syntax error"


def test_wrongtype(r):
    r.set("s", "v")
    r.hset("h", "f", "v")
    for args in [("LPUSH", "s", "a"), ("RPUSH", "h", "a"), ("LPUSHX", "s", "a"), ("LPOP", "s"), ("RPOP", "s", 2),
                 ("LLEN", "s"), ("LRANGE", "s", 0, -1), ("LINDEX", "s", 0), ("LSET", "s", 0, "a"),
                 ("LINSERT", "s", "BEFORE", "a", "b"), ("LREM", "s", 0, "a"), ("LTRIM", "s", 0, 1),
                 ("LPOS", "s", "a"), ("LMOVE", "s", "d", "LEFT", "LEFT"), ("RPOPLPUSH", "s", "d"),
                 ("LMPOP", 1, "s", "LEFT"), ("BLPOP", "s", 0), ("BRPOP", "h", 0), ("BLMOVE", "s", "d", "LEFT", "LEFT", 0),
                 ("BRPOPLPUSH", "s", "d", 0), ("BLMPOP", 0, 1, "s", "LEFT")]:
        assert error_of(r, *args) == WRONGTYPE, args
    r.rpush("l", "a")
    for args in [("GET", "l"), ("HGET", "l", "f"), ("APPEND", "l", "x")]:
        assert error_of(r, *args) == WRONGTYPE, args
    assert r.type("l") == b"list"


def test_key_commands_on_lists(r):
    r.rpush("l", "a", "b")
    r.expire("l", 100)
    assert 90 < r.ttl("l") <= 100
    r.rename("l", "m")
    assert r.lrange("m", 0, -1) == [b"a", b"b"]
    r.copy("m", "n")
    r.rpush("n", "c")
    assert r.llen("m") == 2 and r.llen("n") == 3
    assert list(r.scan_iter(_type="list")) and sorted(r.scan_iter(_type="list")) == [b"m", b"n"]
    assert r.delete("m", "n") == 2 and r.exists("m", "n") == 0


def test_lists_in_multi_exec(r):
    r.rpush("l", "a")
    p = r.pipeline(transaction=True)
    p.rpush("l", "b", "c")
    p.lpush("l", "z")
    p.lrange("l", 0, -1)
    p.lpop("l")
    p.linsert("l", "AFTER", "a", "X")
    p.lrem("l", 0, "b")
    p.lmove("l", "m", "RIGHT", "LEFT")
    p.llen("l")
    p.blpop(["empty"], 5)  # does not block inside EXEC
    p.brpoplpush("empty", "m", 5)
    p.lrange("m", 0, -1)
    assert p.execute() == [3, 4, [b"z", b"a", b"b", b"c"], b"z", 4, 1, b"c", 2, None, None, [b"c"]]
    assert r.lrange("l", 0, -1) == [b"a", b"X"] and r.lrange("m", 0, -1) == [b"c"]


def test_big_list_pops_stay_point_reads(r):
    n = 20000
    p = r.pipeline(transaction=False)
    for i in range(0, n, 1000):
        p.rpush("big", *range(i, i + 1000))
    p.execute()
    assert r.llen("big") == n and r.lindex("big", 12345) == b"12345"
    got = []
    while True:
        chunk = r.lpop("big", 997)
        if chunk is None:
            break
        got += chunk
    assert [int(x) for x in got] == list(range(n))


def test_concurrent_pushes_and_pops_exact_totals(server):
    threads, per = 8, 300
    c = server.client()
    c.delete("q", "done")

    def producer(k):
        cl = server.client()
        for i in range(per):
            cl.rpush("q", f"{k}:{i}")

    ts = [threading.Thread(target=producer, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert c.llen("q") == threads * per
    popped = []
    lock = threading.Lock()

    def consumer():
        cl = server.client()
        mine = []
        while True:
            v = cl.lmove("q", "done", "LEFT", "RIGHT")
            if v is None:
                break
            mine.append(v)
        with lock:
            popped.extend(mine)

    ts = [threading.Thread(target=consumer) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(popped) == threads * per and len(set(popped)) == threads * per
    assert c.llen("done") == threads * per and c.exists("q") == 0
    # Each producer's elements kept their order.
    for k in range(threads):
        mine = [v for v in c.lrange("done", 0, -1) if v.startswith(f"{k}:".encode())]
        assert mine == [f"{k}:{i}".encode() for i in range(per)]


def test_lists_survive_a_restart_and_a_kill(fresh_server):
    srv = fresh_server()
    c = srv.client()
    c.rpush("l", *range(100))
    c.lpush("l", "head")
    c.linsert("l", "BEFORE", "50", "mid")
    c.expire("l", 1000)
    srv.restart()
    c = srv.client()
    assert c.llen("l") == 102 and c.lindex("l", 0) == b"head" and c.lindex("l", 51) == b"mid" and c.ttl("l") > 900
    c.lpop("l")
    c.rpush("l", "tail")
    srv.stop(signal.SIGKILL)
    srv.start()
    c = srv.client()
    assert c.llen("l") == 102 and c.lindex("l", 0) == b"0" and c.lindex("l", -1) == b"tail"
