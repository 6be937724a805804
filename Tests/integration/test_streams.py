"""Streams against a real redis-server 7.0: the same commands sent to both servers must get the
same replies, in RESP2 and RESP3 (IDs are given explicitly, and times are compared as
present, not by value). Then what a comparison cannot show: blocking reads woken by XADD,
MULTI, scripts, ACL key patterns, and a restart."""
import threading
import time

import pytest
import redis

from conftest import REDIS_SERVER, Cairnd
from test_geo import Error, Raw

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

# Fields whose value is a time or a duration: compared as integers, not by value.
TIME_FIELDS = {b"idle", b"seen-time"}


def is_id(x):
    return isinstance(x, bytes) and x.count(b"-") == 1 and x.replace(b"-", b"").isdigit()


def normalize(reply, command=None):
    """Times replaced by a marker: `idle` and `seen-time` fields, and the delivery time or idle
    time of a pending entry ([id, consumer, time, count] or [id, time, count])."""
    if isinstance(reply, dict):
        return {k: ("<time>" if k in TIME_FIELDS and isinstance(v, int) else normalize(v)) for k, v in reply.items()}
    if isinstance(reply, list):
        out = []
        for i, item in enumerate(reply):
            previous = reply[i - 1] if i > 0 else None
            if isinstance(previous, bytes) and previous in TIME_FIELDS and isinstance(item, int):
                out.append("<time>")
            else:
                out.append(normalize(item))
        if reply and is_id(reply[0]):
            if len(reply) == 4 and isinstance(reply[1], bytes) and isinstance(reply[2], int) and isinstance(reply[3], int):
                out[2] = "<time>"
            if len(reply) == 3 and isinstance(reply[1], int) and isinstance(reply[2], int):
                out[1] = "<time>"
        return out
    return reply


