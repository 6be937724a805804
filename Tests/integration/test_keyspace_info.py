"""INFO keyspace's db0 line against the real cairnd: live keys and keys with a TTL, counted in
the background (docs/commands.md, "INFO keyspace"), zero at once after FLUSHALL."""
import time

import pytest
import redis

# A count is renewed at most 0.5 s after the previous one, starts at the next 100 ms tick
# once INFO asks, and these databases take a few milliseconds to walk: seconds are plenty.
DEADLINE = 20


def keyspace(c):
    """(keys, expires, avg_ttl) of db0, zeros when INFO shows no db0 line."""
    db0 = c.info("keyspace").get("db0")
    if db0 is None:
        return 0, 0, 0
    return db0["keys"], db0["expires"], db0["avg_ttl"]


def wait_for_keyspace(c, keys, expires):
    """Polls INFO keyspace (each INFO also asks for a fresh count) until it shows keys/expires."""
    deadline = time.time() + DEADLINE
    seen = None
    while time.time() < deadline:
        seen = keyspace(c)
        if seen[:2] == (keys, expires):
            return seen
        time.sleep(0.05)
    pytest.fail(f"INFO keyspace shows {seen}, wanted keys={keys} expires={expires}")


def load_every_type(c):
    """Strings (a third with TTLs), hashes, lists, sets and sorted sets with many members each.
    Returns the number of keys with a TTL."""
    pipe = c.pipeline(transaction=False)
    for i in range(300):
        pipe.set(f"s:{i}", "v", ex=1000 if i % 3 == 0 else None)
    for i in range(20):
        pipe.hset(f"h:{i}", mapping={f"f{j}": j for j in range(50)})
        pipe.rpush(f"l:{i}", *range(30))
        pipe.sadd(f"set:{i}", *range(40))
        pipe.zadd(f"z:{i}", {f"m{j}": j for j in range(25)})
    for i in range(0, 20, 4):
        pipe.expire(f"h:{i}", 2000)
        pipe.expire(f"z:{i}", 3000)
    pipe.execute()
    return 100 + 5 + 5


def test_counts_keys_of_every_type_and_their_ttls(r):
    ttls = load_every_type(r)
    keys, expires, avg_ttl = wait_for_keyspace(r, r.dbsize(), ttls)
    assert keys == 300 + 4 * 20
    # 100 keys at 1000 s, 5 at 2000 s and 5 at 3000 s: Redis's avg_ttl is in milliseconds.
    assert 900_000 < avg_ttl <= (100 * 1000 + 5 * 2000 + 5 * 3000) * 1000 // 110
    info = r.info("rocksdb")
    assert info["keyspace_count_current"] == 1, "nothing was written since the count"
    assert abs(info["keyspace_count_time"] - time.time() * 1000) < 60_000
    assert "estimate_num_keys" in info, "RocksDB's estimate stays in the rocksdb section"


def test_flushall_and_flushdb_show_no_keys_at_once(r):
    load_every_type(r)
    wait_for_keyspace(r, r.dbsize(), 110)
    r.flushall()
    assert "db0" not in r.info("keyspace"), "FLUSHALL empties the count before it answers"
    assert r.info("rocksdb")["keyspace_count_time"] > 0
    r.set("a", 1)
    wait_for_keyspace(r, 1, 0)
    r.flushdb()
    assert "db0" not in r.info("keyspace")
    # The next count confirms the zero.
    deadline = time.time() + DEADLINE
    while r.info("rocksdb")["keyspace_count_current"] != 1 and time.time() < deadline:
        time.sleep(0.05)
    assert r.info("rocksdb")["keyspace_count_current"] == 1
    assert "db0" not in r.info("keyspace")


def test_overwrites_do_not_grow_the_count(r):
    for round in range(5):
        pipe = r.pipeline(transaction=False)
        for i in range(500):
            pipe.set(f"k{i}", round, ex=500 if i < 100 else None)
        pipe.execute()
        wait_for_keyspace(r, 500, 100)
    # RocksDB's estimate counts every overwrite still in a memtable or table file.
    assert r.info("rocksdb")["estimate_num_keys"] >= 500
    assert keyspace(r)[:2] == (500, 100)


def test_expired_keys_leave_the_count(r):
    r.mset({f"plain{i}": i for i in range(10)})
    started = time.time()
    pipe = r.pipeline(transaction=False)
    for i in range(40):
        pipe.set(f"short{i}", i, px=5000)
    pipe.execute()
    wait_for_keyspace(r, 50, 40)
    time.sleep(max(0, started + 6 - time.time()))
    keys, expires, _ = wait_for_keyspace(r, 10, 0)
    assert r.dbsize() == keys


def test_other_families_count_and_drop(server, r):
    r.set("here", 1)
    r.execute_command("CF.CREATE", "ksfam")
    try:
        other = server.client()
        other.execute_command("CF.USE", "ksfam")
        for i in range(7):
            other.set(f"f{i}", i, ex=100)
        other.close()
        # Every user family counts (DBSIZE counts the connection's own).
        wait_for_keyspace(r, 8, 7)
    finally:
        r.execute_command("CF.DROP", "ksfam")
    assert keyspace(r)[:2] == (1, 0), "CF.DROP takes its keys out of the count at once"


def test_a_restore_is_counted_afresh(server):
    c = server.client()
    c.flushall()
    c.mset({f"b{i}": i for i in range(120)})
    backup = c.execute_command("BACKUP.CREATE")
    c.flushall()
    c.set("after", 1)
    wait_for_keyspace(c, 1, 0)
    assert c.execute_command("BACKUP.RESTORE", backup) == b"OK"
    wait_for_keyspace(c, 120, 0)
    c.flushall()


def load_many(c, n, prefix="m"):
    """n plain keys, in MSETs of 10,000."""
    for start in range(0, n, 10_000):
        c.mset({f"{prefix}{i}": "v" for i in range(start, min(n, start + 10_000))})


def wait_for_a_pass_under_way(c):
    deadline = time.time() + DEADLINE
    while c.info("rocksdb")["keyspace_count_in_progress"] != 1:
        assert time.time() < deadline, "no count started"
        c.info("keyspace")
        time.sleep(0.01)


def test_a_count_under_way_stops_for_restore_and_shutdown(fresh_server):
    """A pass over 300,000 keys takes many 10 ms steps: a restore and a shutdown in the middle
    of one release its snapshot (the database closes) and do not wait for it to finish."""
    s = fresh_server()
    c = s.client()
    load_many(c, 300_000)
    backup = c.execute_command("BACKUP.CREATE")
    c.set("one more", 1)
    wait_for_a_pass_under_way(c)
    assert c.execute_command("BACKUP.RESTORE", backup) == b"OK"
    assert c.dbsize() == 300_000
    wait_for_keyspace(c, 300_000, 0)
    c.set("one more", 1)
    wait_for_a_pass_under_way(c)
    started = time.time()
    assert s.stop() == 0
    assert time.time() - started < 5
    log = open(f"{s.directory}/cairnd.log").read()
    assert "database closed; bye" in log and "snapshot" not in log, log[-2000:]
