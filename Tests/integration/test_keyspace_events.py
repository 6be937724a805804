"""Keyspace notifications (notify-keyspace-events) compared with redis-server 7.0.

Each test runs the same commands on cairnd and on redis-server, each with a subscriber to every
keyspace and keyevent channel (`PSUBSCRIBE __key*__:*`), and compares what the two published:
the same channels and messages in the same order. A marker published after the commands tells
the subscriber that everything before it arrived.
"""
import os
import time

import pytest
import redis

from conftest import REDIS_SERVER, Cairnd, RedisServer

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server to compare with")

MARK_CHANNEL = b"__keyevent@0__:zz-marker"


@pytest.fixture(scope="module")
def servers():
    """conftest's pair, with DEBUG allowed on redis-server (DEBUG SET-ACTIVE-EXPIRE)."""
    cairn = Cairnd()
    reference = RedisServer("--enable-debug-command", "yes")
    yield cairn, reference
    cairn.cleanup()
    reference.stop()

# Every data type's writes, and reads of missing keys (class m), in an order whose results do
# not depend on chance (SPOP takes the whole set).
SEQUENCE = [
    # strings
    ["SET", "s1", "v"], ["SET", "s1", "w", "EX", "100"], ["SET", "s1", "x", "KEEPTTL"], ["SETNX", "s1", "y"],
    ["SETNX", "s2", "y"], ["SETEX", "s3", "100", "v"], ["PSETEX", "s4", "100000", "v"], ["GETSET", "s2", "z"],
    ["MSET", "m1", "1", "m2", "2"], ["MSETNX", "m3", "3", "m4", "4"], ["MSETNX", "m3", "3", "m5", "5"],
    ["INCR", "n"], ["DECR", "n"], ["INCRBY", "n", "5"], ["DECRBY", "n", "2"], ["INCRBYFLOAT", "n", "1.5"],
    ["APPEND", "ap", "x"], ["APPEND", "ap", "y"], ["SETRANGE", "ap", "1", "zz"], ["SETRANGE", "sr", "2", "a"],
    ["GETDEL", "ap"], ["GETDEL", "ap"], ["GETEX", "s1", "PERSIST"], ["GETEX", "s1", "EX", "50"],
    ["SETBIT", "b1", "7", "1"], ["BITFIELD", "b2", "SET", "u8", "0", "200", "GET", "u8", "0"],
    ["BITOP", "OR", "b3", "b1", "b2"], ["BITOP", "AND", "b3", "nob1", "nob2"],
    ["PFADD", "p1", "a", "b"], ["PFADD", "p1", "a"], ["PFMERGE", "p2", "p1"], ["PFCOUNT", "p1", "nop"],
    ["GET", "missing"], ["MGET", "s1", "missing2"], ["STRLEN", "missing3"], ["GETRANGE", "missing4", "0", "1"],
    # keys
    ["EXPIRE", "s2", "100"], ["PEXPIRE", "s2", "100000"], ["EXPIREAT", "s2", "4000000000"], ["EXPIRE", "s2", "100", "NX"],
    ["PERSIST", "s2"], ["PERSIST", "s2"], ["EXPIRE", "m1", "-1"], ["PEXPIREAT", "m2", "1"],
    ["RENAME", "s3", "r1"], ["RENAME", "s4", "r1"], ["RENAMENX", "r1", "s2"], ["RENAMENX", "r1", "r2"],
    ["COPY", "r2", "c1"], ["COPY", "r2", "c1"], ["COPY", "r2", "c1", "REPLACE"],
    ["DEL", "r2", "c1", "nokey"], ["UNLINK", "m3", "m4"], ["EXISTS", "m3", "s1"], ["TYPE", "gone"], ["TTL", "gone"],
    ["TOUCH", "s1"],
    # lists
    ["LPUSH", "l1", "a", "b", "c"], ["RPUSH", "l1", "d"], ["LPUSHX", "nol", "x"], ["RPUSHX", "l1", "e"],
    ["LPOP", "l1"], ["RPOP", "l1", "2"], ["LSET", "l1", "0", "z"], ["LINSERT", "l1", "BEFORE", "z", "y"],
    ["LREM", "l1", "0", "y"], ["LTRIM", "l1", "0", "0"], ["LPOP", "l1"], ["LPOP", "l1"],
    ["RPUSH", "l2", "a", "b", "c"], ["RPOPLPUSH", "l2", "l3"], ["LMOVE", "l2", "l3", "LEFT", "RIGHT"],
    ["LMOVE", "l3", "l3", "LEFT", "LEFT"], ["LMPOP", "2", "nol", "l2", "LEFT", "COUNT", "5"],
    ["BLPOP", "l3", "1"], ["BRPOPLPUSH", "l3", "l4", "1"], ["BLMOVE", "l4", "l5", "RIGHT", "LEFT", "1"],
    ["LRANGE", "nolist", "0", "-1"], ["LLEN", "nolist"],
    ["RPUSH", "srt", "3", "1", "2"], ["SORT", "srt", "STORE", "srt2"], ["SORT", "nosrt", "STORE", "srt2"],
    # hashes
    ["HSET", "h", "f", "v", "g", "w"], ["HMSET", "h", "f", "v2"], ["HSETNX", "h", "f", "v"], ["HSETNX", "h", "k", "v"],
    ["HINCRBY", "h", "n", "1"], ["HINCRBYFLOAT", "h", "m", "1.5"], ["HDEL", "h", "nofield"],
    ["HDEL", "h", "f", "g", "n", "m", "k"], ["HGET", "h", "f"], ["HGETALL", "noh"],
    # sets
    ["SADD", "st", "a", "b", "c"], ["SADD", "st", "a"], ["SREM", "st", "a"], ["SREM", "st", "zz"],
    ["SPOP", "st", "5"], ["SADD", "st2", "a", "b"], ["SMOVE", "st2", "st3", "a"], ["SMOVE", "st2", "st3", "b"],
    ["SADD", "x1", "x", "y"], ["SADD", "x2", "y", "z"], ["SINTERSTORE", "x3", "x1", "x2"],
    ["SUNIONSTORE", "x4", "x1", "x2"], ["SDIFFSTORE", "x5", "x1", "x1"], ["SINTERSTORE", "x4", "x1", "nox"],
    ["SMEMBERS", "nos"], ["SISMEMBER", "nos", "a"],
    # sorted sets
    ["ZADD", "z", "1", "a", "2", "b", "3", "c"], ["ZADD", "z", "1", "a"], ["ZADD", "z", "INCR", "5", "a"],
    ["ZINCRBY", "z", "1", "b"], ["ZREM", "z", "c"], ["ZPOPMIN", "z"], ["ZPOPMAX", "z"],
    ["ZADD", "z2", "1", "a", "2", "b", "3", "c", "4", "d"], ["ZREMRANGEBYSCORE", "z2", "1", "1"],
    ["ZREMRANGEBYRANK", "z2", "0", "0"], ["ZREMRANGEBYLEX", "z2", "-", "+"],
    ["ZADD", "z3", "1", "a", "2", "b"], ["ZUNIONSTORE", "z4", "1", "z3"], ["ZINTERSTORE", "z5", "2", "z3", "z4"],
    ["ZDIFFSTORE", "z6", "2", "z3", "z4"], ["ZRANGESTORE", "z7", "z3", "0", "-1"],
    ["ZMPOP", "1", "z7", "MIN", "COUNT", "10"], ["BZPOPMIN", "z4", "1"], ["BZMPOP", "1", "2", "noz", "z5", "MAX"],
    ["ZSCORE", "noz", "a"], ["ZRANGE", "noz", "0", "-1"],
    # geo
    ["GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"],
    ["GEOSEARCHSTORE", "g2", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "g3"], ["GEOSEARCHSTORE", "g2", "nog", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"],
    # dump / restore
    ["RESTORE", "rs", "0", "DUMP:s1"], ["RESTORE", "rs", "0", "DUMP:s1", "REPLACE"], ["DUMP", "nodump"],
    # edge cases: past expiry times, options that change nothing, replaced destinations,
    # SORT's BY/GET lookups, RESTORE of collections
    ["SET","k","v","PXAT","1"], ["GET","k"], ["SET","k2","v"], ["SET","k2","v2","EXAT","1"], ["EXISTS","k2"],
    ["GETEX","k3"], ["SET","k3","v"], ["GETEX","k3","PXAT","1"],
    ["APPEND","a1","x"], ["INCRBYFLOAT","f1","1"], ["HINCRBY","h1","f","1"], ["SETRANGE","sr","0",""], ["SET","sr2","v"], ["SETRANGE","sr2","0",""],
    ["MSET","a1","y","new1","z"], ["RPUSH","L","a","b"], ["LMOVE","L","L2","LEFT","RIGHT"], ["LINSERT","L","BEFORE","zz","q"], ["LREM","L","0","zz"],
    ["LTRIM","L","0","-1"], ["LPOP","L","0"], ["SPOP","nos","0"], ["SADD","S","a"], ["SPOP","S","0"], ["ZADD","Z","1","a"], ["ZPOPMIN","Z","0"],
    ["ZADD","Z","GT","0","a"], ["ZADD","Z","XX","2","nomember"], ["ZADD","Z","NX","3","a"], ["ZADD","Z","CH","1","a"],
    ["GEOADD","G","10","10","m","10","10","m"], ["BITFIELD","bf","OVERFLOW","FAIL","INCRBY","u2","0","10"], ["BITFIELD","bf","SET","u8","0","1"],
    ["SADD","D","x"], ["SADD","A1","a"], ["SINTERSTORE","D","A1","A1"], ["ZADD","DZ","1","x"], ["ZINTERSTORE","DZ","2","nz1","nz2"],
    ["SADD","SM1","a"], ["SADD","SM2","a"], ["SMOVE","SM1","SM2","a"],
    ["HSET","HC","f","v"], ["EXPIRE","HC","100"], ["COPY","HC","HC2"], ["RENAME","HC","HC3"], ["RENAME","HC3","HC2"],
    ["RPUSH","SL","3","1","2"], ["SET","w_1","10"], ["SET","w_2","5"], ["SORT","SL","BY","w_*","GET","#","STORE","SL2"],
    ["PFADD","P1"], ["PFADD","P1"], ["PFADD","P2","a"], ["PFMERGE","P3"],
    ["INCR","cnt"], ["DECRBY","cnt","1"], ["SETNX","cnt","1"], ["PERSIST","cnt"],
    ["LPUSHX","L","z"], ["RPUSHX","nol","z"], ["LSET","L","0","n"],
    ["RESTORE","rz","0","DUMP:Z"], ["RESTORE","rl","0","DUMP:L"], ["RESTORE","rh","0","DUMP:HC2","REPLACE"], ["RESTORE","rl","100","DUMP:L","REPLACE"],
    ["RESTORE", "rl", "1", "DUMP:L", "REPLACE", "ABSTTL"],
    ["EXPIRE","L","0"], ["EXPIRE", "G", "100", "GT"], ["EXPIRE","G","100","XX"], ["EXPIRE","G","50","LT"],
    ["DEL","S","Z"], ["UNLINK","nokey"], ["HDEL","HC2","f"], ["ZREM","G","m"], ["SREM","D","nomember"],
    ["BLMPOP","1","1","L2","RIGHT"], ["RPUSH","L2","q"], ["BRPOP","nolist","L2","1"],
    ["SORT_RO","nolist"], ["ZRANGESTORE","zd","nozs","0","-1"], ["ZADD","zd","1","a"], ["ZRANGESTORE","zd","nozs","0","-1"],
    ["GEOSEARCHSTORE","gd","nogeo","FROMLONLAT","0","0","BYRADIUS","1","km"],
    ["SET","gd","x"], ["GEOSEARCHSTORE","gd","nogeo","FROMLONLAT","0","0","BYRADIUS","1","km"],
    # writes that change nothing or fail, options, blocking forms served at once, scripts
    ["SET","s","abc"], ["INCR","s"], ["HSET","s","f","v"], ["LPUSH","s","x"], ["SET","s","v","NX","GET"], ["SET","n1","v","GET"], ["SET","s","w","XX","GET"],
    ["LINSERT","nolist","BEFORE","a","b"], ["RPUSH","L","a"], ["LINSERT","L","BEFORE","zz","b"], ["LMOVE","L","L","RIGHT","LEFT"], ["RPOPLPUSH","L","L"],
    ["ZADD","Z","1","a"], ["ZADD","Z","LT","5","a"], ["ZADD","Z","GT","5","a"], ["ZINCRBY","Z2","2","m"], ["ZINCRBY","Z2","0","m"],
    ["HSETNX","H","f","v"], ["HSETNX","H","f","w"], ["HINCRBYFLOAT","H2","f","2.5"], ["HDEL","H2","nof"],
    ["EXPIRE","s","100","NX"], ["EXPIRE","s","100","NX"], ["EXPIRE","s","10","GT"], ["PERSIST","H"], ["GETEX","s"],
    ["RENAMENX","s","H"], ["COPY","s","H"], ["BITOP","NOT","bn","s"], ["SORT","L"], ["SPOP","nos","2"],
    ["SADD","A","x","y"], ["SADD","B","x"], ["SMOVE","A","B","x"], ["SINTERSTORE","A","A","B"], ["SUNIONSTORE","B","B","nob"],
    ["ZUNIONSTORE","Z","2","Z","Z2"], ["ZINTERSTORE","Z","1","Z"], ["ZDIFFSTORE","Z","1","Z"],
    ["LPUSH","BL","a","b","c"], ["LMPOP","1","BL","RIGHT","COUNT","2"], ["BLMPOP","0.1","1","BL","LEFT","COUNT","5"], ["RPUSH","BL","z"], ["BLPOP","BL","0.1"],
    ["ZADD","BZ","1","a","2","b"], ["BZPOPMAX","BZ","0.1"], ["BZMPOP","0.1","1","BZ","MIN","COUNT","3"],
    ["PFADD","hll"], ["PFCOUNT","hll","hll2"], ["SETBIT","sb","100","0"], ["BITFIELD","sb","GET","u8","0"], ["BITFIELD","nbf","INCRBY","u8","0","1","GET","u8","0"],
    ["APPEND","ap",""], ["SETRANGE","ap","0","x"], ["DECRBY","dc","0"], ["INCRBYFLOAT","dc","0"],
    ["MSETNX","ms1","a","ms1","b"], ["MSET","ms2","a","ms2","b"],
    ["GEOADD","geo","XX","1","1","m"], ["GEOADD","geo","1","1","m"], ["GEOADD","geo","NX","2","2","m"], ["GEOADD","geo","CH","2","2","m"],
    ["GEORADIUSBYMEMBER","geo","m","10","km","STORE","geo2"], ["GEOSEARCH","nogeo","FROMLONLAT","0","0","BYRADIUS","1","km"],
    ["GEODIST","nogeo","a","b"], ["GEOPOS","nogeo","a"], ["ZRANGESTORE","zr","geo","0","-1"],
    ["RESTORE","rs","0","DUMP:geo"], ["DEL","rs","geo","geo2","zr"],
    ["EVAL","return redis.call('get', KEYS[1])","1","nokey"], ["EVAL_RO","return redis.call('exists', KEYS[1])","1","nokey2"],
    # streams: the stream class (t), `new` for a created stream, and key misses of reads
    ["XADD","X","1-1","f","v"], ["XADD","X","NOMKSTREAM","2-1","f","v"], ["XADD","noX","NOMKSTREAM","*","f","v"],
    ["XADD","X","MAXLEN","1","3-1","f","v"], ["XADD","X","0-1","f","v"], ["XTRIM","X","MAXLEN","5"], ["XADD","X","4-1","f","v"],
    ["XTRIM","X","MINID","4"], ["XDEL","X","9-9"], ["XDEL","X","3-1"], ["XSETID","X","10-1"], ["XLEN","noX"], ["XRANGE","noX","-","+"],
    ["XGROUP","CREATE","X","g","0"], ["XGROUP","CREATE","X","g","0"], ["XGROUP","CREATE","XM","g","$","MKSTREAM"],
    ["XADD","X","11-1","f","v"], ["XREADGROUP","GROUP","g","c1","STREAMS","X",">"], ["XREADGROUP","GROUP","g","c1","STREAMS","X","0"],
    ["XGROUP","CREATECONSUMER","X","g","c2"], ["XGROUP","CREATECONSUMER","X","g","c2"], ["XCLAIM","X","g","c3","0","11-1"],
    ["XAUTOCLAIM","X","g","c4","0","0"], ["XACK","X","g","11-1"], ["XGROUP","SETID","X","g","0"], ["XGROUP","DELCONSUMER","X","g","c1"],
    ["XGROUP","DELCONSUMER","X","g","nobody"], ["XGROUP","DESTROY","X","g"], ["XGROUP","DESTROY","X","g"], ["XREAD","STREAMS","noX","0"],
    ["XINFO","STREAM","X"], ["DEL","X","XM"],
    # flushes publish nothing
    ["FLUSHDB"], ["SET", "after", "flush"],
]

CLASSES = ["K", "E", "g", "$", "l", "s", "h", "z", "x", "e", "t", "m", "n", "A"]


class Listener:
    """A subscriber to every keyspace and keyevent channel of one server."""

    def __init__(self, port, protocol=2):
        self.client = redis.Redis(port=port, protocol=protocol, socket_timeout=10)
        self.pubsub = self.client.pubsub()
        self.pubsub.psubscribe("__key*__:*")
        deadline = time.time() + 10
        while time.time() < deadline:
            m = self.pubsub.get_message(timeout=1)
            if m and m["type"] == "psubscribe":
                return
        raise AssertionError("no psubscribe confirmation")

    def collect(self, marker_client, timeout=10):
        """Every message until the marker: [(channel, data)]."""
        marker_client.publish(MARK_CHANNEL, b"end")
        got = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.pubsub.get_message(timeout=1)
            if not m or m["type"] != "pmessage":
                continue
            if m["channel"] == MARK_CHANNEL:
                return got
            got.append((m["channel"], m["data"]))
        raise AssertionError(f"no marker after {got}")

    def close(self):
        self.pubsub.close()
        self.client.close()


def run(server_port, flags, commands, protocol=2, setup=()):
    """What one server publishes for `commands` with `flags`: [(channel, message)]."""
    c = redis.Redis(port=server_port, socket_timeout=30)
    c.config_set("notify-keyspace-events", "")
    c.flushall()
    for cmd in setup:
        c.execute_command(*cmd)
    # Keys given a past expiry go when read, not whenever the background expiry runs.
    c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    c.config_set("notify-keyspace-events", flags)
    listener = Listener(server_port, protocol)
    try:
        for cmd in commands:
            cmd = [c.dump(a[5:]) if isinstance(a, str) and a.startswith("DUMP:") else a for a in cmd]
            try:
                c.execute_command(*cmd)
            except redis.ResponseError:
                pass  # the same errors on both sides (compared elsewhere); only events matter here
        return listener.collect(c)
    finally:
        listener.close()
        c.config_set("notify-keyspace-events", "")
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        c.close()


def compare(servers, flags, commands, protocol=2, setup=()):
    cairn, reference = servers
    want = run(reference.port, flags, commands, protocol, setup)
    got = run(cairn.port, flags, commands, protocol, setup)
    assert got == want
    return got


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("cls", CLASSES)
def test_each_class_publishes_what_redis_publishes(servers, cls, protocol):
    """K and E with each class (and each class alone with both channel kinds): the whole
    sequence of writes and reads gives the same events, in the same order, as redis-server."""
    flags = {"K": "KA", "E": "EA"}.get(cls, "KE" + cls)
    got = compare(servers, flags, SEQUENCE, protocol)
    if cls in ("g", "$", "l", "s", "h", "z", "x", "m", "n", "A", "K", "E"):
        assert got, f"class {cls} published nothing: the comparison proves nothing"


def test_keyspace_or_keyevent_alone(servers):
    commands = [["SET", "a", "1"], ["LPUSH", "l", "x"], ["DEL", "a"]]
    only_space = compare(servers, "Kg$l", commands)
    only_event = compare(servers, "Eg$l", commands)
    assert all(ch.startswith(b"__keyspace@0__:") for ch, _ in only_space)
    assert all(ch.startswith(b"__keyevent@0__:") for ch, _ in only_event)
    # Without K or E nothing is published, whatever the classes.
    assert compare(servers, "A", commands) == []


def test_config_canonical_form_and_errors(servers):
    cairn, reference = servers
    c, r = cairn.client(decode_responses=True), reference.client(decode_responses=True)
    try:
        assert c.config_get("notify-keyspace-events") == r.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}
        for value in ["KEA", "A", "KEn", "Kd", "g$lshzxetmndKE", "Ex", "Km", "lzhs$g", "AKEm", "n", "e", "t", "", "KEAn"]:
            assert c.config_set("notify-keyspace-events", value) is True
            assert r.config_set("notify-keyspace-events", value) is True
            assert c.config_get("notify-keyspace-events") == r.config_get("notify-keyspace-events"), value
        for bad in ["Kq", "KE ", "x1", "kea"]:
            with pytest.raises(redis.ResponseError) as theirs:
                r.config_set("notify-keyspace-events", bad)
            with pytest.raises(redis.ResponseError) as ours:
                c.config_set("notify-keyspace-events", bad)
            assert str(ours.value) == str(theirs.value), bad
        assert c.config_get("notify-keyspace-events") == r.config_get("notify-keyspace-events")
    finally:
        c.config_set("notify-keyspace-events", "")
        r.config_set("notify-keyspace-events", "")
        c.close()
        r.close()