SEQUENCES = {
    "add_and_ranges": [
        ["XADD", "s", "1-1", "a", "1"], ["XADD", "s", "1-*", "b", "2"], ["XADD", "s", "1", "c", "3"],
        ["XADD", "s", "2-*", "d", "4", "e", "5"], ["XADD", "s", "5-0", "f", "6"], ["XADD", "s", "5-0", "f", "6"],
        ["XADD", "s", "0-0", "x", "y"], ["XADD", "s", "abc", "x", "y"], ["XADD", "s", "1-1", "x"],
        ["XADD", "s", "NOMKSTREAM", "9-9", "x", "y"], ["XADD", "missing", "NOMKSTREAM", "*", "x", "y"],
        ["XLEN", "s"], ["XLEN", "missing"],
        ["XRANGE", "s", "-", "+"], ["XRANGE", "s", "1", "2"], ["XRANGE", "s", "(1-1", "+"], ["XRANGE", "s", "-", "(5"],
        ["XRANGE", "s", "-", "+", "COUNT", "2"], ["XRANGE", "s", "-", "+", "COUNT", "0"], ["XRANGE", "s", "-", "+", "COUNT", "-1"],
        ["XRANGE", "s", "-", "+", "COUNT"], ["XRANGE", "s", "(18446744073709551615-18446744073709551615", "+"],
        ["XRANGE", "s", "-", "(0-0"], ["XRANGE", "s", "x", "+"], ["XRANGE", "s", "(-", "+"], ["XRANGE", "missing", "-", "+"],
        ["XREVRANGE", "s", "+", "-"], ["XREVRANGE", "s", "+", "-", "COUNT", "1"], ["XREVRANGE", "s", "(5", "1-2"],
        ["SET", "str", "v"], ["XADD", "str", "*", "a", "b"], ["XRANGE", "str", "-", "+"], ["XLEN", "str"],
    ],
    "delete_trim_setid": [
        *[["XADD", "t", f"{i}-1", "n", str(i)] for i in range(1, 21)],
        ["XDEL", "t", "3-1", "3-1", "4-1", "99-1"], ["XDEL", "t", "bad"], ["XDEL", "missing", "1-1"],
        ["XLEN", "t"], ["XTRIM", "t", "MAXLEN", "15"], ["XLEN", "t"], ["XRANGE", "t", "-", "+", "COUNT", "1"],
        ["XTRIM", "t", "MINID", "10"], ["XRANGE", "t", "-", "+", "COUNT", "1"], ["XTRIM", "t", "MAXLEN", "~", "2"],
        ["XTRIM", "t", "MAXLEN", "=", "8"], ["XTRIM", "t", "MINID", "~", "19"], ["XTRIM", "t", "MAXLEN", "2", "LIMIT", "1"],
        ["XTRIM", "t", "MAXLEN", "~", "2", "LIMIT", "1"], ["XTRIM", "t", "MAXLEN", "-1"], ["XTRIM", "t", "MAXLEN", "1", "MINID", "1"],
        ["XTRIM", "t"], ["XTRIM", "t", "LIMIT", "1"], ["XTRIM", "missing", "MAXLEN", "1"], ["XTRIM", "t", "FOO", "1"],
        ["XADD", "t", "MAXLEN", "3", "30-1", "n", "30"], ["XRANGE", "t", "-", "+"],
        ["XADD", "t", "MINID", "30", "31-1", "n", "31"], ["XRANGE", "t", "-", "+"],
        ["XADD", "t", "MAXLEN", "~", "1", "LIMIT", "5", "32-1", "n", "32"], ["XADD", "t", "LIMIT", "5", "33-1", "n", "33"],
        ["XSETID", "t", "10-1"], ["XSETID", "t", "40-1"], ["XADD", "t", "40-1", "a", "b"], ["XADD", "t", "40-*", "a", "b"],
        ["XSETID", "t", "50-1", "ENTRIESADDED", "100", "MAXDELETEDID", "45-0"], ["XSETID", "t", "50-1", "ENTRIESADDED", "1"],
        ["XSETID", "t", "50-1", "MAXDELETEDID", "60-0"], ["XSETID", "t", "44-0"], ["XSETID", "missing", "1-1"],
        ["XSETID", "t", "50-1", "FOO"], ["XINFO", "STREAM", "t"],
        ["XDEL", "t", "40-1", "40-2", "31-1", "32-1", "33-1"], ["XLEN", "t"], ["XRANGE", "t", "-", "+"], ["XINFO", "STREAM", "t"],
        ["EXISTS", "t"], ["TYPE", "t"], ["OBJECT", "ENCODING", "t"],
    ],
    "approximate_nodes": [
        *[["XADD", "n", f"{i}-1", "f", "v"] for i in range(1, 251)],
        ["XTRIM", "n", "MAXLEN", "~", "120"], ["XLEN", "n"], ["XTRIM", "n", "MAXLEN", "~", "10", "LIMIT", "99"],
        ["XTRIM", "n", "MINID", "~", "230"], ["XLEN", "n"], ["XRANGE", "n", "-", "+", "COUNT", "1"],
        ["XADD", "n", "MAXLEN", "~", "0", "300-1", "f", "v"], ["XLEN", "n"],
    ],
    "groups": [
        ["XGROUP", "CREATE", "g", "grp", "$"], ["XGROUP", "CREATE", "g", "grp", "$", "MKSTREAM"],
        ["XGROUP", "CREATE", "g", "grp", "$", "MKSTREAM"], ["XGROUP", "CREATE", "g", "other", "0", "ENTRIESREAD", "-5"],
        ["XGROUP", "CREATE", "g", "other", "0", "FOO"], ["XLEN", "g"], ["TYPE", "g"],
        *[["XADD", "g", f"{i}-0", "job", str(i)] for i in range(1, 8)],
        ["XREADGROUP", "GROUP", "grp", "alice", "COUNT", "2", "STREAMS", "g", ">"],
        ["XREADGROUP", "GROUP", "grp", "bob", "STREAMS", "g", ">"],
        ["XREADGROUP", "GROUP", "grp", "bob", "STREAMS", "g", ">"],
        ["XREADGROUP", "GROUP", "grp", "alice", "STREAMS", "g", "0"],
        ["XREADGROUP", "GROUP", "grp", "alice", "COUNT", "1", "STREAMS", "g", "1-0"],
        ["XREADGROUP", "GROUP", "nogrp", "alice", "STREAMS", "g", ">"], ["XREADGROUP", "GROUP", "grp", "alice", "STREAMS", "g", "$"],
        ["XREADGROUP", "GROUP", "grp", "alice", "STREAMS", "g"], ["XREADGROUP", "STREAMS", "g", ">"],
        ["XREAD", "GROUP", "grp", "a", "STREAMS", "g", ">"], ["XREAD", "STREAMS", "g", ">"], ["XREAD", "NOACK", "STREAMS", "g", "0"],
        ["XPENDING", "g", "grp"], ["XPENDING", "g", "grp", "-", "+", "10"], ["XPENDING", "g", "grp", "-", "+", "10", "bob"],
        ["XPENDING", "g", "grp", "-", "+", "10", "nobody"], ["XPENDING", "g", "grp", "IDLE", "0", "-", "+", "3"],
        ["XPENDING", "g", "grp", "(1-0", "5", "2"], ["XPENDING", "g", "grp", "-", "+"], ["XPENDING", "g", "nogrp"],
        ["XPENDING", "missing", "grp"], ["XPENDING", "g", "grp", "IDLE", "x", "-", "+", "3"],
        ["XACK", "g", "grp", "1-0", "1-0", "9-9"], ["XACK", "g", "grp", "bad"], ["XACK", "g", "nogrp", "1-0"], ["XACK", "missing", "g", "1-0"],
        ["XPENDING", "g", "grp"], ["XDEL", "g", "3-0"], ["XREADGROUP", "GROUP", "grp", "bob", "STREAMS", "g", "0"],
        ["XCLAIM", "g", "grp", "carol", "0", "2-0", "3-0", "4-0"], ["XPENDING", "g", "grp"],
        ["XCLAIM", "g", "grp", "carol", "0", "5-0", "JUSTID"], ["XCLAIM", "g", "grp", "dave", "3600000", "5-0"],
        ["XCLAIM", "g", "grp", "dave", "0", "7-0", "RETRYCOUNT", "5", "IDLE", "1000"], ["XPENDING", "g", "grp", "-", "+", "10"],
        ["XCLAIM", "g", "grp", "dave", "0", "6-0", "FORCE", "JUSTID", "LASTID", "6-0"], ["XCLAIM", "g", "grp", "dave", "0", "6-0", "BOGUS"],
        ["XCLAIM", "g", "nogrp", "dave", "0", "6-0"], ["XCLAIM", "g", "grp", "dave", "x", "6-0"],
        ["XAUTOCLAIM", "g", "grp", "erin", "0", "0", "COUNT", "2"], ["XAUTOCLAIM", "g", "grp", "erin", "0", "0", "JUSTID"],
        ["XAUTOCLAIM", "g", "grp", "erin", "0", "0", "COUNT", "0"], ["XAUTOCLAIM", "g", "nogrp", "erin", "0", "0"],
        ["XINFO", "GROUPS", "g"], ["XINFO", "CONSUMERS", "g", "grp"], ["XINFO", "CONSUMERS", "g", "nogrp"], ["XINFO", "STREAM", "g"],
        ["XINFO", "STREAM", "g", "FULL"], ["XINFO", "STREAM", "g", "FULL", "COUNT", "1"], ["XINFO", "STREAM", "missing"],
        ["XGROUP", "CREATECONSUMER", "g", "grp", "frank"], ["XGROUP", "CREATECONSUMER", "g", "grp", "frank"],
        ["XGROUP", "CREATECONSUMER", "g", "nogrp", "frank"], ["XGROUP", "DELCONSUMER", "g", "grp", "erin"],
        ["XGROUP", "DELCONSUMER", "g", "grp", "nobody"], ["XINFO", "CONSUMERS", "g", "grp"],
        ["XGROUP", "SETID", "g", "grp", "0"], ["XGROUP", "SETID", "g", "grp", "$", "ENTRIESREAD", "3"], ["XINFO", "GROUPS", "g"],
        ["XGROUP", "SETID", "g", "nogrp", "0"], ["XGROUP", "SETID", "missing", "grp", "0"],
        ["XGROUP", "DESTROY", "g", "grp"], ["XGROUP", "DESTROY", "g", "grp"], ["XINFO", "GROUPS", "g"], ["XGROUP", "HELP"], ["XINFO", "HELP"],
        ["XGROUP", "CREATE", "g", "late", "0"], ["XREADGROUP", "GROUP", "late", "x", "NOACK", "STREAMS", "g", ">"],
        ["XPENDING", "g", "late"], ["XINFO", "GROUPS", "g"],
    ],
    "key_commands": [
        ["XADD", "k", "1-0", "a", "1"], ["XADD", "k", "2-0", "b", "2"], ["XGROUP", "CREATE", "k", "g", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "k", ">"], ["XDEL", "k", "2-0"],
        ["COPY", "k", "k2"], ["XRANGE", "k2", "-", "+"], ["XINFO", "GROUPS", "k2"], ["XPENDING", "k2", "g"], ["XINFO", "STREAM", "k2"],
        ["RENAME", "k2", "k3"], ["XLEN", "k3"], ["XINFO", "GROUPS", "k3"], ["EXISTS", "k2"], ["EXPIRE", "k3", "100"], ["TTL", "k3"],
        ["XADD", "k3", "3-0", "c", "3"], ["TTL", "k3"], ["TYPE", "k3"], ["DEL", "k3"], ["XLEN", "k3"], ["XINFO", "GROUPS", "k3"],
        ["XDEL", "k", "1-0"], ["EXISTS", "k"], ["XLEN", "k"], ["XINFO", "STREAM", "k"], ["XADD", "k", "5-*", "late", "1"],
        ["XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM"], ["EXISTS", "empty"], ["XINFO", "STREAM", "empty"],
        ["SET", "k", "string"], ["TYPE", "k"],
    ],
    "reads": [
        ["XADD", "r1", "1-0", "a", "1"], ["XADD", "r1", "2-0", "b", "2"], ["XADD", "r2", "3-0", "c", "3"],
        ["XREAD", "STREAMS", "r1", "r2", "0", "0"], ["XREAD", "COUNT", "1", "STREAMS", "r1", "r2", "1-0", "0-0"],
        ["XREAD", "STREAMS", "r1", "$"], ["XREAD", "STREAMS", "r1", "r2", "missing", "2", "3", "0"],
        ["XREAD", "STREAMS", "r1"], ["XREAD", "STREAMS", "r1", "r2", "0"], ["XREAD", "COUNT", "x", "STREAMS", "r1", "0"],
        ["XREAD", "BLOCK", "-1", "STREAMS", "r1", "0"], ["XREAD", "STREAMS", "r1", "bad"], ["XREAD", "r1", "0"],
        ["SET", "str", "v"], ["XREAD", "STREAMS", "r1", "str", "0", "0"],
    ],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_replies_equal_redis(pair, name):
    c, r = pair
    for conn in (c, r):
        conn.call("FLUSHALL")
    for command in SEQUENCES[name]:
        got, want = c.call(*command), r.call(*command)
        assert normalize(got, command) == normalize(want, command), f"{command}: cairn {got!r}, redis {want!r}"


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_pipelined_replies_equal_redis(pair, name):
    """The same sequences sent as one pipeline: Cairn runs consecutive writes of a connection
    as one batch (`Engine.executeBatched`), which must answer as one at a time does."""
    c, r = pair
    for conn in (c, r):
        conn.call("FLUSHALL")
    commands = SEQUENCES[name]
    for command, got, want in zip(commands, c.pipeline(commands), r.pipeline(commands)):
        assert normalize(got, command) == normalize(want, command), f"{command}: cairn {got!r}, redis {want!r}"


@pytest.fixture
def cairn(servers):
    c = servers[0].client()
    c.flushall()
    return c


def test_xread_block_is_woken_by_xadd(servers, cairn):
    cairn.xadd("q", {"old": "1"}, id="1-0")
    result = {}

    def reader():
        r = servers[0].client()
        result["got"] = r.xread({"q": "$"}, block=0)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.3)
    assert "got" not in result
    cairn.xadd("q", {"new": "2"}, id="2-0")
    t.join(5)
    assert result["got"] == [[b"q", [(b"2-0", {b"new": b"2"})]]]


