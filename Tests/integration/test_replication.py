"""Replication against real cairnd processes: a primary and replicas on loopback.

Replicas start from a checkpoint of the primary and then apply its WAL batches in order, so at
equal offsets (sequence numbers) their data is the primary's; DEBUG DIGEST compares them.
"""
import os
import signal
import socket
import threading
import time

import pytest
import redis

from conftest import Cairnd, resp_command


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(condition, timeout=30, what="condition", explain=None):
    """Polls `condition`; on timeout fails with `what` and, when given, `explain()`: the state
    that says why (e.g. `replication_report` of the servers involved)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if condition():
                return
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            pass
        time.sleep(0.05)
    message = f"timed out waiting for {what} ({timeout} s)"
    if explain:
        try:
            message += "\n" + explain()
        except Exception as error:  # the report must not hide the timeout
            message += f"\n(no report: {error!r})"
    raise AssertionError(message)


def info(server, section="replication"):
    return server.client().info(section)


def offset(server):
    return info(server)["master_repl_offset"]


def caught_up(primary, *replicas):
    """All replicas linked and at the primary's offset (with no writes in flight)."""
    target = offset(primary)
    return all(info(r).get("master_link_status") == "up" and offset(r) == target for r in replicas)


REPORTED_FIELDS = ("role", "master_port", "master_link_status", "master_last_io_seconds_ago",
                   "master_sync_in_progress", "master_link_down_since_seconds", "master_last_sync_error",
                   "master_repl_offset", "master_replid", "master_replid2", "second_repl_offset",
                   "master_failover_state", "connected_slaves")


def replication_report(**named):
    """Each server's replication state (INFO replication's links, ids and offsets, its replicas'
    slaveN lines, the sync counters) and the end of its log: a timed-out wait explains itself."""
    lines = []
    for name, server in named.items():
        try:
            client = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
            replication = client.info("replication")
            stats = client.info("stats")
            fields = [f"{k}={replication[k]}" for k in REPORTED_FIELDS if k in replication]
            fields += [f"{k}={stats.get(k)}" for k in ("sync_full", "sync_partial_ok", "sync_partial_err")]
            lines.append(f"{name} (port {server.port}): " + " ".join(fields))
            for key in sorted(k for k in replication if k.startswith("slave") and k[5:].isdigit()):
                value = replication[key]
                if isinstance(value, dict):
                    value = ",".join(f"{k}={v}" for k, v in value.items())
                lines.append(f"  {key}: {value}")
        except redis.RedisError as error:
            lines.append(f"{name} (port {server.port}): no INFO ({error!r})")
    for name, server in named.items():
        log = os.path.join(server.directory, "cairnd.log")
        if os.path.exists(log):
            with open(log, "rb") as f:
                tail = f.read().decode(errors="replace").splitlines()[-25:]
            lines.append(f"--- {name}'s log, last lines:")
            lines += ["  " + line for line in tail]
    return "\n".join(lines)


def digest(server):
    return server.client().execute_command("DEBUG", "DIGEST")


@pytest.fixture
def servers():
    made = []

    def make(*args, port=None):
        s = Cairnd(list(args) + (["--port", str(port)] if port else []))
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()


def follow(replica, primary):
    assert replica.client().execute_command("REPLICAOF", "127.0.0.1", primary.port) == b"OK"


def mixed_load(primary, stop, errors, rounds=None):
    """SETs, MERGEs in a family, EXEC batches, DELRANGE, collections, family create/drop."""
    r = primary.client()
    fam = primary.client()
    n = 0
    try:
        r.execute_command("CF.CREATE", "counters", "MERGE", "add")
        fam.execute_command("CF.USE", "counters")
        while not stop.is_set() and (rounds is None or n < rounds):
            p = r.pipeline(transaction=False)
            for i in range(50):
                p.set(f"k:{n}:{i}", f"v{n}-{i}")
            p.execute()
            for i in range(5):
                fam.execute_command("MERGE", f"c{i}", n + 1)
            tx = r.pipeline(transaction=True)
            tx.incr("tx:count")
            tx.hset("tx:hash", f"f{n % 7}", n)
            tx.zadd("tx:z", {f"m{n % 11}": n})
            tx.rpush("tx:list", n)
            tx.execute()
            if n % 5 == 4:
                r.execute_command("DELRANGE", f"[k:{n - 4}:", f"(k:{n - 3}:")
            if n % 10 == 9:
                name = f"tmp{n}"
                r.execute_command("CF.CREATE", name)
                c = primary.client()
                c.execute_command("CF.USE", name)
                c.set("inside", n)
                c.close()
                if n % 20 == 19:
                    r.execute_command("CF.DROP", name)
            n += 1
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)
    return n


