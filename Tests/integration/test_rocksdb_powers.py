"""Cairn's own commands: column families, MERGE, snapshots, iterators, ranges, and EXEC atomicity."""
import threading
import time

import pytest
import redis


def fresh(server, protocol=2):
    c = server.client(protocol=protocol)
    c.execute_command("CF.USE", "default")
    c.flushall()
    for name in c.execute_command("CF.LIST"):
        if name != b"default":
            c.execute_command("CF.DROP", name)
    return c


def test_families_are_separate_persist_and_drop(fresh_server):
    s = fresh_server()
    c = s.client()
    assert c.execute_command("CF.CREATE", "users", "COMPRESSION", "zstd", "BLOOM", "12") == b"OK"
    with pytest.raises(redis.ResponseError, match="already exists"):
        c.execute_command("CF.CREATE", "users")
    c.set("k", "default-value")
    c.execute_command("CF.USE", "users")
    assert c.get("k") is None
    c.set("k", "users-value")
    assert c.dbsize() == 1
    info = c.execute_command("CF.INFO", "users")
    assert b"estimate_keys" in info
    s.restart()
    c = s.client()
    assert sorted(c.execute_command("CF.LIST")) == [b"default", b"users"]
    c.execute_command("CF.USE", "users")
    assert c.get("k") == b"users-value"
    other = s.client()
    other.execute_command("CF.DROP", "users")
    with pytest.raises(redis.ResponseError, match="column family"):
        c.get("k")
    other.execute_command("CF.CREATE", "users")
    other.execute_command("CF.USE", "users")
    assert other.get("k") is None, "a dropped family's keys are gone and its name reusable"
    with pytest.raises(redis.ResponseError, match="no such column family"):
        other.execute_command("CF.USE", "nope")
    with pytest.raises(redis.ResponseError, match="cannot be dropped"):
        other.execute_command("CF.DROP", "default")


def test_merge_from_fifty_clients_is_exact(server):
    c = fresh(server)
    c.execute_command("CF.CREATE", "counters", "MERGE", "add")
    with pytest.raises(redis.ResponseError, match="no merge operator"):
        c.execute_command("MERGE", "x", "1")
    errors = []

    def work():
        try:
            w = server.client()
            w.execute_command("CF.USE", "counters")
            p = w.pipeline(transaction=False)
            for _ in range(1000):
                p.execute_command("MERGE", "total", "1")
            p.execute()
            w.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    c.execute_command("CF.USE", "counters")
    assert c.get("total") == b"50000"
    assert c.incrby("total", 5) == 50005
    with pytest.raises(redis.ResponseError, match="not an integer"):
        c.execute_command("MERGE", "total", "abc")
    c.execute_command("CF.CREATE", "logs", "MERGE", "append")
    c.execute_command("CF.USE", "logs")
    for part in ["a", "b", "c"]:
        c.execute_command("MERGE", "line", part)
    assert c.get("line") == b"abc"


def test_snapshot_isolation_across_connections(server):
    reader = fresh(server)
    writer = server.client()
    writer.mset({"a": "1", "b": "1"})
    sid = reader.execute_command("SNAPSHOT.CREATE")
    writer.set("a", "2")
    writer.delete("b")
    writer.set("c", "new")
    reader.execute_command("SNAPSHOT.USE", sid)
    assert reader.mget("a", "b", "c") == [b"1", b"1", None]
    assert sorted(reader.keys("*")) == [b"a", b"b"]
    reader.execute_command("SNAPSHOT.USE", "NONE")
    assert reader.mget("a", "b", "c") == [b"2", None, b"new"]
    assert [row[0] for row in reader.execute_command("SNAPSHOT.LIST")] == [sid]
    reader.execute_command("SNAPSHOT.RELEASE", sid)
    with pytest.raises(redis.ResponseError, match="no such snapshot"):
        reader.execute_command("SNAPSHOT.USE", sid)


def test_range_pages_every_key_once_both_directions(server):
    c = fresh(server)
    keys = [f"key:{i:06d}".encode() for i in range(100_000)]
    with c.pipeline(transaction=False) as p:
        for k in keys:
            p.set(k, b"v" + k)
        p.execute()
    seen = []
    start = "-"
    while True:
        page = c.execute_command("RANGE", start, "+", "LIMIT", 1000)
        if not page:
            break
        pairs = list(zip(page[0::2], page[1::2]))
        assert all(v == b"v" + k for k, v in pairs)
        seen += [k for k, _ in pairs]
        start = b"(" + pairs[-1][0]
    assert seen == keys
    back = []
    end = "+"
    while True:
        page = c.execute_command("RANGE", "-", end, "REV", "LIMIT", 1000, "KEYSONLY")
        if not page:
            break
        back += page
        end = b"(" + page[-1]
    assert back == keys[::-1]
    assert c.execute_command("RANGE", "[key:000010", "(key:000013", "KEYSONLY") == keys[10:13]
    with pytest.raises(redis.ResponseError, match="not valid string range item"):
        c.execute_command("RANGE", "a", "+")
    assert c.execute_command("DELRANGE", "[key:000000", "(key:050000") == b"OK"
    assert c.dbsize() == 50_000
    assert c.execute_command("RANGE", "-", "+", "LIMIT", 1, "KEYSONLY") == [b"key:050000"]