def test_xread_block_times_out_with_null(cairn):
    started = time.time()
    assert cairn.xread({"none": "$"}, block=200) == []
    assert 0.15 < time.time() - started < 3


def test_xreadgroup_block_is_served_in_arrival_order(servers, cairn):
    cairn.xgroup_create("jobs", "workers", id="$", mkstream=True)
    got = {}

    def worker(name):
        r = servers[0].client()
        got[name] = r.xreadgroup("workers", name, {"jobs": ">"}, count=1, block=5000)

    first = threading.Thread(target=worker, args=("w1",))
    first.start()
    time.sleep(0.2)
    second = threading.Thread(target=worker, args=("w2",))
    second.start()
    time.sleep(0.2)
    cairn.xadd("jobs", {"n": "1"}, id="1-0")
    first.join(5)
    assert got["w1"] == [[b"jobs", [(b"1-0", {b"n": b"1"})]]]
    assert second.is_alive()
    cairn.xadd("jobs", {"n": "2"}, id="2-0")
    second.join(5)
    assert got["w2"] == [[b"jobs", [(b"2-0", {b"n": b"2"})]]]
    assert cairn.xpending("jobs", "workers")["pending"] == 2


def test_in_multi_and_scripts(cairn):
    p = cairn.pipeline(transaction=True)
    p.xadd("m", {"a": "1"}, id="1-0")
    p.xadd("m", {"b": "2"}, id="2-0")
    p.xrange("m")
    p.xread({"m": "$"}, block=100)
    assert p.execute() == [b"1-0", b"2-0", [(b"1-0", {b"a": b"1"}), (b"2-0", {b"b": b"2"})], []]
    assert cairn.eval("return redis.call('XADD', KEYS[1], '3-0', 'c', '3')", 1, "m") == b"3-0"
    assert cairn.eval("return redis.call('XLEN', KEYS[1])", 1, "m") == 3
    with pytest.raises(redis.ResponseError, match="not allowed with BLOCK option from scripts"):
        cairn.eval("return redis.call('XREAD', 'BLOCK', 0, 'STREAMS', KEYS[1], '$')", 1, "m")