def test_two_replicas_hold_the_primarys_data_under_a_mixed_load(servers):
    primary = servers()
    a = servers()
    b = servers()
    primary.client().mset({f"before:{i}": i for i in range(500)})
    follow(a, primary)
    follow(b, primary)
    stop, errors = threading.Event(), []
    t = threading.Thread(target=mixed_load, args=(primary, stop, errors))
    t.start()
    time.sleep(3)
    stop.set()
    t.join()
    assert not errors, errors
    assert primary.client().execute_command("WAIT", 2, 10000) == 2
    wait_until(lambda: caught_up(primary, a, b), what="replicas to catch up")
    d = digest(primary)
    assert d != b"0" * 40
    assert digest(a) == d and digest(b) == d
    # Families created and dropped on the primary are created and dropped on the replicas.
    assert sorted(a.client().execute_command("CF.LIST")) == sorted(primary.client().execute_command("CF.LIST"))
    ra = a.client()
    ra.execute_command("CF.USE", "counters")
    rp = primary.client()
    rp.execute_command("CF.USE", "counters")
    assert ra.get("c0") == rp.get("c0") and ra.get("c0") is not None
    # INFO and ROLE describe both sides as Redis does.
    pi = info(primary)
    assert pi["role"] == "master" and pi["connected_slaves"] == 2
    assert pi["slave0"]["state"] == "online" and pi["slave0"]["offset"] == pi["master_repl_offset"]
    ai = info(a)
    assert ai["role"] == "slave" and ai["master_link_status"] == "up" and ai["master_port"] == primary.port
    assert ai["master_replid"] == pi["master_replid"] and len(pi["master_replid"]) == 40
    role = primary.client().execute_command("ROLE")
    assert role[0] == b"master" and role[1] == pi["master_repl_offset"] and len(role[2]) == 2
    assert sorted(int(x[1]) for x in role[2]) == sorted([a.port, b.port])
    rrole = a.client().execute_command("ROLE")
    assert rrole[:4] == [b"slave", b"127.0.0.1", primary.port, b"connected"]


def test_a_replica_refuses_writes_by_every_path(servers):
    primary = servers()
    replica = servers()
    primary.client().set("k", "v")
    follow(replica, primary)
    wait_until(lambda: caught_up(primary, replica))
    r = replica.client()
    assert r.get("k") == b"v"
    for command in (("SET", "k", "x"), ("HSET", "h", "f", "v"), ("LPUSH", "l", "a"), ("DEL", "k"), ("FLUSHALL",), ("CF.CREATE", "x")):
        with pytest.raises(redis.ReadOnlyError, match="You can't write against a read only replica"):
            r.execute_command(*command)
    p = r.pipeline(transaction=False)
    p.set("a", 1)
    p.incr("b")
    p.get("k")
    results = p.execute(raise_on_error=False)
    assert isinstance(results[0], redis.ReadOnlyError) and isinstance(results[1], redis.ReadOnlyError) and results[2] == b"v"
    tx = r.pipeline(transaction=True)
    tx.set("a", 1)
    with pytest.raises((redis.ReadOnlyError, redis.ResponseError)):
        tx.execute()
    with pytest.raises(redis.ReadOnlyError, match="You can't write against a read only replica"):
        r.eval("return redis.call('set', 'a', 1)", 0)
    assert r.get("a") is None and r.get("k") == b"v"
    with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica instances"):
        r.execute_command("WAIT", 1, 0)


def test_a_killed_replica_resumes_with_a_partial_sync(servers):
    primary = servers("--appendfsync", "always")
    replica = servers("--appendfsync", "always")
    follow(replica, primary)
    stop, errors = threading.Event(), []
    t = threading.Thread(target=mixed_load, args=(primary, stop, errors))
    t.start()
    time.sleep(1.5)
    replica.stop(signal.SIGKILL)
    time.sleep(1)
    # It restarts with no REPLICAOF in its config: point it at the primary again.
    replica.start()
    follow(replica, primary)
    time.sleep(1)
    stop.set()
    t.join()
    assert not errors, errors
    wait_until(lambda: caught_up(primary, replica))
    stats = primary.client().info("stats")
    assert stats["sync_full"] == 1 and stats["sync_partial_ok"] == 1, stats
    assert digest(replica) == digest(primary)