def test_config_file_and_rewrite(fresh_server, tmp_path):
    conf = tmp_path / "cairn.conf"
    conf.write_text("notify-keyspace-events Elg\n")
    srv = fresh_server(str(conf))
    c = srv.client(decode_responses=True)
    assert c.config_get("notify-keyspace-events") == {"notify-keyspace-events": "glE"}
    assert c.config_set("notify-keyspace-events", "KEA") is True
    assert c.execute_command("CONFIG", "REWRITE") == "OK"
    assert "\nnotify-keyspace-events AKE\n" in "\n" + conf.read_text()
    c.close()
    srv.restart()
    c = srv.client(decode_responses=True)
    assert c.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
    c.close()


def test_multi_exec_events_after_exec_in_order(servers):
    """Inside MULTI the events come with EXEC, in the queued commands' order (a failing
    command in the middle publishes nothing of its own)."""
    cairn, reference = servers
    results = []
    for server in (reference, cairn):
        c = server.client()
        c.config_set("notify-keyspace-events", "")
        c.flushall()
        c.set("str", "x")
        c.config_set("notify-keyspace-events", "KEAm")
        listener = Listener(server.port)
        try:
            p = c.pipeline(transaction=True)
            p.set("a", 1).lpush("l", "x", "y").incr("str").hset("h", "f", "v").get("missing").rpop("l").delete("a")
            p.execute(raise_on_error=False)
            results.append(listener.collect(c))
        finally:
            listener.close()
            c.config_set("notify-keyspace-events", "")
            c.close()
    assert results[1] == results[0]
    assert results[0]


