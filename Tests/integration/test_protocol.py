"""The wire itself: inline commands, nc, split requests, big pipelines and values, limits."""
import os
import socket
import subprocess
import threading
import time

import pytest
import redis


def recv_exactly(sock, n, timeout=30):
    sock.settimeout(timeout)
    data = b""
    while len(data) < n:
        chunk = sock.recv(min(1 << 20, n - len(data)))
        if not chunk:
            break
        data += chunk
    return data


def recv_until_closed(sock, timeout=10):
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def run_clients(count, client):
    """Runs `client(t)` for t in 0..<count on as many threads at once, and waits for all."""
    threads = [threading.Thread(target=client, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def test_inline_with_nc(server):
    out = subprocess.run(["nc", "-q1", "127.0.0.1", str(server.port)],
                         input=b"SET a 1\r\nGET a\r\nINCR a\r\n", capture_output=True, timeout=20).stdout
    assert out == b"+OK\r\n$1\r\n1\r\n:2\r\n"


def test_inline_lf_only_and_quotes(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b'SET q "hello \\"world\\"\\x21"\nGET q\nSET sq \'it\\\'s\'\nGET sq\n')
    expected = b'+OK\r\n$14\r\nhello "world"!\r\n+OK\r\n$4\r\nit\'s\r\n'
    assert recv_exactly(s, len(expected)) == expected
    s.sendall(b'SET x "unbalanced\r\n')
    assert recv_until_closed(s).startswith(b"-ERR Protocol error: unbalanced quotes")


def test_request_split_into_single_bytes(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for b in b"*3\r\n$3\r\nSET\r\n$5\r\nsplit\r\n$3\r\nyes\r\n*2\r\n$3\r\nGET\r\n$5\r\nsplit\r\n":
        s.sendall(bytes([b]))
        time.sleep(0.001)
    assert recv_exactly(s, 14) == b"+OK\r\n$3\r\nyes\r\n"


def test_pipeline_of_ten_thousand_in_one_write(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    req = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(str(i)), str(i).encode()) for i in range(5000))
    req += b"".join(b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(str(i)), str(i).encode()) for i in range(5000))
    s.sendall(req)
    expected = b"+OK\r\n" * 5000 + b"".join(b"$%d\r\n%s\r\n" % (len(str(i)), str(i).encode()) for i in range(5000))
    assert recv_exactly(s, len(expected)) == expected


def test_hundred_megabyte_value(server):
    c = server.client()
    value = bytes(range(256)) * (100 * 1024 * 1024 // 256)
    assert c.set("big", value) is True
    got = c.get("big")
    assert len(got) == len(value) and got == value
    c.delete("big")


def test_bulk_over_limit_closes_only_that_client(fresh_server):
    s = fresh_server("--proto-max-bulk-len", "1mb")
    bystander = s.client()
    bystander.set("still", "here")
    bad = socket.create_connection(("127.0.0.1", s.port))
    bad.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")
    assert recv_until_closed(bad).startswith(b"-ERR Protocol error: invalid bulk length")
    assert bystander.get("still") == b"here"


def test_garbage_gets_protocol_error(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"*2\r\n$3\r\nGET\r\n:12\r\n")
    assert recv_until_closed(s).startswith(b"-ERR Protocol error: expected '$', got ':'")
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"*-5x\r\n")
    assert recv_until_closed(s).startswith(b"-ERR Protocol error: invalid multibulk length")


def test_idle_timeout_closes_quiet_clients(fresh_server):
    s = fresh_server("--timeout", "1")
    idle = socket.create_connection(("127.0.0.1", s.port))
    idle.sendall(b"PING\r\n")
    assert recv_exactly(idle, 7) == b"+PONG\r\n"
    start = time.time()
    assert recv_until_closed(idle, timeout=10) == b""
    assert 0.5 < time.time() - start < 5


def wait_until_disconnected(c, accepted_before, timeout=20):
    """Waits until the server accepted one more connection than `accepted_before` and is back
    to `c` alone. (A socket is connected before the server's accept handler registers it, so
    counting clients right away can miss it.)"""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (c.info("stats")["total_connections_received"] > accepted_before
                and c.info("clients")["connected_clients"] == 1):
            return True
        time.sleep(0.05)
    return False


def test_client_that_never_reads_is_disconnected_at_output_limit(fresh_server):
    s = fresh_server("--client-output-buffer-limit", "1mb")
    c = s.client()
    c.set("big", b"x" * (512 * 1024))
    accepted = c.info("stats")["total_connections_received"]
    hog = socket.create_connection(("127.0.0.1", s.port))
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # Many GETs of a 512 KiB value in one go, never reading the replies.
    hog.sendall(b"GET big\r\n" * 200)
    assert wait_until_disconnected(c, accepted), "the client that never reads was disconnected"
    assert c.get("big") == b"x" * (512 * 1024), "other clients keep working"


def test_pipelined_gets_and_sets_keep_their_order(server):
    """Runs of plain GETs are read as one MultiGet and runs of SETs written as one batch; a
    pipeline mixing them must still answer as if each ran alone, in order."""
    c = server.client()
    c.delete("pa", "pb")
    with c.pipeline(transaction=False) as p:
        p.get("pa").get("pb").set("pa", "1").get("pa").get("pb").get("pa")
        p.set("pb", "2").set("pa", "3").get("pa").get("pb").delete("pa").get("pa").get("pb")
        replies = p.execute()
    assert replies == [None, None, True, b"1", None, b"1", True, True, b"3", b"2", 1, None, b"2"]
    # A long run of GETs, mostly misses, in one write.
    with c.pipeline(transaction=False) as p:
        for i in range(3000):
            p.get(f"pg:{i}" if i % 3 else "pb")
        replies = p.execute()
    assert replies == [b"2" if i % 3 == 0 else None for i in range(3000)]


def test_pipelined_gets_of_a_big_value_wait_for_a_client_that_does_not_read(fresh_server):
    """A run of GETs is answered as one group, but only until about 1 MiB of replies wait: a
    client asking for far more without reading costs the server about one reply, not the
    replies to everything it asked for, and gets every reply, in order, once it reads."""
    s = fresh_server()  # no output limit, as Redis's default
    c = s.client()
    value = os.urandom(4 * 1024 * 1024)
    c.set("big", value)
    c.set("small", "s")
    pid = s.process.pid

    def rss():
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))

    before = rss()
    hog = socket.create_connection(("127.0.0.1", s.port))
    hog.sendall(b"GET big\r\n" * 100 + b"GET small\r\n")  # 400 MB of replies
    time.sleep(2)
    assert rss() - before < 64 * 1024 * 1024, "the server built replies the client has not asked to read"
    assert c.get("small") == b"s", "other clients are served meanwhile"

    reader = hog.makefile("rb")
    for i in range(100):
        assert reader.readline() == b"$%d\r\n" % len(value), i
        assert reader.read(len(value) + 2) == value + b"\r\n", i
    assert reader.readline() == b"$1\r\n" and reader.readline() == b"s\r\n"
    hog.close()