def test_acl_key_patterns_hold_for_stream_reads(servers, cairn):
    cairn.xadd("app:s", {"a": "1"}, id="1-0")
    cairn.xadd("secret:s", {"a": "1"}, id="1-0")
    cairn.acl_setuser("app", enabled=True, passwords=["+pw"], keys=["app:*"], commands=["+@all"])
    user = servers[0].client(username="app", password="pw")
    assert user.xread({"app:s": "0"}) == [[b"app:s", [(b"1-0", {b"a": b"1"})]]]
    with pytest.raises(redis.exceptions.NoPermissionError):
        user.xread({"app:s": "0", "secret:s": "0"})
    with pytest.raises(redis.exceptions.NoPermissionError):
        user.xadd("secret:s", {"b": "2"})
    cairn.acl_deluser("app")


def test_streams_and_groups_survive_a_restart():
    server = Cairnd()
    try:
        c = server.client()
        for i in range(1, 301):
            c.xadd("s", {"i": str(i)}, id=f"{i}-0")
        c.xgroup_create("s", "g", id="0")
        c.xreadgroup("g", "c1", {"s": ">"}, count=10)
        c.xack("s", "g", "1-0", "2-0")
        c.xdel("s", "5-0")
        before = (c.xlen("s"), c.xrange("s", count=3), c.xpending_range("s", "g", "-", "+", 100), c.xinfo_stream("s")["entries-added"])
        server.stop(signal_kill())
        server.start()
        c = server.client()
        after = (c.xlen("s"), c.xrange("s", count=3), c.xpending_range("s", "g", "-", "+", 100), c.xinfo_stream("s")["entries-added"])
        assert [x["message_id"] for x in after[2]] == [x["message_id"] for x in before[2]]
        assert after[:2] == before[:2] and after[3] == before[3] == 300
        assert c.delete("s") == 1 and c.xlen("s") == 0
    finally:
        server.cleanup()