def test_script_events(servers):
    script = """
        redis.call('set', KEYS[1], 'v')
        redis.call('expire', KEYS[1], 100)
        redis.call('hset', KEYS[2], 'f', 'v')
        redis.call('del', KEYS[1])
        redis.call('get', KEYS[3])
        redis.pcall('lpush', KEYS[2], 'x')
        return 1
    """
    got = compare(servers, "KEAm", [["EVAL", script, "3", "k1", "k2", "k3"],
                                     ["FUNCTION", "LOAD", "REPLACE", "#!lua name=notifylib\nredis.register_function('f', function(keys) return redis.call('incr', keys[1]) end)"],
                                     ["FCALL", "f", "1", "k4"]])
    assert (b"__keyevent@0__:hset", b"k2") in got


def test_pipelined_writes_of_several_clients(servers):
    """Grouped (batched) writes of a pipeline: the events in the pipeline's order."""
    cairn, reference = servers
    results = []
    for server in (reference, cairn):
        c = server.client()
        c.config_set("notify-keyspace-events", "")
        c.flushall()
        c.config_set("notify-keyspace-events", "KEAn")
        listener = Listener(server.port)
        try:
            p = c.pipeline(transaction=False)
            for i in range(50):
                p.set(f"k{i % 7}", i).hset("h", f"f{i}", i).lpush("l", i).incr("n").sadd("s", i % 5).zadd("z", {f"m{i % 9}": i})
                if i % 10 == 9:
                    # Emptied and made again within the round: `del`, then `new`.
                    p.delete("h").lpop("l", 100).spop("s", 10).zpopmin("z", 100)
            p.execute()
            results.append(listener.collect(c))
        finally:
            listener.close()
            c.config_set("notify-keyspace-events", "")
            c.close()
    assert results[1] == results[0]