def test_sets_of_many_clients_written_together_keep_each_clients_order(server):
    """Plain SETs of every client served in one poller round are written as one batch; each
    client must still see its own writes at once and in order, whatever the others do."""
    clients, rounds = 40, 150
    failures = []

    def client(t):
        s = socket.create_connection(("127.0.0.1", server.port))
        try:
            for i in range(rounds):
                # A SET, reads and writes of the same key right behind it, in one write.
                s.sendall(
                    f"SET mk:{t} a{i}\r\nGET mk:{t}\r\nSET mk:{t} b{i}\r\nSET shared {t}\r\n"
                    f"INCR mc:{t}\r\nGET mk:{t}\r\n".encode())
                n = len(str(i)) + 1
                expected = (f"+OK\r\n${n}\r\na{i}\r\n+OK\r\n+OK\r\n:{i + 1}\r\n${n}\r\nb{i}\r\n").encode()
                got = recv_exactly(s, len(expected))
                if got != expected:
                    failures.append((t, i, got, expected))
                    return
        finally:
            s.close()

    run_clients(clients, client)
    assert failures == []
    c = server.client()
    assert c.mget([f"mk:{t}" for t in range(clients)]) == [f"b{rounds - 1}".encode()] * clients
    assert c.mget([f"mc:{t}" for t in range(clients)]) == [str(rounds).encode()] * clients
    assert int(c.get("shared")) in range(clients)


def test_protocol_error_after_sets_is_answered_after_them(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"SET pe:1 a\r\nSET pe:2 b\r\n*1\r\n$x\r\n")
    reply = recv_until_closed(s)
    assert reply.startswith(b"+OK\r\n+OK\r\n-ERR Protocol error"), reply
    assert server.client().mget("pe:1", "pe:2") == [b"a", b"b"]


def test_sets_of_a_client_that_hangs_up_at_once_are_written(server):
    """Redis runs what a client sent before it closed; so does Cairn, though the replies have
    nowhere to go."""
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"".join(f"SET gone:{i} {i}\r\n".encode() for i in range(500)))
    s.close()
    c = server.client()
    deadline = time.time() + 10
    while time.time() < deadline and c.get("gone:499") is None:
        time.sleep(0.05)
    assert c.mget([f"gone:{i}" for i in range(500)]) == [str(i).encode() for i in range(500)]


def test_pipelined_msets_join_the_sets_batch_and_keep_their_errors(fresh_server):
    """MSETs are written with the round's SETs; a malformed MSET or one over max-value-size still
    gets its own error, and the requests around it run."""
    s = fresh_server("--set", "max-value-size=10")
    c = s.client()
    with c.pipeline(transaction=False) as p:
        p.set("ms:a", "1").mset({"ms:b": "2", "ms:c": "3", "ms:a": "4"}).get("ms:a")
        p.execute_command("MSET", "ms:d", "5", "ms:e")
        p.execute_command("MSET", "ms:f", "x" * 11, "ms:g", "7")
        p.mset({"ms:h": "8"}).mget("ms:a", "ms:b", "ms:c", "ms:d", "ms:f", "ms:g", "ms:h")
        replies = p.execute(raise_on_error=False)
    assert replies[:3] == [True, True, b"4"]
    assert "wrong number of arguments" in str(replies[3])
    assert "too large" in str(replies[4])
    assert replies[5] is True
    assert replies[6] == [b"4", b"2", b"3", None, None, None, b"8"]