def test_a_replica_killed_during_a_full_sync_keeps_its_old_data_and_retries(servers):
    primary = servers()
    replica = servers()
    p = primary.client()
    for i in range(40):
        p.mset({f"big:{i}:{j}": os.urandom(100_000) for j in range(25)})  # ~100 MB, incompressible
    old = replica.client()
    old.mset({f"old:{i}": i for i in range(1000)})
    old_digest = digest(replica)
    staging = os.path.join(replica.directory, "data", "restore-staging")
    follow(replica, primary)
    deadline = time.time() + 30
    while not os.path.isdir(staging) and time.time() < deadline:
        time.sleep(0.005)
    assert os.path.isdir(staging), "the full sync never started"
    replica.stop(signal.SIGKILL)
    replica.start()
    r = replica.client()
    assert info(replica)["role"] == "master"  # REPLICAOF was not saved with CONFIG REWRITE
    assert r.dbsize() == 1000 and digest(replica) == old_digest
    assert not os.path.exists(staging)
    log = open(os.path.join(replica.directory, "cairnd.log"), errors="replace").read()
    assert "full sync from the primary was interrupted" in log
    follow(replica, primary)
    wait_until(lambda: caught_up(primary, replica), timeout=60)
    assert digest(replica) == digest(primary)
    assert r.get("old:1") is None


def test_a_killed_primary_comes_back_and_its_replicas_resynchronise(servers):
    port = free_port()
    primary = servers("--appendfsync", "always", port=port)
    replica = servers()
    follow(replica, primary)
    primary.client().mset({f"a{i}": i for i in range(1000)})
    wait_until(lambda: caught_up(primary, replica))
    first_id = info(primary)["master_replid"]
    primary.stop(signal.SIGKILL)
    wait_until(lambda: info(replica)["master_link_status"] == "down", what="link down")
    assert replica.client().get("a5") == b"5"  # still serving reads
    primary.start()
    assert primary.port == port
    # After a crash the primary starts a new history: the replica syncs in full.
    assert info(primary)["master_replid"] != first_id
    primary.client().set("after", "crash")
    wait_until(lambda: caught_up(primary, replica))
    assert replica.client().get("after") == b"crash"
    assert digest(replica) == digest(primary)
    # A clean restart keeps the history: the replica continues with a partial sync.
    second_id = info(primary)["master_replid"]
    primary.stop()
    primary.start()
    assert info(primary)["master_replid"] == second_id
    primary.client().set("after", "restart")
    wait_until(lambda: caught_up(primary, replica))
    assert replica.client().get("after") == b"restart"
    assert primary.client().info("stats")["sync_partial_ok"] >= 1


def test_a_promoted_replica_lets_the_others_continue_partially(servers):
    primary = servers()
    a = servers()
    b = servers()
    follow(a, primary)
    follow(b, primary)
    primary.client().mset({f"x{i}": i for i in range(100)})
    wait_until(lambda: caught_up(primary, a, b))
    old_id = info(primary)["master_replid"]
    assert a.client().execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    ia = info(a)
    assert ia["role"] == "master" and ia["master_replid2"] == old_id and ia["master_replid"] != old_id
    # The old primary was up: it handed over and follows the promoted replica by itself (once
    # the replica, promoted, closed the link to it).
    report = lambda: replication_report(promoted=a, other=b, old_primary=primary)
    wait_until(lambda: info(primary).get("master_port") == a.port, timeout=10,
               what="the old primary to follow the promoted replica", explain=report)
    a.client().set("promoted", 1)
    follow(b, a)
    assert primary.client().execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK Already connected to specified master"
    wait_until(lambda: caught_up(a, b, primary), what="the others to catch up with the promoted replica", explain=report)
    stats = a.client().info("stats")
    assert stats["sync_partial_ok"] == 2 and stats["sync_full"] == 0, report()
    assert digest(b) == digest(a) == digest(primary)
    assert primary.client().get("promoted") == b"1"
    with pytest.raises(redis.ReadOnlyError):
        primary.client().set("x", 1)