def test_expired_by_lazy_expiry(servers):
    """With active expiry off (DEBUG SET-ACTIVE-EXPIRE 0, on both), a read of an expired key
    publishes `expired` (then `keymiss`), once: the second read finds nothing to expire."""
    cairn, reference = servers
    results = []
    for server in (reference, cairn):
        c = server.client()
        c.config_set("notify-keyspace-events", "")
        c.flushall()
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        try:
            c.config_set("notify-keyspace-events", "KExm")
            c.set("a", 1, px=50)
            c.hset("h", "f", "v")
            c.pexpire("h", 50)
            c.set("b", 1, px=50)
            listener = Listener(server.port)
            time.sleep(0.2)
            assert c.get("a") is None
            assert c.get("a") is None
            assert c.hget("h", "f") is None
            assert c.mget("b", "c") == [None, None]
            results.append(listener.collect(c))
            listener.close()
        finally:
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            c.config_set("notify-keyspace-events", "")
            c.close()
    assert results[1] == results[0]
    assert results[0].count((b"__keyevent@0__:expired", b"a")) == 1


def test_expired_by_the_sweep(servers):
    """Keys nobody reads expire in the background: one `expired` event per key (the order of
    keys within a sweep is each server's own, so they are compared sorted)."""
    cairn, reference = servers
    results = []
    for server in (reference, cairn):
        c = server.client()
        c.config_set("notify-keyspace-events", "")
        c.flushall()
        c.config_set("notify-keyspace-events", "Ex")
        before = int(c.info("stats")["expired_keys"])
        listener = Listener(server.port)
        try:
            for i in range(20):
                c.set(f"e{i}", i, px=100)
            c.rpush("list", "x")
            c.pexpire("list", 100)
            c.set("stays", 1, ex=100)
            deadline = time.time() + 10
            # Without reading a key: the servers' own count of the keys they expired.
            while time.time() < deadline and int(c.info("stats")["expired_keys"]) < before + 21:
                time.sleep(0.1)
            results.append(sorted(listener.collect(c)))
        finally:
            listener.close()
            c.config_set("notify-keyspace-events", "")
            c.close()
    assert results[1] == results[0]
    assert len(results[0]) == 21