def signal_kill():
    import signal
    return signal.SIGKILL


def test_kill_9_under_stream_load_loses_no_acknowledged_entry_or_pending_record():
    """Producers XADD, consumers XREADGROUP and XACK, and cairnd is killed with SIGKILL in the
    middle. After the restart every acknowledged XADD is there with its fields, every entry
    delivered to a consumer and not acknowledged by an XACK reply is pending for that consumer,
    no entry whose XACK was answered is pending, and the group read at least as far as any
    consumer was served."""
    server = Cairnd(["--appendfsync", "everysec"])
    try:
        admin = server.client()
        admin.xgroup_create("s", "g", id="$", mkstream=True)
        added = {}      # id -> fields, for each XADD whose reply arrived
        delivered = {}  # id -> consumer, for each entry in an XREADGROUP reply that arrived
        acked = set()   # ids whose XACK reply arrived
        unsure = set()  # ids whose XACK was sent but whose reply did not arrive
        lock = threading.Lock()
        stop = threading.Event()

        def producer(n):
            c = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
            i = 0
            try:
                while not stop.is_set():
                    fields = {"p": str(n), "i": str(i)}
                    entry_id = c.xadd("s", fields)
                    with lock:
                        added[entry_id] = fields
                    i += 1
            except (redis.ConnectionError, redis.TimeoutError):
                pass

        def consumer(name):
            c = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
            try:
                while not stop.is_set():
                    reply = c.xreadgroup("g", name, {"s": ">"}, count=20, block=100)
                    ids = [entry_id for _, entries in reply for entry_id, _ in entries]
                    with lock:
                        for entry_id in ids:
                            assert entry_id not in delivered, "an entry was delivered twice by '>'"
                            delivered[entry_id] = name
                    to_ack = ids[::2]
                    if to_ack:
                        with lock:
                            unsure.update(to_ack)
                        c.xack("s", "g", *to_ack)
                        with lock:
                            acked.update(to_ack)
                            unsure.difference_update(to_ack)
            except (redis.ConnectionError, redis.TimeoutError):
                pass

        threads = [threading.Thread(target=producer, args=(n,)) for n in range(4)]
        threads += [threading.Thread(target=consumer, args=(f"c{n}",)) for n in range(3)]
        for t in threads:
            t.start()
        time.sleep(2.5)
        server.process.send_signal(signal_kill())
        server.process.wait()
        stop.set()
        for t in threads:
            t.join(10)
        assert len(added) > 100 and len(delivered) > 50 and len(acked) > 20, (len(added), len(delivered), len(acked))

        server.start()
        c = server.client()
        entries = dict(c.xrange("s"))
        ids = list(entries)
        assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split(b"-")))) and len(set(ids)) == len(ids)
        assert c.xlen("s") == len(ids)
        lost = [i for i, fields in added.items() if entries.get(i) != {k.encode(): v.encode() for k, v in fields.items()}]
        assert lost == [], f"{len(lost)} acknowledged XADDs lost or changed"
        pending = c.xpending_range("s", "g", "-", "+", 1_000_000)
        pending_ids = [p["message_id"] for p in pending]
        assert len(set(pending_ids)) == len(pending_ids)
        owner = {p["message_id"]: p["consumer"].decode() for p in pending}
        missing = [i for i, name in delivered.items() if i not in acked and i not in unsure and owner.get(i) != name]
        assert missing == [], f"{len(missing)} delivered, unacknowledged entries not pending for their consumer"
        still = [i for i in acked if i in owner]
        assert still == [], f"{len(still)} entries whose XACK was answered are pending again"
        assert all(i in entries for i in pending_ids)
        group = c.xinfo_groups("s")[0]
        last = group["last-delivered-id"]
        key = lambda i: tuple(map(int, i.split(b"-")))
        assert all(key(i) <= key(last) for i in delivered)
        assert group["pending"] == len(pending_ids)
        print(f"\n{len(added)} XADDs acknowledged, {len(delivered)} entries delivered, {len(acked)} acknowledged by XACK, "
              f"{len(pending_ids)} pending after kill -9: all as acknowledged")
    finally:
        server.cleanup()