def test_hand_overs_back_and_forth_while_the_other_replica_reconnects(servers):
    """The other replica is re-pointed at each promoted replica at a moment its link to the
    old primary (which now follows the promoted one) is reconnecting: a late pause puts it in
    the middle of that resync. Its old link must change nothing once REPLICAOF moved on."""
    nodes = [servers(), servers()]
    other = servers()
    follow(nodes[1], nodes[0])
    follow(other, nodes[0])
    nodes[0].client().mset({f"x{i}": i for i in range(100)})
    wait_until(lambda: caught_up(nodes[0], nodes[1], other))
    full_syncs = lambda: sum(n.client().info("stats")["sync_full"] for n in nodes + [other])
    initial = full_syncs()
    for round, pause in enumerate((1.0, 1.1, 1.2, 1.05)):
        old, new = nodes[round % 2], nodes[(round + 1) % 2]
        report = lambda: replication_report(promoted=new, other=other, old_primary=old)
        assert new.client().execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        wait_until(lambda: info(old).get("master_port") == new.port, timeout=10,
                   what=f"round {round}: the old primary to follow the promoted one", explain=report)
        # The other replica's link to the old primary broke when it handed over; it retries
        # each second, so about now it is reconnecting to the old primary.
        time.sleep(pause)
        new.client().set(f"round{round}", round)
        follow(other, new)
        wait_until(lambda: caught_up(new, old, other), timeout=20,
                   what=f"round {round}: the others to catch up with the promoted replica", explain=report)
        assert digest(other) == digest(new) == digest(old), report()
    # Every hand-over continued partially, on every server.
    assert full_syncs() == initial, report()


def test_replicas_that_connect_at_once_to_a_new_primary_all_sync(servers):
    """A primary's first replica makes it reopen its database keeping the WAL, which pauses its
    clients. Replicas that connect at the same moment each asked for that pause, and two pauses
    at once held the primary forever."""
    replicas = [servers() for _ in range(3)]
    for round in range(3):
        primary = servers()
        primary.client().set("round", round)
        threads = [threading.Thread(target=follow, args=(r, primary)) for r in replicas]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        report = lambda: replication_report(primary=primary, **{f"replica{i}": r for i, r in enumerate(replicas)})
        wait_until(lambda: caught_up(primary, *replicas), timeout=20, what=f"round {round}: the replicas to sync",
                   explain=report)
        assert all(r.client().get("round") == str(round).encode() for r in replicas)


class FakePrimary(threading.Thread):
    """Answers a replica's handshake and holds its PSYNC until `release(sequence)`, then sends
    `+CONTINUE` and one BATCH frame (a put of `stale`) at that sequence."""

    def __init__(self):
        super().__init__(daemon=True)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.asked = threading.Event()
        self.released = threading.Event()
        self.sequence = 0
        self.connection = None

    def release(self, sequence):
        self.sequence = sequence
        self.released.set()

    def run(self):
        connection, _ = self.listener.accept()
        self.connection = connection
        buffer = b""
        while True:
            data = connection.recv(4096)
            if not data:
                return
            buffer += data
            if b"PSYNC" in buffer:
                break
            while buffer.count(b"\r\n") >= 7:  # one REPLCONF (3 words) answered at a time
                connection.sendall(b"+OK\r\n")
                buffer = buffer.split(b"\r\n", 7)[7]
        self.asked.set()
        self.released.wait(30)
        key, value = b"stale", b"from the old primary"
        batch = (self.sequence.to_bytes(8, "little") + (1).to_bytes(4, "little")
                 + b"\x01" + bytes([len(key)]) + key + bytes([len(value)]) + value)
        connection.sendall(b"+CONTINUE " + b"f" * 40 + b"\r\n"
                           + resp_command(b"BATCH", str(self.sequence).encode(), batch))

    def close(self):
        for s in (self.connection, self.listener):
            if s:
                s.close()