def test_blocked_client_served_by_a_push(servers):
    """A push that serves a blocked BLPOP: the push's events, then the pop's."""
    import threading
    cairn, reference = servers
    results = []
    for server in (reference, cairn):
        c = server.client()
        c.config_set("notify-keyspace-events", "")
        c.flushall()
        c.config_set("notify-keyspace-events", "KEA")
        listener = Listener(server.port)
        blocked = server.client()
        t = threading.Thread(target=lambda: blocked.blpop(["bl"], timeout=10))
        t.start()
        deadline = time.time() + 10
        while time.time() < deadline and int(c.info("clients")["blocked_clients"]) == 0:
            time.sleep(0.02)
        c.rpush("bl", "x")
        t.join()
        results.append(listener.collect(c))
        listener.close()
        blocked.close()
        c.config_set("notify-keyspace-events", "")
        c.close()
    assert results[1] == results[0]


def follow(replica, primary, timeout=30):
    rc = replica.client()
    rc.execute_command("REPLICAOF", "127.0.0.1", str(primary.port))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if rc.info("replication").get("master_link_status") == "up":
            rc.close()
            return
        time.sleep(0.05)
    raise AssertionError("the replica did not connect")


def test_a_replica_publishes_the_writes_it_applies(fresh_server):
    """A replica publishes the events of the primary's writes as it applies them (its own
    notify-keyspace-events chooses which), whether they ran alone, batched, in MULTI or in a
    script; expired keys reach it as `del`, as Redis replicas see them."""
    primary = fresh_server("--set", "notify-keyspace-events=KEA")
    replica = fresh_server()
    follow(replica, primary)
    rc = replica.client()
    rc.config_set("notify-keyspace-events", "KEA")
    listener = Listener(replica.port)
    p = primary.client()
    p.set("a", 1)
    p.lpush("l", "x", "y")
    pipe = p.pipeline(transaction=False)
    for i in range(10):
        pipe.hset("h", f"f{i}", i)
    pipe.execute()
    tx = p.pipeline(transaction=True)
    tx.incr("n").sadd("s", "m").delete("a")
    tx.execute()
    p.eval("redis.call('zadd', KEYS[1], 1, 'm') return 1", 1, "z")
    p.set("e", 1, px=50)
    deadline = time.time() + 10
    while time.time() < deadline and int(p.info("stats")["expired_keys"]) < 1:  # the sweep deletes `e`
        time.sleep(0.05)
    assert p.execute_command("WAIT", 1, 5000) == 1
    # The replica has the writes: its events are the primary's, in order.
    got = [m for m in listener.collect(rc) if m[0].startswith(b"__keyevent")]
    expected = ([(b"__keyevent@0__:set", b"a"), (b"__keyevent@0__:lpush", b"l")]
                + [(b"__keyevent@0__:hset", b"h")] * 10
                + [(b"__keyevent@0__:incrby", b"n"), (b"__keyevent@0__:sadd", b"s"), (b"__keyevent@0__:del", b"a"),
                   (b"__keyevent@0__:zadd", b"z"), (b"__keyevent@0__:set", b"e"), (b"__keyevent@0__:expire", b"e"),
                   (b"__keyevent@0__:del", b"e")])
    assert got == expected
    # The replica's own setting filters: lists only.
    rc.config_set("notify-keyspace-events", "El")
    p.set("b", 2)
    p.rpush("l", "z")
    assert p.execute_command("WAIT", 1, 5000) == 1
    got = listener.collect(rc)
    assert got == [(b"__keyevent@0__:rpush", b"l")]
    listener.close()
    rc.close()
    p.close()