def test_streams_and_groups_replicate_and_wake_readers_on_the_replica():
    from test_replication import caught_up, digest, follow, wait_until
    primary, replica = Cairnd(), Cairnd()
    try:
        follow(replica, primary)
        p, r = primary.client(), replica.client()
        wait_until(lambda: caught_up(primary, replica))
        result = {}

        def reader():
            result["got"] = replica.client().xread({"events": "$"}, block=10000)

        t = threading.Thread(target=reader)
        t.start()
        time.sleep(0.3)
        p.xadd("events", {"kind": "first"}, id="1-0")
        t.join(10)
        assert result.get("got") == [[b"events", [(b"1-0", {b"kind": b"first"})]]]
        for i in range(2, 50):
            p.xadd("events", {"i": str(i)}, id=f"{i}-0")
        p.xgroup_create("events", "g", id="0")
        p.xreadgroup("g", "c", {"events": ">"}, count=10)
        p.xack("events", "g", "1-0")
        p.xtrim("events", maxlen=40)
        wait_until(lambda: caught_up(primary, replica))
        assert r.xrange("events") == p.xrange("events")
        pel = lambda c: [(e["message_id"], e["consumer"], e["times_delivered"]) for e in c.xpending_range("events", "g", "-", "+", 100)]
        assert pel(r) == pel(p) and len(pel(p)) == 9
        assert r.xinfo_stream("events")["entries-added"] == 49
        assert digest(replica) == digest(primary)
        with pytest.raises(redis.ReadOnlyError):
            r.xadd("events", {"no": "1"})
        with pytest.raises(redis.ReadOnlyError):
            r.xreadgroup("g", "c", {"events": ">"})
    finally:
        primary.cleanup()
        replica.cleanup()


