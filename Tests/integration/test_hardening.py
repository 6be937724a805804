"""Hostile input, slow and non-reading clients, many connections and size limits, against the
real cairnd, each while a bystander client's GET/SET loop must carry on without an error."""
import os
import resource
import socket
import threading
import time

import pytest
import redis

from conftest import resp_command


def recv_until_closed(sock, timeout=20):
    """Everything the server sends until it closes; raises on timeout (the server hung)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


class Bystander:
    """A client doing SET/GET round trips in a thread; records errors and the slowest trip."""

    def __init__(self, server):
        self.client = server.client()
        self.errors = []
        self.count = 0
        self.slowest = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        i = 0
        while not self.stop.is_set():
            key, value = f"bystander:{i % 100}", f"value-{i}"
            start = time.monotonic()
            try:
                assert self.client.set(key, value) is True
                got = self.client.get(key)
                assert got == value.encode(), (got, value)
            except Exception as e:  # noqa: BLE001 - every failure counts
                self.errors.append(repr(e))
            self.slowest = max(self.slowest, time.monotonic() - start)
            self.count += 1
            i += 1

    def __enter__(self):
        self.started = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        # Run for at least a second, so the count below means something on a slow machine.
        time.sleep(max(0.0, 1.0 - (time.monotonic() - self.started)))
        self.stop.set()
        self.thread.join(15)
        self.client.close()

    def check(self, minimum=20):
        assert not self.errors, self.errors[:5]
        assert self.count >= minimum, f"bystander made only {self.count} round trips"
        assert self.slowest < 2.0, f"a bystander round trip took {self.slowest:.2f}s"


HOSTILE = {
    "garbage": os.urandom(4096).replace(b"*", b"x").replace(b"\n", b"y") + b"\r\n" + os.urandom(4096),
    "binary garbage line": bytes(range(256)) * 8,
    "negative bulk length": b"*2\r\n$3\r\nGET\r\n$-7\r\n",
    "negative multibulk then garbage": b"*-5x\r\n",
    "huge bulk length": b"*2\r\n$3\r\nGET\r\n$99999999999999999999\r\n",
    "huge multibulk count": b"*99999999999999999999\r\n",
    "10,000-deep nesting": b"*1\r\n" * 10_000,
    "a billion arguments announced": b"*1000000000\r\n$3\r\nSET\r\n",
    "1 GB bulk header with no body": b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1073741824\r\n",
    "non-numeric bulk length": b"*1\r\n$abc\r\n",
    "type byte where a bulk belongs": b"*2\r\n$3\r\nGET\r\n:12\r\n",
    "unterminated quote inline": b'SET "abc\r\n',
    "endless inline line": b"A" * (200 * 1024),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_gets_error_or_close_while_others_carry_on(server, name):
    with Bystander(server) as b:
        time.sleep(0.1)
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        try:
            s.sendall(HOSTILE[name])
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed on us mid-send: also a close
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        reply = recv_until_closed(s)
        s.close()
        time.sleep(0.2)
    lines = [line for line in reply.split(b"\r\n") if line]
    # Either nothing (a close) or error replies only, ending in the protocol error.
    assert all(line.startswith(b"-ERR") for line in lines), reply[:300]
    b.check()


def test_bare_container_commands(server):
    """Found by the dispatch fuzzer: a bare COMMAND indexed past its arguments and killed cairnd."""
    with Bystander(server) as b:
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.sendall(b"CONFIG\r\nCLIENT\r\nACL\r\nCOMMAND\r\nQUIT\r\n")
        reply = recv_until_closed(s)
        time.sleep(0.2)
    assert reply.startswith(b"-ERR wrong number of arguments for 'config' command\r\n"
                            b"-ERR wrong number of arguments for 'client' command\r\n"
                            b"-ERR wrong number of arguments for 'acl' command\r\n*"), reply[:300]
    assert reply.endswith(b"+OK\r\n")
    b.check()


def test_announced_bulk_without_body_costs_no_memory(fresh_server):
    """A 400 MB bulk header (under proto-max-bulk-len) then silence: nothing is allocated for it."""
    srv = fresh_server()
    rss_before = rss_kib(srv.process.pid)
    socks = []
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$400000000\r\nabc")
        socks.append(s)
    time.sleep(0.5)
    c = srv.client()
    assert c.ping() is True
    assert rss_kib(srv.process.pid) - rss_before < 100 * 1024, "20 announced 400 MB bodies allocated memory"
    for s in socks:
        s.close()


def test_byte_at_a_time_client_does_not_block_others(server):
    with Bystander(server) as b:
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        request = b"*3\r\n$3\r\nSET\r\n$4\r\nslow\r\n$5\r\nsnail\r\n"
        for byte in request:
            slow.sendall(bytes([byte]))
            time.sleep(0.03)
        assert slow.recv(10) == b"+OK\r\n"
        slow.close()
    b.check()
    assert server.client().get("slow") == b"snail"


def test_many_slow_and_silent_clients_do_not_block_others(server):
    with Bystander(server) as b:
        half_sent = []
        for i in range(50):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n" + b"x" * i)  # then silence
            half_sent.append(s)
        time.sleep(1.5)
        for s in half_sent:
            s.close()
    b.check()


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_clients_that_never_read_cost_one_reply_and_stall_nobody(fresh_server):
    """Ten clients pipeline 400 GETs of a 1 MiB value each and never read (4 GB of replies, on
    the default config): each is served until about 1 MiB of replies wait, then waits for its
    reader (backpressure), so the server builds almost nothing and a bystander is not held up."""
    srv = fresh_server()
    c = srv.client()
    c.set("big", b"v" * (1 << 20))
    rss_before = rss_kib(srv.process.pid)
    with Bystander(srv) as b:
        hogs = []
        for _ in range(10):
            hog = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            hog.sendall(b"GET big\r\n" * 400)
            hogs.append(hog)
        time.sleep(3)
        peak = rss_kib(srv.process.pid)
    print(f"bystander's slowest SET+GET while 10 clients never read: {b.slowest * 1000:.1f} ms "
          f"({b.count} round trips); RSS +{(peak - rss_before) // 1024} MiB")
    b.check()
    assert b.slowest < 0.5, f"a bystander waited {b.slowest * 1000:.0f} ms"
    # Ten waiting replies of 1 MiB and their buffers, far below the 4 GB asked for.
    assert peak - rss_before < 200 * 1024, f"RSS grew by {(peak - rss_before) // 1024} MiB"
    assert len(c.client_list()) == 11, "they wait; nothing closed them (no output limit is set)"
    for hog in hogs:
        hog.close()


def test_client_that_never_reads_is_closed_at_the_output_limit(fresh_server):
    """With an output limit below what one round of replies takes, the client is closed, as
    Redis's hard limit does."""
    srv = fresh_server("--client-output-buffer-limit", "1mb")
    c = srv.client()
    c.set("big", b"v" * (1 << 20))
    accepted = c.info("stats")["total_connections_received"]
    hog = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.sendall(b"GET big\r\n" * 2000)
    # The hog is connected before the server registers it: wait until it was accepted, then
    # until it is gone.
    deadline = time.time() + 30
    while time.time() < deadline and (
            c.info("stats")["total_connections_received"] <= accepted or len(c.client_list()) > 1):
        time.sleep(0.1)
    assert len(c.client_list()) == 1, "the client that never reads was closed"
    assert "over client-output-buffer-limit" in open(os.path.join(srv.directory, "cairnd.log")).read()
    hog.close()


