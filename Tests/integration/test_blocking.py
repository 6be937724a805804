"""Blocking list pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) against the real cairnd:
woken by pushes from other clients and by EXEC, served in arrival order, exact timeouts,
CLIENT UNBLOCK, disconnects while blocked, no stall for other clients, and a job queue run
with several workers and exact totals."""
import socket
import threading
import time

import pytest
import redis

from conftest import resp_command


def blocked_clients(c):
    return c.info("clients")["blocked_clients"]


def wait_blocked(c, n, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if blocked_clients(c) == n:
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {n} blocked clients, have {blocked_clients(c)}")


class Background:
    """Runs one command on its own connection in a thread; `result()` waits for its reply."""

    def __init__(self, server, *args, protocol=2):
        self.client = server.client(protocol=protocol)
        self.id = self.client.client_id()  # the pool's one connection, which then blocks
        self.value = None
        self.error = None
        self.done_at = None
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self.run, args=args)
        self.thread.start()

    def run(self, *args):
        try:
            self.value = self.client.execute_command(*args)
        except Exception as e:  # noqa: BLE001 - kept for the test to inspect
            self.error = e
        self.done_at = time.monotonic()

    def result(self, timeout=10):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the blocked command never returned"
        self.client.close()
        if self.error:
            raise self.error
        # redis-py gives BLPOP's pair as a tuple.
        return list(self.value) if isinstance(self.value, tuple) else self.value

    @property
    def elapsed(self):
        return self.done_at - self.started


@pytest.fixture
def c(server):
    client = server.client()
    client.flushall()
    yield client
    assert blocked_clients(client) == 0, "a test left a blocked client"
    client.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_blpop_woken_by_a_push_from_another_client(server, c, protocol):
    b = Background(server, "BLPOP", "k1", "k2", 0, protocol=protocol)
    wait_blocked(c, 1)
    assert any("flags=b" in line and "cmd=blpop" in line for line in c.execute_command("CLIENT", "LIST").decode().splitlines())
    c.rpush("k2", "v")
    assert b.result() == [b"k2", b"v"]
    assert c.exists("k2") == 0, "the element was popped"
    b = Background(server, "BRPOP", "k1", 5, protocol=protocol)
    wait_blocked(c, 1)
    c.rpush("k1", "a", "b")
    assert b.result() == [b"k1", b"b"]
    assert c.lrange("k1", 0, -1) == [b"a"]


def test_an_element_present_is_served_at_once(server, c):
    c.rpush("k", "x")
    t = time.monotonic()
    assert c.blpop(["empty", "k"], 5) == (b"k", b"x")
    assert c.brpoplpush("missing", "d", 0.01) is None
    assert time.monotonic() - t < 1


def test_woken_by_exec_lmove_and_in_another_family_only_there(server, c):
    b = Background(server, "BLPOP", "k", 0)
    wait_blocked(c, 1)
    p = c.pipeline(transaction=True)
    p.set("other", "x")
    p.rpush("k", "from-exec")
    p.execute()
    assert b.result() == [b"k", b"from-exec"]

    c.rpush("src", "moved")
    b = Background(server, "BRPOP", "k", 0)
    wait_blocked(c, 1)
    assert c.lmove("src", "k", "LEFT", "LEFT") == b"moved"
    assert b.result() == [b"k", b"moved"]

    c.execute_command("CF.CREATE", "blockfam")
    try:
        b = Background(server, "BLPOP", "k", 0)
        wait_blocked(c, 1)
        other = server.client()
        other.execute_command("CF.USE", "blockfam")
        other.rpush("k", "elsewhere")  # same key name, another family: no wake-up
        time.sleep(0.3)
        assert blocked_clients(c) == 1
        c.rpush("k", "here")
        assert b.result() == [b"k", b"here"]
        assert other.lrange("k", 0, -1) == [b"elsewhere"]
        other.close()
    finally:
        c.execute_command("CF.DROP", "blockfam")