def test_a_link_to_a_former_primary_changes_nothing_once_replicaof_moved_on(servers):
    """A replica's link keeps working a while after REPLICAOF moved to another primary (here
    held in its handshake). When it goes on, it must not mark the new link down, take the old
    primary's id, or apply its batches."""
    fake = FakePrimary()
    fake.start()
    primary = servers()
    replica = servers()
    primary.client().set("k", "v")
    try:
        follow(replica, fake)
        assert fake.asked.wait(20), "the replica never asked the fake primary to PSYNC"
        follow(replica, primary)
        report = lambda: replication_report(primary=primary, replica=replica)
        wait_until(lambda: caught_up(primary, replica), explain=report)
        before = offset(replica)
        fake.release(before + 1)
        # The old link gets +CONTINUE and a batch that follows on from the replica's offset.
        time.sleep(1.5)
        r = info(replica)
        assert r["master_link_status"] == "up" and r["master_port"] == primary.port, report()
        assert r["master_replid"] == info(primary)["master_replid"], report()
        assert offset(replica) == before and replica.client().get("stale") is None, report()
        primary.client().set("k", "w")
        wait_until(lambda: caught_up(primary, replica), explain=report)
        assert replica.client().get("k") == b"w"
        assert digest(replica) == digest(primary)
        assert primary.client().info("stats")["sync_full"] == 1, report()
    finally:
        fake.close()


def test_wait_counts_replicas_that_acknowledged(servers):
    primary = servers()
    replica = servers()
    r = primary.client()
    assert r.execute_command("WAIT", 0, 0) == 0
    started = time.time()
    assert r.execute_command("WAIT", 1, 200) == 0
    assert 0.15 < time.time() - started < 5
    follow(replica, primary)
    wait_until(lambda: caught_up(primary, replica))
    r.set("k", "v")
    assert r.execute_command("WAIT", 1, 0) == 1
    started = time.time()
    assert r.execute_command("WAIT", 2, 300) == 1
    assert time.time() - started >= 0.25
    with pytest.raises(redis.ResponseError, match="timeout is negative"):
        r.execute_command("WAIT", 1, -1)
    # A replica's own write count is checked by the primary's WAIT after every write.
    for i in range(50):
        r.set(f"w{i}", i)
        assert r.execute_command("WAIT", 1, 5000) == 1
        assert replica.client().get(f"w{i}") == str(i).encode()


def test_failover_hands_the_primary_role_to_a_replica_losing_no_write(servers):
    primary = servers()
    a = servers()
    follow(a, primary)
    wait_until(lambda: caught_up(primary, a))
    r = primary.client()
    with pytest.raises(redis.ResponseError, match="No failover in progress"):
        r.execute_command("FAILOVER", "ABORT")
    with pytest.raises(redis.ResponseError, match="FAILOVER target HOST and PORT is not a replica"):
        r.execute_command("FAILOVER", "TO", "127.0.0.1", 1)
    with pytest.raises(redis.ResponseError, match="FAILOVER is not valid when server is a replica"):
        a.client().execute_command("FAILOVER")
    acknowledged, refused = [], []
    stop = threading.Event()

    def write():
        w = primary.client()
        i = 0
        while not stop.is_set():
            try:
                w.set(f"f{i}", i)
                acknowledged.append(i)
            except redis.ReadOnlyError:
                refused.append(i)
                time.sleep(0.01)
            i += 1

    t = threading.Thread(target=write)
    t.start()
    time.sleep(1)
    assert r.execute_command("FAILOVER", "TO", "127.0.0.1", a.port) == b"OK"
    wait_until(lambda: info(a)["role"] == "master" and info(primary).get("master_port") == a.port, what="the hand-over")
    time.sleep(0.3)
    stop.set()
    t.join()
    assert refused, "the old primary kept taking writes"
    ra = a.client()
    missing = [i for i in acknowledged if ra.get(f"f{i}") != str(i).encode()]
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged writes lost"
    wait_until(lambda: caught_up(a, primary))
    assert info(primary)["master_failover_state"] == "no-failover"
    assert a.client().info("stats")["sync_partial_ok"] >= 1
    assert digest(primary) == digest(a)
    # REPLICAOF NO ONE on a replica whose primary is up hands over the same way.
    assert primary.client().execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    assert info(primary)["role"] == "master"
    wait_until(lambda: info(a).get("master_port") == primary.port and info(a)["master_link_status"] == "up", what="the second hand-over")
    primary.client().set("back", 1)
    wait_until(lambda: caught_up(primary, a))
    assert a.client().get("back") == b"1"