def raise_fd_limit(wanted):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_two_thousand_concurrent_connections_then_max_clients(fresh_server):
    # The test and cairnd (which inherits the limit) each hold 2,000 sockets.
    if raise_fd_limit(8192) < 4200:
        pytest.skip("cannot raise the open-file limit to 4,200 here")
    srv = fresh_server("--maxclients", "2000")
    socks = []
    try:
        for i in range(2000):
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=30))
        for i, s in enumerate(socks):
            s.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\nconn:%d\r\n$1\r\nv\r\n" % (len(f"conn:{i}"), i))
        for s in socks:
            assert s.recv(5) == b"+OK\r\n"
        for s in socks[::7]:
            s.sendall(b"PING\r\n")
            assert s.recv(7) == b"+PONG\r\n"
        extra = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        assert recv_until_closed(extra) == b"-ERR max number of clients reached\r\n"
        # One leaves; a newcomer is served again.
        socks.pop().close()
        deadline = time.time() + 10
        while True:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(b"GET conn:0\r\n")
            reply = s.recv(100)
            if reply == b"$1\r\nv\r\n" or time.time() > deadline:
                break
            s.close()
            time.sleep(0.1)
        assert reply == b"$1\r\nv\r\n"
        socks.append(s)
    finally:
        for s in socks:
            s.close()


def test_key_and_value_size_limits(fresh_server):
    srv = fresh_server("--set", "max-key-size=1kb", "--set", "max-value-size=64kb")
    c = srv.client()
    assert c.set(b"k" * 1024, b"v" * 65536) is True
    with pytest.raises(redis.ResponseError, match=r"key is too large \(1025 bytes; max-key-size is 1024\)"):
        c.set(b"k" * 1025, b"v")
    with pytest.raises(redis.ResponseError, match=r"value is too large \(65537 bytes; max-value-size is 65536\)"):
        c.set(b"k", b"v" * 65537)
    with pytest.raises(redis.ResponseError, match="value is too large"):
        c.mset({b"a": b"1", b"b": b"v" * 70000})
    c.set("grow", b"v" * 65000)
    with pytest.raises(redis.ResponseError, match="max-value-size"):
        c.append("grow", b"v" * 1000)
    with pytest.raises(redis.ResponseError, match="max-value-size"):
        c.setrange("grow", 65530, b"0123456789")
    # Pipelined plain SETs (the grouped fast path) are checked too.
    p = c.pipeline(transaction=False)
    p.set("ok1", "1").set(b"k" * 2000, "2").set("ok2", b"v" * 70000).set("ok3", "3")
    results = p.execute(raise_on_error=False)
    assert results[0] is True and results[3] is True
    assert isinstance(results[1], redis.ResponseError) and isinstance(results[2], redis.ResponseError)
    assert c.exists("ok1", "ok3") == 2 and c.exists("ok2") == 0
    assert c.get(b"k" * 1025) is None, "reads of long keys are not refused"
    assert c.config_get("max-key-size") in ({"max-key-size": "1024"}, {b"max-key-size": b"1024"})