def test_blocked_clients_are_served_in_arrival_order(server, c):
    waiters = []
    for i in range(5):
        waiters.append(Background(server, "BLPOP", "q", 0))
        wait_blocked(c, i + 1)
    c.rpush("q", "a", "b", "c")  # one push of three: the first three, in order
    assert [w.result() for w in waiters[:3]] == [[b"q", b"a"], [b"q", b"b"], [b"q", b"c"]]
    wait_blocked(c, 2)
    c.rpush("q", "d")
    c.rpush("q", "e")
    assert [w.result() for w in waiters[3:]] == [[b"q", b"d"], [b"q", b"e"]]
    assert c.exists("q") == 0


def test_timeouts_are_exact(server, c):
    for args, empty in [(("BLPOP", "k", "0.5"), None), (("BLMOVE", "k", "d", "LEFT", "RIGHT", "0.5"), None),
                        (("BLMPOP", "0.5", 2, "k", "j", "LEFT"), None), (("BRPOPLPUSH", "k", "d", 0.5), None)]:
        for protocol in (2, 3):
            b = Background(server, *args, protocol=protocol)
            assert b.result() is empty
            assert 0.45 <= b.elapsed < 1.5, (args, b.elapsed)
    b = Background(server, "BRPOP", "k", "1.2")
    assert b.result() is None and 1.15 <= b.elapsed < 2.2


def test_timeout_errors(c):
    for args, text in [(("BLPOP", "k", -1), "timeout is negative"),
                       (("BLPOP", "k", "abc"), "timeout is not a float or out of range"),
                       (("BLPOP", "k", "nan"), "timeout is not a float or out of range"),
                       (("BLPOP", "k", ""), "timeout is not a float or out of range"),
                       (("BLPOP", "k", "inf"), "timeout is negative"),
                       (("BRPOP", "k", "1e100"), "timeout is negative"),
                       (("BLMOVE", "a", "b", "LEFT", "RIGHT", -1), "timeout is negative"),
                       (("BLMOVE", "a", "b", "LEFT", "UP", 0), "syntax error"),
                       (("BRPOPLPUSH", "a", "b", -1), "timeout is negative"),
                       (("BLMPOP", -1, 1, "a", "LEFT"), "timeout is negative"),
                       (("BLMPOP", 0, 0, "a", "LEFT"), "numkeys should be greater than 0"),
                       (("BLMPOP", 0, 5, "a", "LEFT"), "syntax error"),
                       (("BLMPOP", 0, 1, "a", "LEFT", "COUNT", 0), "count should be greater than 0"),
                       (("BRPOP", "k"), "wrong number of arguments for 'brpop' command")]:
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command(*args)
        assert str(e.value) == text, args


def test_blmove_brpoplpush_blmpop_woken(server, c):
    b = Background(server, "BLMOVE", "src", "dst", "RIGHT", "LEFT", 0)
    wait_blocked(c, 1)
    c.rpush("src", "a", "b")
    assert b.result() == b"b"
    assert c.lrange("src", 0, -1) == [b"a"] and c.lrange("dst", 0, -1) == [b"b"]
    c.delete("src")
    b = Background(server, "BRPOPLPUSH", "src", "dst", 0)
    wait_blocked(c, 1)
    c.lpush("src", "c")
    assert b.result() == b"c"
    assert c.lrange("dst", 0, -1) == [b"c", b"b"]
    b = Background(server, "BLMPOP", 0, 2, "x", "y", "RIGHT", "COUNT", 2)
    wait_blocked(c, 1)
    c.rpush("y", "1", "2", "3")
    assert b.result() == [b"y", [b"3", b"2"]]
    # A waiter on a key that becomes a string keeps waiting, as in Redis.
    b = Background(server, "BLPOP", "w", 0)
    wait_blocked(c, 1)
    p = c.pipeline(transaction=True)
    p.set("w", "string")
    p.execute()
    time.sleep(0.2)
    assert blocked_clients(c) == 1
    c.delete("w")
    c.rpush("w", "ok")
    assert b.result() == [b"w", b"ok"]