def test_masterauth_and_client_kill_by_type(servers):
    primary = servers("--requirepass", "s3cret")
    replica = servers("--set", "masterauth=wrong")
    rc = replica.client()
    rc.execute_command("REPLICAOF", "127.0.0.1", primary.port)
    wait_until(lambda: "masterauth" in open(os.path.join(replica.directory, "cairnd.log"), errors="replace").read(),
               what="the refused AUTH to be logged")
    assert info(replica)["master_link_status"] == "down"
    rc.config_set("masterauth", "s3cret")
    p = primary.client(password="s3cret")
    p.set("k", "v")
    wait_until(lambda: info(replica)["master_link_status"] == "up" and rc.get("k") == b"v", what="the link with the right password")
    sub = primary.client(password="s3cret").pubsub()
    sub.subscribe("news")
    sub.get_message(timeout=1)
    other = primary.client(password="s3cret")
    other.ping()
    with pytest.raises(redis.ResponseError, match="Unknown client type 'bogus'"):
        p.execute_command("CLIENT", "KILL", "TYPE", "bogus")
    listed = p.client_list()
    assert [c["flags"] for c in listed].count("S") == 1 and [c["flags"] for c in listed].count("P") == 1
    # Sentinel's failover kills normal and pubsub clients; the replica's stream is not one of them.
    assert p.execute_command("CLIENT", "KILL", "TYPE", "normal") == 1
    assert p.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 1
    p.set("k", "after")
    wait_until(lambda: rc.get("k") == b"after", what="the stream to carry on")
    assert p.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
    wait_until(lambda: info(replica)["master_link_status"] == "up" and p.info("stats")["sync_partial_ok"] >= 1,
               what="the replica to reconnect")


@pytest.mark.parametrize("tmpfs_dir", ["48m"], indirect=True)
def test_a_full_sync_that_does_not_fit_keeps_the_old_data_and_says_why(servers, tmpfs_dir):
    primary = servers()
    p = primary.client()
    for i in range(8):
        p.mset({f"big:{i}:{j}": os.urandom(100_000) for j in range(100)})  # ~80 MB
    replica = Cairnd(["--set", "min-free-disk=1mb"], directory=tmpfs_dir)
    try:
        r = replica.client()
        r.set("old", "data")
        r.execute_command("REPLICAOF", "127.0.0.1", primary.port)
        wait_until(lambda: "not enough free space" in info(replica).get("master_last_sync_error", ""), what="the failure in INFO")
        assert info(replica)["master_link_status"] == "down" and info(replica)["master_sync_in_progress"] == 0
        assert r.get("old") == b"data" and r.dbsize() == 1
        log = open(os.path.join(tmpfs_dir, "cairnd.log"), errors="replace").read()
        assert "full sync failed 1 time(s) in a row" in log and "the old data is kept" in log
        assert not os.path.exists(os.path.join(tmpfs_dir, "data", "restore-staging"))
    finally:
        replica.stop()


def test_a_stalled_replica_never_slows_the_primarys_clients(servers):
    primary = servers("--set", "repl-timeout=3")
    replica = servers()
    follow(replica, primary)
    wait_until(lambda: caught_up(primary, replica))
    replica.process.send_signal(signal.SIGSTOP)
    try:
        p = primary.client()
        worst = 0.0
        for i in range(300):
            started = time.time()
            p.set(f"s{i}", os.urandom(50_000))  # 15 MB: more than the socket buffers hold
            worst = max(worst, time.time() - started)
        assert worst < 1.0, f"a SET took {worst:.2f} s while the replica was stopped"
        wait_until(lambda: info(primary)["connected_slaves"] == 0, timeout=15, what="the stalled replica to be dropped")
    finally:
        replica.process.send_signal(signal.SIGCONT)
    wait_until(lambda: caught_up(primary, replica), timeout=30, what="the replica to resume")
    assert primary.client().info("stats")["sync_partial_ok"] >= 1
    assert digest(replica) == digest(primary)