def test_increments_of_many_clients_in_one_batch_each_count_once(server):
    """INCRs of every client in a poller round are read with one MultiGet and written with one
    batch; increments of the same counter in one batch must each see the one before."""
    clients, rounds = 30, 100
    seen = [[] for _ in range(clients)]

    def client(t):
        s = socket.create_connection(("127.0.0.1", server.port))
        try:
            for _ in range(rounds):
                s.sendall(f"INCR hot\r\nINCRBY own:{t} 2\r\nINCR hot\r\nDECR own:{t}\r\n".encode())
                got = b""
                while got.count(b"\r\n") < 4:
                    got += s.recv(4096)
                seen[t].append([int(line[1:]) for line in got.split(b"\r\n")[:4]])
        finally:
            s.close()

    run_clients(clients, client)
    for replies in seen:
        assert len(replies) == rounds
        # A client's own counter: +2 then -1 each round.
        assert [(r[1], r[3]) for r in replies] == [(i + 2, i + 1) for i in range(rounds)]
        # The shared counter only grows, so each client sees it grow.
        hot = [v for r in replies for v in (r[0], r[2])]
        assert hot == sorted(hot) and len(set(hot)) == len(hot)
    # Every INCR of the shared counter saw a value no other saw: none lost or counted twice.
    everything = sorted(v for replies in seen for r in replies for v in (r[0], r[2]))
    assert everything == list(range(1, 2 * clients * rounds + 1))
    c = server.client()
    assert int(c.get("hot")) == 2 * clients * rounds
    assert c.mget([f"own:{t}" for t in range(clients)]) == [str(rounds).encode()] * clients


def test_pipelined_increments_keep_their_errors_and_expiry(fresh_server):
    """Increments join the batch with their own errors (not an integer, overflow, a bad
    argument, a key over max-key-size) and keep INCR's treatment of TTLs."""
    s = fresh_server("--set", "max-key-size=8")
    c = s.client()
    c.set("word", "abc")
    c.set("max", str(2**63 - 1))
    c.set("ttl", "5", ex=100)
    c.set("gone", "7", px=1)
    time.sleep(0.05)
    with c.pipeline(transaction=False) as p:
        p.incr("n").incr("word").incr("max").execute_command("INCRBY", "n", "x")
        p.execute_command("DECRBY", "n", str(-(2**63)))
        p.incr("ttl").incr("gone").incr("k" * 9).set("n", "40").incrby("n", 2).decr("n").get("n")
        replies = p.execute(raise_on_error=False)
    assert replies[0] == 1
    assert "not an integer" in str(replies[1])
    assert "overflow" in str(replies[2])
    assert "not an integer" in str(replies[3])
    assert "decrement would overflow" in str(replies[4])
    assert replies[5:7] == [6, 1]
    assert "too large" in str(replies[7])
    assert replies[8:] == [True, 42, 41, b"41"]
    assert 0 < c.ttl("ttl") <= 100, "a live key keeps its TTL"
    assert c.ttl("gone") == -1, "an expired key starts over without one"
    assert c.get("word") == b"abc" and c.get("max") == str(2**63 - 1).encode()


def test_a_300_mb_value_can_be_set_and_read_back(fresh_server):
    """Values may be 512 MB (proto-max-bulk-len, max-value-size), so replies may be that large
    too: the default output limit must not close a client reading one back."""
    s = fresh_server()
    c = redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=120)
    value = os.urandom(1 << 20) * 300
    assert c.set("huge", value) is True
    assert c.strlen("huge") == len(value)
    assert c.get("huge") == value
    assert c.get("huge") == value  # and again, on the same connection


def test_client_list_follows_pipelined_sets_and_gets(fresh_server):
    """The grouped executors pass the same door as every request: CLIENT LIST shows a
    pipelining client's current command and a fresh idle time."""
    s = fresh_server()
    c = s.client()
    for test in ("set", "get"):
        bench = subprocess.Popen(
            ["redis-benchmark", "-p", str(s.port), "-t", test, "-P", "16", "-c", "2", "-n", "3000000", "-r", "1000", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            seen = []
            deadline = time.time() + 20
            while time.time() < deadline:
                seen = [e for e in c.client_list() if e["cmd"] == test and int(e["idle"]) == 0]
                if len(seen) >= 2:
                    break
                time.sleep(0.2)
            assert len(seen) >= 2, c.client_list()
        finally:
            bench.kill()
            bench.wait()


def test_pipelined_gets_delete_and_count_expired_keys(server):
    c = server.client()
    before = c.info("stats")["expired_keys"]
    for i in range(20):
        c.set(f"short:{i}", "v", px=20)
    time.sleep(0.1)
    with c.pipeline(transaction=False) as p:
        for i in range(20):
            p.get(f"short:{i}")
        assert p.execute() == [None] * 20
    assert c.info("stats")["expired_keys"] - before == 20