def test_client_unblock(server, c):
    b = Background(server, "BLPOP", "k", 0)
    wait_blocked(c, 1)
    cid = b.id
    assert c.execute_command("CLIENT", "UNBLOCK", cid) == 1
    assert b.result() is None
    b = Background(server, "BLMOVE", "k", "d", "LEFT", "LEFT", 0)
    wait_blocked(c, 1)
    cid = b.id
    assert c.execute_command("CLIENT", "UNBLOCK", cid, "ERROR") == 1
    with pytest.raises(redis.ResponseError) as e:
        b.result()
    assert str(e.value) == "UNBLOCKED client unblocked via CLIENT UNBLOCK"
    assert c.execute_command("CLIENT", "UNBLOCK", c.client_id()) == 0
    assert c.execute_command("CLIENT", "UNBLOCK", 999999, "TIMEOUT") == 0
    for args, text in [((1, "foo"), "CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
                       (("x",), "value is not an integer or out of range")]:
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("CLIENT", "UNBLOCK", *args)
        assert str(e.value) == text


def test_disconnect_while_blocked_is_forgotten(server, c):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(resp_command("BLPOP", "k", 0))
    wait_blocked(c, 1)
    s.close()
    wait_blocked(c, 0)
    c.rpush("k", "kept")
    time.sleep(0.1)
    assert c.lrange("k", 0, -1) == [b"kept"], "a gone client takes nothing"


def test_requests_after_a_blocking_pop_wait_for_its_reply(server, c):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.settimeout(5)
    s.sendall(resp_command("BLPOP", "k", 0) + resp_command("ECHO", "after"))
    wait_blocked(c, 1)
    time.sleep(0.1)
    s.setblocking(False)
    with pytest.raises(BlockingIOError):
        s.recv(100)
    s.setblocking(True)
    c.rpush("k", "v")
    data = b""
    while not data.endswith(b"$5\r\nafter\r\n"):
        data += s.recv(1000)
    assert data == b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n$5\r\nafter\r\n"
    s.close()


def test_many_blocked_clients_do_not_stall_others(server, c):
    socks = []
    for i in range(200):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(resp_command("BLPOP", f"wait:{i}", 0))
        socks.append(s)
    wait_blocked(c, 200)
    t = time.monotonic()
    for i in range(200):
        c.set(f"s{i}", i)
        assert c.get(f"s{i}") == str(i).encode()
    assert time.monotonic() - t < 5
    assert c.info("clients")["connected_clients"] >= 201
    for i in range(0, 200, 2):
        c.rpush(f"wait:{i}", "x")
    wait_blocked(c, 100)
    for s in socks:
        s.close()
    wait_blocked(c, 0)


@pytest.mark.parametrize("command", ["BRPOP", "BLMOVE"])
def test_job_queue_with_several_workers_exact_totals(server, c, command):
    jobs, workers, producers = 1200, 6, 3
    done = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker():
        cl = server.client()
        mine = []
        while not stop.is_set():
            if command == "BRPOP":
                got = cl.brpop(["jobs"], 0.2)
                if got:
                    mine.append(got[1])
            else:
                got = cl.blmove("jobs", "processing", 0.2, "RIGHT", "LEFT")
                if got:
                    assert cl.lrem("processing", 1, got) == 1
                    mine.append(got)
        with lock:
            done.extend(mine)
        cl.close()

    def producer(k):
        cl = server.client()
        for i in range(jobs // producers):
            cl.lpush("jobs", f"{k}:{i}")
        cl.close()

    ws = [threading.Thread(target=worker) for _ in range(workers)]
    for w in ws:
        w.start()
    ps = [threading.Thread(target=producer, args=(k,)) for k in range(producers)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    deadline = time.time() + 30
    while time.time() < deadline and (c.exists("jobs") or c.exists("processing")):
        time.sleep(0.05)
    time.sleep(0.5)  # the last replies reach their workers
    stop.set()
    for w in ws:
        w.join()
    assert len(done) == jobs and len(set(done)) == jobs
    assert c.exists("jobs") == 0 and c.exists("processing") == 0


def test_blocking_commands_do_not_block_in_multi(server, c):
    p = c.pipeline(transaction=True)
    p.blpop(["k"], 0)
    p.brpop(["k"], 0)
    p.blmove("k", "d", 0, "LEFT", "LEFT")
    p.execute_command("BLMPOP", 0, 1, "k", "LEFT")
    p.rpush("k", "x")
    p.blpop(["k"], 0)
    t = time.monotonic()
    assert p.execute() == [None, None, None, None, 1, (b"k", b"x")]
    assert time.monotonic() - t < 1
