"""WATCH fires only on a real change of a watched key; transactions refuse commands that cannot
join their write batch; COPY onto itself; per-client SCAN cursor quotas; per-user snapshot quotas;
reads right after FLUSHALL of many keys."""
import os
import sys
import time

import pytest
import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
import watch_contention  # noqa: E402


def watcher_commits(server, key, change):
    """WATCHes `key` on one client, runs `change(other_client)` on another, then runs a
    MULTI/SET/EXEC on the first; True when EXEC committed."""
    w = server.client()
    other = server.client()
    try:
        with w.pipeline(transaction=True) as p:
            p.watch(key)
            change(other)
            p.multi()
            p.set(key, "from-watcher")
            try:
                p.execute()
                return True
            except redis.WatchError:
                return False
    finally:
        w.close()
        other.close()


def raw(c, *args):
    """A command without redis-py's reply callbacks or pipelining."""
    return c.execute_command(*args)


def empty_exec(c):
    # Sent by hand: redis-py sends nothing for an empty pipeline.
    assert c.execute_command("MULTI") == b"OK"
    assert c.execute_command("EXEC") == []


def empty_exec_watching_the_key(c):
    assert c.execute_command("WATCH", "w") is True
    empty_exec(c)


def exec_aborted_by_its_own_watch(c):
    # Another client watches the key too, loses its own race on another key, and its EXEC
    # (which names the key) aborts without writing anything.
    assert c.execute_command("WATCH", "w", "race") is True
    kwargs = c.connection_pool.connection_kwargs
    third = redis.Redis(host=kwargs["host"], port=kwargs["port"])
    third.set("race", "won")
    third.close()
    c.execute_command("MULTI")
    c.execute_command("SET", "w", "never")
    assert c.execute_command("EXEC") is None


def read_only_exec(c):
    with c.pipeline(transaction=True) as p:
        p.get("w")
        p.exists("w")
        p.execute()


def aborted_exec(c):
    # A queue-time error: EXEC answers EXECABORT and nothing runs.
    c.execute_command("MULTI")
    c.execute_command("SET", "w", "changed")
    with pytest.raises(redis.ResponseError):
        c.execute_command("NOSUCHCOMMAND")
    with pytest.raises(redis.exceptions.ExecAbortError):
        c.execute_command("EXEC")


def exec_touching_other_key(c):
    with c.pipeline(transaction=True) as p:
        p.set("unrelated-key", "x")
        p.execute()


NO_OPS = {
    "empty EXEC": empty_exec,
    "read-only EXEC": read_only_exec,
    "aborted EXEC": aborted_exec,
    "empty EXEC of a client watching the key": empty_exec_watching_the_key,
    "EXEC aborted by its own WATCH": exec_aborted_by_its_own_watch,
    "SET NX on an existing key": lambda c: raw(c, "SET", "w", "other", "NX"),
    "SETNX on an existing key": lambda c: raw(c, "SETNX", "w", "other"),
    "GET": lambda c: raw(c, "GET", "w"),
    "EXISTS, TTL, STRLEN": lambda c: (raw(c, "EXISTS", "w"), raw(c, "TTL", "w"), raw(c, "STRLEN", "w")),
    "PERSIST without a TTL": lambda c: raw(c, "PERSIST", "w"),
    "EXPIRE XX without a TTL": lambda c: raw(c, "EXPIRE", "w", 100, "XX"),
    "RENAMENX onto an existing key": lambda c: (raw(c, "SET", "src", "1"), raw(c, "RENAMENX", "src", "w")),
    "COPY onto an existing key without REPLACE": lambda c: (raw(c, "SET", "src", "1"), raw(c, "COPY", "src", "w")),
    "EXEC writing another key": exec_touching_other_key,
    "SET of another key": lambda c: raw(c, "SET", "unrelated-key", "y"),
    "DEL of a missing key": lambda c: raw(c, "DEL", "missing-key"),
    "FLUSHDB of another, empty family": lambda c: (raw(c, "CF.USE", "empty"), raw(c, "FLUSHDB")),
}


