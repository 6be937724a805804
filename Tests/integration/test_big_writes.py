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