def test_iterator_on_snapshot_ignores_concurrent_changes(server):
    c = fresh(server)
    with c.pipeline(transaction=False) as p:
        for i in range(1000):
            p.set(f"it:{i:04d}", i)
        p.execute()
    sid = c.execute_command("SNAPSHOT.CREATE")
    iid = c.execute_command("ITER.OPEN", "SNAPSHOT", sid)
    other = server.client()
    stop = threading.Event()

    def churn():
        n = 0
        while not stop.is_set():
            other.delete(f"it:{n % 1000:04d}")
            other.set(f"it:{n % 1000:04d}x", "new")
            n += 1

    t = threading.Thread(target=churn)
    t.start()
    got = []
    try:
        while True:
            page = c.execute_command("ITER.NEXT", iid, 97)
            if not page:
                break
            got += page[0::2]
    finally:
        stop.set()
        t.join()
    assert got == [f"it:{i:04d}".encode() for i in range(1000)]
    c.mset({"z:1": 1, "z:2": 2, "z:3": 3})
    rev = c.execute_command("ITER.OPEN", "REV", "START", "z:2")
    assert c.execute_command("ITER.PREV", rev, 2) == [b"z:2", b"2", b"z:1", b"1"]
    c.execute_command("ITER.SEEK", rev, "z:3")
    assert c.execute_command("ITER.NEXT", rev, 5) == [b"z:3", b"3"]
    assert c.execute_command("ITER.NEXT", rev, 5) == []
    assert c.execute_command("ITER.CLOSE", iid) == b"OK"
    with pytest.raises(redis.ResponseError, match="no such iterator"):
        c.execute_command("ITER.NEXT", iid)


def test_exec_is_atomic_for_a_concurrent_reader(server):
    c = fresh(server)
    c.mset({"x": 0, "y": 0})
    stop = threading.Event()
    torn = []

    def read():
        r = server.client()
        while not stop.is_set():
            x, y = r.mget("x", "y")
            if x != y:
                torn.append((x, y))

    t = threading.Thread(target=read)
    t.start()
    try:
        for i in range(1, 500):
            with c.pipeline(transaction=True) as p:
                p.set("x", i).set("y", i)
                p.execute()
    finally:
        stop.set()
        t.join()
    assert not torn, torn[:5]
    assert c.mget("x", "y") == [b"499", b"499"]


def test_caps_and_cleanup_on_disconnect(fresh_server):
    s = fresh_server("--set", "max-snapshots-per-client=3", "--set", "max-iterators-per-client=2")
    admin = s.client()
    c = s.client()
    for _ in range(3):
        c.execute_command("SNAPSHOT.CREATE")
    with pytest.raises(redis.ResponseError, match="max-snapshots-per-client 3"):
        c.execute_command("SNAPSHOT.CREATE")
    c.execute_command("ITER.OPEN")
    c.execute_command("ITER.OPEN")
    with pytest.raises(redis.ResponseError, match="max-iterators-per-client 2"):
        c.execute_command("ITER.OPEN")
    info = admin.info("rocksdb")
    assert info["open_snapshots"] == 3 and info["open_cursors"] == 2 and info["open_iterators"] == 2
    c.close()
    deadline = time.time() + 5
    while time.time() < deadline:
        info = admin.info("rocksdb")
        if info["open_snapshots"] == 0 and info["open_cursors"] == 0 and info["open_iterators"] == 0:
            break
        time.sleep(0.05)
    assert info["open_snapshots"] == 0 and info["open_cursors"] == 0 and info["open_iterators"] == 0


def test_snapshot_max_age_releases_forgotten_snapshots(fresh_server):
    s = fresh_server("--set", "snapshot-max-age=1")
    c = s.client()
    c.execute_command("SNAPSHOT.CREATE")
    assert s.client().info("rocksdb")["open_snapshots"] == 1
    time.sleep(3)
    assert c.execute_command("SNAPSHOT.LIST") == []
    assert s.client().info("rocksdb")["open_snapshots"] == 0