@pytest.mark.parametrize("name", list(NO_OPS))
def test_no_op_does_not_abort_a_watcher(server, name):
    c = server.client()
    c.flushall()
    if b"empty" not in c.execute_command("CF.LIST"):
        c.execute_command("CF.CREATE", "empty")
    c.set("w", "original")
    assert watcher_commits(server, "w", NO_OPS[name]) is True, name
    assert c.get("w") == b"from-watcher"


def pipelined_set(c):
    # Plain SETs pipelined by one client take the grouped write path.
    with c.pipeline(transaction=False) as p:
        for i in range(20):
            p.set(f"other{i}", i)
        p.set("w", "changed")
        p.execute()


def pipelined_incr(c):
    with c.pipeline(transaction=False) as p:
        p.incr("w")
        p.incr("other")
        p.execute()


def exec_writing(c):
    with c.pipeline(transaction=True) as p:
        p.get("w")
        p.set("w", "changed-in-exec")
        p.execute()


def expires(c):
    c.set("w", "short-lived", px=50)


def merge(c):
    raw(c, "DEL", "w")
    if b"counters" not in c.execute_command("CF.LIST"):
        c.execute_command("CF.CREATE", "counters", "MERGE", "add")


REAL_CHANGES = {
    "SET": lambda c: raw(c, "SET", "w", "changed"),
    "SET with the same value": lambda c: raw(c, "SET", "w", "10"),
    "SET XX": lambda c: raw(c, "SET", "w", "changed", "XX"),
    "pipelined plain SET (grouped path)": pipelined_set,
    "MSET": lambda c: raw(c, "MSET", "a", "1", "w", "changed"),
    "INCR through the grouped path": pipelined_incr,
    "APPEND": lambda c: raw(c, "APPEND", "w", "x"),
    "DEL": lambda c: raw(c, "DEL", "w"),
    "GETDEL": lambda c: raw(c, "GETDEL", "w"),
    "EXPIRE": lambda c: raw(c, "EXPIRE", "w", 100),
    "EXPIRE in the past": lambda c: raw(c, "EXPIRE", "w", -1),
    "RENAME from the key": lambda c: raw(c, "RENAME", "w", "elsewhere"),
    "RENAME onto the key": lambda c: (raw(c, "SET", "src", "1"), raw(c, "RENAME", "src", "w")),
    "COPY REPLACE onto the key": lambda c: (raw(c, "SET", "src", "1"), raw(c, "COPY", "src", "w", "REPLACE")),
    "EXEC writing the key": exec_writing,
    "FLUSHDB": lambda c: raw(c, "FLUSHDB"),
    "FLUSHALL": lambda c: raw(c, "FLUSHALL"),
    "DELRANGE covering the key": lambda c: raw(c, "DELRANGE", "[v", "[x"),
    "DELRANGE unbounded": lambda c: raw(c, "DELRANGE", "-", "+"),
}


@pytest.mark.parametrize("name", list(REAL_CHANGES))
def test_real_change_aborts_a_watcher(server, name):
    c = server.client()
    c.flushall()
    c.set("w", "10")
    assert watcher_commits(server, "w", REAL_CHANGES[name]) is False, name


def test_merge_aborts_a_watcher(server):
    c = server.client()
    c.execute_command("CF.USE", "default")
    c.flushall()
    if b"counters" not in c.execute_command("CF.LIST"):
        c.execute_command("CF.CREATE", "counters", "MERGE", "add")
    w = server.client()
    other = server.client()
    for conn in (c, w, other):
        conn.execute_command("CF.USE", "counters")
    c.set("n", 1)
    w.execute_command("WATCH", "n")
    other.execute_command("MERGE", "n", 5)
    w.execute_command("MULTI")
    w.execute_command("SET", "n", 100)
    assert w.execute_command("EXEC") is None
    assert c.get("n") == b"6"