def test_functions_loaded_on_the_primary_run_on_its_replicas(servers):
    primary = servers()
    replica = servers()
    follow(replica, primary)
    p = primary.client()
    code = "#!lua name=lib\nredis.register_function{function_name='getit', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}"
    p.function_load(code)
    p.set("k", "v")
    wait_until(lambda: caught_up(primary, replica))
    r = replica.client()
    assert r.fcall_ro("getit", 1, "k") == b"v"
    p.function_load(code.replace("GET", "STRLEN"), replace=True)
    wait_until(lambda: caught_up(primary, replica))
    assert r.fcall_ro("getit", 1, "k") == 1
    p.function_delete("lib")
    wait_until(lambda: caught_up(primary, replica))
    with pytest.raises(redis.ResponseError, match="Function not found"):
        r.fcall_ro("getit", 1, "k")
    with pytest.raises(redis.ReadOnlyError):
        r.function_load(code)


def test_expiry_on_a_replica_follows_the_primary(servers):
    primary = servers()
    replica = servers()
    follow(replica, primary)
    p, r = primary.client(), replica.client()
    # Linked first: a full sync under load can take longer than the short TTL.
    wait_until(lambda: caught_up(primary, replica))
    p.set("short", "v", px=1000)
    p.set("long", "v", ex=3600)
    wait_until(lambda: caught_up(primary, replica))
    assert r.get("short") == b"v" and 0 < r.pttl("short") <= 1000
    time.sleep(1.1)
    # Expired: read as missing on the replica at once, deleted there only by the primary's delete.
    assert r.get("short") is None and r.exists("short") == 0
    assert r.info("stats")["expired_keys"] == 0
    wait_until(lambda: p.info("stats")["expired_keys"] >= 1, timeout=10, what="the primary to expire the key")
    wait_until(lambda: caught_up(primary, replica))
    assert r.info("stats")["expired_keys"] == 0
    assert r.ttl("long") > 3500
    assert digest(replica) == digest(primary)


def cf_info(client, name):
    """CF.INFO as a dict of text (a map in RESP3, a flat array in RESP2)."""
    reply = client.execute_command("CF.INFO", name)
    if isinstance(reply, list):
        reply = dict(zip(reply[::2], reply[1::2]))
    return {k.decode(): v.decode() for k, v in reply.items()}