def test_max_args(fresh_server):
    srv = fresh_server("--set", "max-args=10")
    c = srv.client()
    assert c.mset({f"k{i}": i for i in range(4)}) is True  # 9 arguments
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"*11\r\n$4\r\nMSET\r\n")
    assert recv_until_closed(s) == b"-ERR Protocol error: invalid multibulk length\r\n"
    assert c.get("k3") == b"3"


def test_query_buffer_limit_closes_only_that_client(fresh_server):
    srv = fresh_server("--client-query-buffer-limit", "1mb")
    with Bystander(srv) as b:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5000000\r\n")
        try:
            for _ in range(40):
                s.sendall(b"x" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert recv_until_closed(s) == b""
        time.sleep(0.2)
    b.check()


class Reader(threading.Thread):
    """GET (or, with `writes`, SET) round trips of a key of its own in a thread, recording the
    slowest."""

    def __init__(self, server, writes=False):
        super().__init__(daemon=True)
        self.client = server.client()
        self.writes = writes
        self.slowest = 0.0
        self.stop = threading.Event()

    def run(self):
        i = 0
        while not self.stop.is_set():
            t = time.monotonic()
            if self.writes:
                self.client.set("writer", i)
            else:
                self.client.get("reader")
            self.slowest = max(self.slowest, time.monotonic() - t)
            i += 1


def test_a_huge_command_does_not_hold_up_other_clients(fresh_server):
    """A 200,000-key MSET, MGET, EXISTS or DEL, and DBSIZE or KEYS over all of them, run off the
    connection's worker: other clients' reads go on meanwhile, and so do their writes (a big
    write commits in pieces, so no writer waits for its whole memtable insert); the replies are
    exact."""
    srv = fresh_server("--set", "io-threads=1")  # one worker: the reader shares it with the big commands
    keys = [f"big:{i:07d}".encode() for i in range(200_000)]
    pairs = [x for k in keys for x in (k, b"v" + k)]
    big = socket.create_connection(("127.0.0.1", srv.port))
    replies = big.makefile("rb")
    figures = []
    for name, command, expected in [
        ("MSET", resp_command("MSET", *pairs), b"+OK\r\n"),
        ("EXISTS", resp_command("EXISTS", *keys, b"missing"), b":200000\r\n"),
        ("DBSIZE", resp_command("DBSIZE"), b":200001\r\n"),  # and the writer's key
        ("KEYS", resp_command("KEYS", "big:*"), b"*200000\r\n"),
        ("MGET", resp_command("MGET", *keys), b"*200000\r\n"),
        ("DEL", resp_command("DEL", *keys, keys[0], b"missing"), b":200000\r\n"),
    ]:
        reader, writer = Reader(srv), Reader(srv, writes=True)
        reader.start()
        writer.start()
        time.sleep(0.1)
        started = time.monotonic()
        big.sendall(command)
        first = replies.readline()
        took = time.monotonic() - started
        assert first == expected, (name, first)
        if name in ("MGET", "KEYS"):
            items = [replies.readline() and replies.readline() for _ in range(200_000)]
            if name == "MGET":
                assert items[0] == b"vbig:0000000\r\n" and items[-1] == b"vbig:0199999\r\n"
        time.sleep(0.1)
        for t in (reader, writer):
            t.stop.set()
            t.join()
        figures.append(f"{name} {took * 1000:.0f} ms (slowest other GET {reader.slowest * 1000:.0f} ms, "
                       f"SET {writer.slowest * 1000:.0f} ms)")
        assert reader.slowest < 0.4, f"a reader waited {reader.slowest * 1000:.0f} ms behind {name}: {figures}"
        assert writer.slowest < 0.4, f"a writer waited {writer.slowest * 1000:.0f} ms behind {name}: {figures}"
    print("; ".join(figures))
    assert srv.client().dbsize() == 1


def test_a_client_closed_while_its_huge_command_runs(fresh_server):
    srv = fresh_server()
    keys = [f"k:{i}".encode() for i in range(100_000)]
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(resp_command("SNAPSHOT.CREATE"))
        assert s.recv(100).startswith(b":")
        s.sendall(resp_command("MSET", *[x for k in keys for x in (k, k)]))
        time.sleep(0.05)  # it runs now, off the worker; the client goes away meanwhile
        s.close()
    c = srv.client()
    deadline = time.time() + 30
    while c.dbsize() != 100_000 and time.time() < deadline:
        time.sleep(0.05)
    assert c.dbsize() == 100_000
    assert srv.process.poll() is None
    # The snapshots the closed clients made are released once their commands finished.
    deadline = time.time() + 10
    while c.info("rocksdb")["open_snapshots"] and time.time() < deadline:
        time.sleep(0.05)
    assert c.info("rocksdb")["open_snapshots"] == 0