def test_expiry_of_the_key_aborts_a_watcher(server):
    c = server.client()
    c.flushall()
    # A second of life, so a stalled machine still watches it live.
    c.set("w", "short-lived", px=1000)
    w = server.client()
    w.execute_command("WATCH", "w")
    time.sleep(1.5)  # expires, with no command touching it
    w.execute_command("MULTI")
    w.execute_command("SET", "w", "x")
    assert w.execute_command("EXEC") is None

    # Deleted by lazy expiry (a read) between WATCH and EXEC.
    c.set("w", "short-lived", px=1000)
    w.execute_command("WATCH", "w")
    time.sleep(1.5)
    assert c.get("w") is None
    w.execute_command("MULTI")
    w.execute_command("SET", "w", "x")
    assert w.execute_command("EXEC") is None

    # A key that had already expired when watched: its deletion is no change.
    c.set("w", "short-lived", px=50)
    time.sleep(0.3)
    w.execute_command("WATCH", "w")
    w.execute_command("MULTI")
    w.execute_command("SET", "w", "x")
    assert w.execute_command("EXEC") == [b"OK"]


def test_contention_commits_are_exact_and_close_to_redis(server):
    process, port, workdir = watch_contention.start_redis_server()
    try:
        redis_commits, redis_aborts, redis_final = watch_contention.contend(port, clients=10, seconds=5)
    finally:
        watch_contention.stop_redis_server(process, workdir)
    cairn_commits, cairn_aborts, cairn_final = watch_contention.contend(server.port, clients=10, seconds=5)
    ratio = cairn_commits / max(1, redis_commits)
    print(f"\nWATCH contention, 10 clients x 5 s: cairnd {cairn_commits} commits ({cairn_aborts} aborts), "
          f"redis-server {redis_commits} commits ({redis_aborts} aborts), ratio {ratio:.2f}")
    assert redis_final == redis_commits
    assert cairn_final == cairn_commits, "every committed increment, and only those, is in the counter"
    assert cairn_commits >= 0.2 * redis_commits


# --- commands that cannot join a transaction's write batch ------------------------------------

@pytest.mark.parametrize("argv", [
    ("CF.DROP", "doomed"),
    ("CF.CREATE", "newborn"),
    ("BACKUP.CREATE",),
    ("BACKUP.RESTORE", "1"),
    ("CHECKPOINT", "/tmp/cairn-never-made"),
    ("COMPACT",),
])
def test_multi_refuses_commands_outside_the_write_batch(server, argv):
    c = server.client()
    c.flushall()
    families = c.execute_command("CF.LIST")
    if b"doomed" not in families:
        c.execute_command("CF.CREATE", "doomed")
    if b"newborn" in families:
        c.execute_command("CF.DROP", "newborn")
    c.execute_command("MULTI")
    c.execute_command("SET", "a", "1")
    with pytest.raises(redis.ResponseError, match="^Command not allowed inside a transaction$"):
        c.execute_command(*argv)
    with pytest.raises(redis.exceptions.ExecAbortError):
        c.execute_command("EXEC")
    assert c.get("a") is None
    families = c.execute_command("CF.LIST")
    assert b"doomed" in families and b"newborn" not in families
    # COMMAND INFO says so, as Redis does for its no-multi commands.
    info = c.execute_command("COMMAND", "INFO", argv[0])
    assert "no_multi" in info[argv[0].lower()]["flags"]


def test_flushdb_inside_exec_removes_keys_written_earlier_in_it(server):
    c = server.client()
    c.flushall()
    with c.pipeline(transaction=True) as p:
        p.set("a", "1")
        p.flushdb()
        p.get("a")
        p.set("b", "2")
        assert p.execute() == [True, True, None, True]
    assert c.get("a") is None and c.get("b") == b"2"


def test_copy_onto_itself_is_an_error(server):
    c = server.client()
    c.flushall()
    c.set("k", "v")
    for key in ("k", "missing"):
        with pytest.raises(redis.ResponseError, match="^source and destination objects are the same$"):
            c.execute_command("COPY", key, key)
        with pytest.raises(redis.ResponseError, match="^source and destination objects are the same$"):
            c.execute_command("COPY", key, key, "REPLACE")
    with c.pipeline(transaction=True) as p:
        p.execute_command("COPY", "k", "k")
        p.set("after", "1")
        replies = p.execute(raise_on_error=False)
    assert isinstance(replies[0], redis.ResponseError) and replies[1] is True
    assert c.get("k") == b"v"


# --- quotas ---------------------------------------------------------------------------------------