def test_a_demoted_primary_ends_blocked_writes_and_keeps_blocked_reads():
    """REPLICAOF on a primary with clients blocked: BLPOP and XREADGROUP (writes) end at once
    with Redis's UNBLOCKED error; XREAD BLOCK (a read) waits on and is served by the new
    primary's XADD once replicated."""
    from test_replication import follow
    old, new = Cairnd(), Cairnd()
    try:
        c = old.client()
        c.xgroup_create("s", "g", id="$", mkstream=True)
        results = {}

        def blocked(name, call):
            try:
                results[name] = call(redis.Redis(host="127.0.0.1", port=old.port, socket_timeout=30))
            except redis.ResponseError as e:
                results[name] = e

        threads = [threading.Thread(target=blocked, args=args) for args in [
            ("blpop", lambda r: r.blpop("list", 20)),
            ("xreadgroup", lambda r: r.xreadgroup("g", "c", {"s": ">"}, block=20000)),
            ("xread", lambda r: r.xread({"s": "$"}, block=20000)),
        ]]
        for t in threads:
            t.start()
        deadline = time.time() + 10
        while c.info("clients")["blocked_clients"] < 3 and time.time() < deadline:
            time.sleep(0.05)
        assert c.info("clients")["blocked_clients"] == 3
        new.client().xgroup_create("s", "g", id="$", mkstream=True)
        follow(old, new)
        threads[0].join(5)
        threads[1].join(5)
        for name in ("blpop", "xreadgroup"):
            assert isinstance(results.get(name), redis.ResponseError), results
            assert "UNBLOCKED force unblock from blocking operation, instance state changed" in str(results[name])
        assert threads[2].is_alive()
        time.sleep(1)  # the full sync from the new primary
        new.client().xadd("s", {"from": "new"}, id="5-0")
        threads[2].join(10)
        assert results["xread"] == [[b"s", [(b"5-0", {b"from": b"new"})]]]
    finally:
        old.cleanup()
        new.cleanup()