def table_options(server, family):
    """What RocksDB opened `family` with, from the newest OPTIONS file in the data directory."""
    data = os.path.join(server.directory, "data")
    newest = max((f for f in os.listdir(data) if f.startswith("OPTIONS-") and f[8:].isdigit()), key=lambda f: int(f[8:]))
    section, found = None, {}
    for line in open(os.path.join(data, newest)):
        line = line.strip()
        if line.startswith("["):
            section = line
        elif "=" in line and section in (f'[CFOptions "{family}"]', f'[TableOptions/BlockBasedTable "{family}"]'):
            name, value = line.split("=", 1)
            if name in ("compression", "block_size", "filter_policy"):
                found[name] = value
    return found


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_a_replica_creates_families_with_the_primarys_table_options(servers, protocol):
    primary = servers()
    replica = servers()
    follow(replica, primary)
    p = primary.client(protocol=protocol)
    assert p.execute_command("CF.CREATE", "tuned", "MERGE", "max", "COMPRESSION", "zstd", "BLOOM", "3", "BLOCKSIZE", "8kb") == b"OK"
    assert p.execute_command("CF.CREATE", "plain") == b"OK"
    f = primary.client()
    f.execute_command("CF.USE", "tuned")
    f.set("k", "v")
    wait_until(lambda: caught_up(primary, replica))
    settings = ("merge", "compression", "bloom_bits", "block_size")
    tuned = {k: cf_info(p, "tuned")[k] for k in settings}
    assert tuned == {"merge": "max", "compression": "zstd", "bloom_bits": "3", "block_size": "8192"}
    r = replica.client(protocol=protocol)
    assert {k: cf_info(r, "tuned")[k] for k in settings} == tuned
    assert {k: cf_info(r, "plain")[k] for k in settings} == {"merge": "", "compression": "lz4", "bloom_bits": "10", "block_size": "16384"}
    # (RocksDB 7.8 writes `bloomfilter` without its bits per key: CF.INFO shows those.)
    expected = {"compression": "kZSTD", "block_size": "8192", "filter_policy": "bloomfilter"}
    assert table_options(replica, "tuned") == expected
    assert table_options(replica, "plain")["compression"] == "kLZ4Compression"
    # A restart opens the family with them again (they are recorded in the database).
    replica.stop()
    replica.start()
    r = replica.client(protocol=protocol)
    assert {k: cf_info(r, "tuned")[k] for k in settings} == tuned
    assert table_options(replica, "tuned") == expected
    follow(replica, primary)
    wait_until(lambda: caught_up(primary, replica))
    r.execute_command("CF.USE", "tuned")
    assert r.get("k") == b"v"
    # A replica that joins later gets the family through a full sync, with the same options.
    late = servers()
    follow(late, primary)
    wait_until(lambda: caught_up(primary, late))
    assert {k: cf_info(late.client(protocol=protocol), "tuned")[k] for k in settings} == tuned
    assert table_options(late, "tuned") == expected
    assert primary.client().info("stats")["sync_full"] == 2


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_watch_on_a_replica_sees_the_primarys_writes(servers, protocol):
    primary = servers()
    replica = servers()
    follow(replica, primary)
    p = primary.client()
    p.set("k", "1")
    p.hset("h", mapping={"f": "1", "g": "1"})
    wait_until(lambda: caught_up(primary, replica))
    r = replica.client(protocol=protocol, single_connection_client=True)
    replica_reads = replica.client()

    def watch_then(key, change, wait):
        assert r.execute_command("WATCH", key) in (b"OK", True)
        assert r.execute_command("MULTI") in (b"OK", True)
        assert r.execute_command("GET" if key != "h" else "HGET", key, *(["f"] if key == "h" else [])) in (b"QUEUED", "QUEUED")
        change()
        wait_until(wait, what="the replica to apply the write")
        return r.execute_command("EXEC")

    # The primary changes the watched key: EXEC returns nil, as on Redis.
    assert watch_then("k", lambda: p.set("k", "2"), lambda: replica_reads.get("k") == b"2") is None
    # Another key: the transaction runs.
    assert watch_then("k", lambda: p.set("other", "x"), lambda: replica_reads.get("other") == b"x") == [b"2"]
    # One field of a watched hash.
    assert watch_then("h", lambda: p.hset("h", "f", "2"), lambda: replica_reads.hget("h", "f") == b"2") is None
    assert watch_then("h", lambda: p.hset("h2", "f", "2"), lambda: replica_reads.hget("h2", "f") == b"2") == [b"2"]
    # redis-py's transaction helper raises WatchError.
    with replica.client(protocol=protocol).pipeline() as tx:
        tx.watch("k")
        tx.multi()
        tx.get("k")
        p.set("k", "3")
        wait_until(lambda: replica_reads.get("k") == b"3")
        with pytest.raises(redis.WatchError):
            tx.execute()


def test_a_follower_continues_from_inside_a_batch_the_promoted_replica_joined(servers):
    """A replica writes batches that arrived together as one; after a failover another replica
    of the old primary, which stopped part way through those batches, continues from the
    promoted one with a partial sync that starts inside the joined batch."""
    primary = servers()
    a = servers()
    b = servers()
    follow(a, primary)
    follow(b, primary)
    p = primary.client()
    p.set("start", 0)
    wait_until(lambda: caught_up(primary, a, b))
    report = lambda: replication_report(primary=primary, a=a, b=b)
    # `a` stops reading: the primary's next batches wait in its socket, to be read at once.
    os.kill(a.process.pid, signal.SIGSTOP)
    try:
        for i in range(5):
            p.set(f"first:{i}", i)  # one batch each
        wait_until(lambda: offset(b) == offset(primary), what="b to have the first five", explain=report)
        b.stop()  # cleanly: it restarts at the end of the fifth batch
        for i in range(5):
            p.set(f"second:{i}", i)
        # The primary's feeder reads its WAL about every millisecond: let it send all ten.
        time.sleep(0.5)
    finally:
        os.kill(a.process.pid, signal.SIGCONT)
    wait_until(lambda: caught_up(primary, a), what="a to catch up", explain=report)
    assert a.client().execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    b.start()
    follow(b, a)
    wait_until(lambda: caught_up(a, b), what="b to continue from a", explain=report)
    stats = a.client().info("stats")
    assert stats["sync_partial_ok"] >= 1 and stats["sync_full"] == 0, report()
    assert digest(b) == digest(a)
    assert b.client().get("second:4") == b"4"
    with open(os.path.join(a.directory, "cairnd.log"), errors="replace") as f:
        assert "inside the batch at sequence" in f.read(), report()