def test_expired_found_by_writes(servers):
    """A write that looks up a key whose TTL passed deletes it first and publishes `expired`,
    before its own events; a write that then leaves the key (LPUSHX, EXPIRE, DEL) leaves
    nothing to expire again. Alone, batched in a pipeline, in MULTI and in a script."""
    cairn, reference = servers
    keys = ["s", "s2", "l", "h", "n", "d", "e", "m1", "m2", "z"]
    setup = []
    for k in keys:
        setup.append(["SET", k, "1"] if k not in ("l", "h", "z") else
                     {"l": ["RPUSH", k, "x"], "h": ["HSET", k, "f", "v"], "z": ["ZADD", k, "1", "m"]}[k])
        setup.append(["PEXPIRE", k, "1"])
    results = []
    for server in (reference, cairn):
        c = server.client()
        c.config_set("notify-keyspace-events", "")
        c.flushall()
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        try:
            for cmd in setup:
                c.execute_command(*cmd)
            time.sleep(0.05)
            c.config_set("notify-keyspace-events", "KEAn")
            listener = Listener(server.port)
            c.set("s", "new")
            c.lpushx("l", "y")
            c.expire("e", 100)
            c.delete("d")
            p = c.pipeline(transaction=False)
            p.hset("h", "f", "w").incr("n")
            p.execute()
            tx = c.pipeline(transaction=True)
            tx.mset({"m1": "a", "m2": "b"}).zadd("z", {"m": 2})
            tx.execute()
            c.eval("return redis.call('append', KEYS[1], 'x')", 1, "s2")
            # Nothing left to expire: reads find the keys missing.
            c.get("l")
            c.get("e")
            c.get("d")
            results.append(listener.collect(c))
            listener.close()
        finally:
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            c.config_set("notify-keyspace-events", "")
            c.close()
    assert results[1] == results[0]
    assert results[0].count((b"__keyevent@0__:expired", b"l")) == 1