def test_one_client_cannot_evict_other_clients_scan_cursors(server):
    c = server.client()
    c.flushall()
    c.mset({f"key:{i:03}": i for i in range(50)})
    victim = server.client()
    cursor, first = victim.scan(0, count=10)
    assert cursor != 0 and len(first) == 10
    hog = server.client()
    with hog.pipeline(transaction=False) as p:
        for _ in range(40_000):
            p.execute_command("SCAN", 0, "COUNT", 1)
        replies = p.execute()
    assert all(int(r[0]) != 0 for r in replies)
    # The hog's own oldest cursors went first.
    with pytest.raises(redis.ResponseError, match="invalid cursor"):
        hog.execute_command("SCAN", int(replies[0][0]), "COUNT", 1)
    seen = list(first)
    while cursor != 0:
        cursor, page = victim.scan(cursor, count=10)
        seen += page
    assert sorted(seen) == sorted(f"key:{i:03}".encode() for i in range(50))


def test_one_user_cannot_take_every_snapshot(fresh_server, tmp_path):
    # Default caps: 16 per connection, 256 per user, 1024 on the server.
    conf = tmp_path / "cairn.conf"
    conf.write_text("user default on nopass +@all ~*\nuser reader on >readerpw +@read ~*\n")
    s = fresh_server(str(conf))
    readers = [s.client(username="reader", password="readerpw") for _ in range(70)]
    made = 0
    refusals = set()
    for r in readers:
        for _ in range(16):
            try:
                r.execute_command("SNAPSHOT.CREATE")
                made += 1
            except redis.ResponseError as e:
                refusals.add(str(e))
    assert made == 256
    assert refusals == {"too many snapshots held by user 'reader' across its connections "
                        "(max-snapshots-per-user 256); release some with SNAPSHOT.RELEASE"}
    # Everyone else still gets snapshots.
    other = s.client()
    assert isinstance(other.execute_command("SNAPSHOT.CREATE"), int)
    # A closed connection's snapshots go back to its user's quota.
    readers[0].close()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            readers[-1].execute_command("SNAPSHOT.CREATE")
            break
        except redis.ResponseError:
            time.sleep(0.05)
    else:
        pytest.fail("the reader's quota was not freed when its connection closed")
    for r in readers:
        r.close()


# --- reads right after FLUSHALL -------------------------------------------------------------------

def test_flushall_leaves_no_tombstoned_keys_for_reads_to_step_over(fresh_server):
    s = fresh_server()
    c = s.client()
    n = 200_000
    with c.pipeline(transaction=False) as p:
        for start in range(0, n, 1000):
            p.mset({f"key:{i:08}": "x" * 20 for i in range(start, start + 1000)})
        p.execute()
    assert c.dbsize() == n
    c.execute_command("COMPACT")  # into table files, where keys sit after any real load
    # and newer versions of half of them in the memtable
    with c.pipeline(transaction=False) as p:
        for start in range(0, n, 2000):
            p.mset({f"key:{i:08}": "y" * 20 for i in range(start, start + 1000)})
        p.execute()
    assert c.flushall() is True
    timings = {}
    for name, argv in [("SCAN 0", ("SCAN", 0)), ("RANGE - + LIMIT 1", ("RANGE", "-", "+", "LIMIT", 1)),
                       ("RANDOMKEY", ("RANDOMKEY",))]:
        started = time.monotonic()
        reply = c.execute_command(*argv)
        timings[name] = time.monotonic() - started
        assert reply in ([b"0", []], (0, []), [], None), (name, reply)
    print("\nafter FLUSHALL of 200,000 keys: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in timings.items()))
    assert c.dbsize() == 0
    # The flushed range was compacted before FLUSHALL answered: no table file or memtable
    # entry is left for those reads to step over.
    info = c.info("rocksdb")
    assert info["live_sst_files_size"] == 0, info
    assert info["estimate_num_keys"] == 0, info
    # Writes after it are kept, and FLUSHALL ASYNC answers at once and compacts in the background.
    c.mset({f"new:{i}": i for i in range(1000)})
    assert c.dbsize() == 1000
    assert c.execute_command("FLUSHALL", "ASYNC") is True
    assert c.dbsize() == 0
    deadline = time.time() + 30
    while c.info("rocksdb")["estimate_num_keys"] != 0 and time.time() < deadline:
        time.sleep(0.1)
    assert c.info("rocksdb")["estimate_num_keys"] == 0
