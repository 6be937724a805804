"""A big write (a 200,000-key MSET) commits in pieces behind a journal entry, so other writers
go on meanwhile; it stays all or nothing for readers and across kill -9."""
import signal
import socket
import threading
import time

from conftest import resp_command

N = 200_000
KEYS = [f"big:{i:07d}" for i in range(N)]


def mset_command(value):
    return resp_command("MSET", *[x for k in KEYS for x in (k, value)])


def values(client):
    seen = set()
    for start in range(0, N, 20_000):
        seen.update(client.mget(KEYS[start:start + 20_000]))
    return seen


def load(client, value):
    for start in range(0, N, 10_000):
        client.mset({k: value for k in KEYS[start:start + 10_000]})


def test_readers_never_see_a_big_mset_half_done(fresh_server):
    srv = fresh_server()
    c = srv.client()
    load(c, "v0")
    pieces_before = c.info("persistence")["piecewise_writes"]
    mixed, reads = [], [0]
    stop = threading.Event()

    def reader():
        r = srv.client()
        sample = [KEYS[0], KEYS[N // 3], KEYS[2 * N // 3], KEYS[-1]]
        while not stop.is_set():
            got = r.mget(sample)
            if len(set(got)) != 1:
                mixed.append(got)
            # A GET of the last key, alone, must never be newer than the first one read
            # just before it: the write lands whole.
            first, last = r.get(KEYS[0]), r.get(KEYS[-1])
            if int(first[1:]) > int(last[1:]):
                mixed.append((first, last))
            reads[0] += 1

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    big = socket.create_connection(("127.0.0.1", srv.port))
    replies = big.makefile("rb")
    for n in range(1, 4):
        big.sendall(mset_command(f"v{n}"))
        assert replies.readline() == b"+OK\r\n"
    stop.set()
    for t in threads:
        t.join()
    assert not mixed, f"readers saw a big MSET half done: {mixed[:3]}"
    assert reads[0] > 10
    assert values(c) == {b"v3"}
    assert c.info("persistence")["piecewise_writes"] == pieces_before + 3, "each MSET went in pieces"


def test_kill_9_in_the_middle_of_a_big_mset_leaves_all_or_nothing(fresh_server):
    srv = fresh_server()
    c = srv.client()
    load(c, "v0")
    # How long one takes here, so the kills land across the whole of it.
    big = socket.create_connection(("127.0.0.1", srv.port))
    started = time.monotonic()
    big.sendall(mset_command("v1"))
    assert big.makefile("rb").readline() == b"+OK\r\n"
    full = time.monotonic() - started
    big.close()
    current, completed = b"v1", 0
    fractions = [0.45 + 0.05 * i for i in range(12)]
    for n, fraction in enumerate(fractions, start=2):
        value = f"v{n}".encode()
        big = socket.create_connection(("127.0.0.1", srv.port))
        big.sendall(mset_command(value.decode()))
        time.sleep(full * fraction)
        srv.process.send_signal(signal.SIGKILL)
        srv.process.wait()
        big.close()
        log_before = open(f"{srv.directory}/cairnd.log", "rb").read()
        srv.start()
        c = srv.client()
        seen = values(c)
        assert seen in ({current}, {value}), f"after kill -9 at {fraction:.0%} of a big MSET: values {sorted(seen)[:5]}"
        if b"completed a big write" in open(f"{srv.directory}/cairnd.log", "rb").read()[len(log_before):]:
            completed += 1
            assert seen == {value}
        current = seen.pop()
    print(f"\nMSET of {N:,} keys took {full * 1000:.0f} ms; {completed} of {len(fractions)} kills fell between its pieces and were completed at restart")
    assert c.dbsize() == N


def test_kill_9_in_the_middle_of_a_big_store_leaves_the_old_set_or_the_whole_new_one(fresh_server):
    """A *STORE result goes ahead in pieces before its metadata (NewCollection): a kill between
    them leaves the destination as it was, and the next start drops the members written."""
    srv = fresh_server()
    c = srv.client()
    m = 100_000
    for start in range(0, m, 10_000):
        c.sadd("a", *[f"a{i:07d}" for i in range(start, start + 10_000)])
        c.sadd("b", *[f"b{i:07d}" for i in range(start, start + 10_000)])
    c.sadd("dest", "old")
    runs = []
    for _ in range(2):
        started = time.monotonic()
        assert c.sunionstore("tmp", "a", "b") == 2 * m
        runs.append(time.monotonic() - started)
    c.delete("tmp")
    full = min(runs)
    whole, dropped = 0, 0
    for fraction in [0.15 + 0.1 * i for i in range(8)]:
        big = socket.create_connection(("127.0.0.1", srv.port))
        big.sendall(resp_command("SUNIONSTORE", "dest", "a", "b"))
        time.sleep(full * fraction)
        srv.process.send_signal(signal.SIGKILL)
        srv.process.wait()
        big.close()
        log_before = open(f"{srv.directory}/cairnd.log", "rb").read()
        srv.start()
        c = srv.client()
        if b"new collection(s) whose writing was interrupted" in open(f"{srv.directory}/cairnd.log", "rb").read()[len(log_before):]:
            dropped += 1
        card = c.scard("dest")
        if card == 1:
            assert c.smembers("dest") == {b"old"}, f"kill -9 at {fraction:.0%}"
        else:
            assert card == 2 * m, f"kill -9 at {fraction:.0%} of a big SUNIONSTORE: {card} members"
            assert c.sismember("dest", "a0000000") and c.sismember("dest", f"b{m - 1:07d}")
            whole += 1
            c.delete("dest")
            c.sadd("dest", "old")
    print(f"\nSUNIONSTORE of {2 * m:,} members took {full * 1000:.0f} ms; {dropped} of 8 kills fell between its pieces, {whole} after it")
    assert dropped >= 1, "no kill fell in the middle of the write"
    # Compaction keeps every member of what is live and drops the interrupted writes' members.
    assert c.execute_command("COMPACT") in (b"OK", "OK")
    assert c.scard("a") == m and c.scard("b") == m
    assert c.sunionstore("dest", "a", "b") == 2 * m and c.sintercard(2, ["dest", "a"]) == m
