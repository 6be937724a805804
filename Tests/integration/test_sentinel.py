"""Redis Sentinel (Debian's redis-sentinel) managing a Cairn primary and two replicas.

Three sentinels watch the primary; it is killed with kill -9 under a write load from redis-py's
Sentinel client. A replica must be promoted, the other must follow it, the old primary must
rejoin as a replica when restarted, and every write that WAIT 1 acknowledged must be on the new
primary. Then a graceful SENTINEL FAILOVER must lose no acknowledged write at all.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest
import redis
from redis.sentinel import Sentinel

from conftest import Cairnd
from test_replication import caught_up, digest, free_port, info, replication_report, wait_until

SENTINEL = shutil.which("redis-sentinel")
pytestmark = pytest.mark.skipif(SENTINEL is None, reason="redis-sentinel is not installed (apt package redis-sentinel)")


class Node:
    """A cairnd with a fixed port and a config file (Sentinel's CONFIG REWRITE writes it)."""

    def __init__(self, replica_of=None):
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix="cairnd-sentinel-")
        self.config = os.path.join(self.directory, "cairn.conf")
        with open(self.config, "w") as f:
            f.write(f"port {self.port}\nappendfsync always\nrepl-timeout 5\n")
            if replica_of:
                f.write(f"replicaof 127.0.0.1 {replica_of}\n")
        self.server = Cairnd([self.config, "--port", str(self.port)], directory=self.directory)

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=10)


class SentinelProcess:
    def __init__(self, primary_port):
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix="sentinel-")
        conf = os.path.join(self.directory, "sentinel.conf")
        with open(conf, "w") as f:
            f.write(f"port {self.port}\nbind 127.0.0.1\ndir {self.directory}\n"
                    f"sentinel monitor cairn 127.0.0.1 {primary_port} 2\n"
                    "sentinel down-after-milliseconds cairn 1000\n"
                    "sentinel failover-timeout cairn 6000\n"
                    "sentinel parallel-syncs cairn 2\n")
        self.log = open(os.path.join(self.directory, "sentinel.log"), "wb")
        self.process = subprocess.Popen([SENTINEL, conf], stdout=self.log, stderr=self.log)

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=5, decode_responses=True)

    def stop(self):
        self.process.kill()
        self.process.wait()
        print(f"sentinel {self.port} log:\n" + open(os.path.join(self.directory, "sentinel.log"), errors="replace").read()[-3000:])
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def cluster():
    primary = Node()
    a = Node(replica_of=primary.port)
    b = Node(replica_of=primary.port)
    sentinels = [SentinelProcess(primary.port) for _ in range(3)]
    yield primary, a, b, sentinels
    for s in sentinels:
        s.stop()
    for n in (primary, a, b):
        n.server.cleanup()


class Writer(threading.Thread):
    """Writes w:0, w:1, ... through redis-py's Sentinel client, retrying across failovers.
    `acked` holds the indexes WAIT 1 confirmed; `ok` those the primary answered OK."""

    def __init__(self, sentinels, wait=True):
        super().__init__(daemon=True)
        self.sentinel = Sentinel([("127.0.0.1", s.port) for s in sentinels], socket_timeout=2)
        self.stop_event = threading.Event()
        self.acked, self.ok, self.failures = [], [], 0
        self.wait = wait

    def run(self):
        master = self.sentinel.master_for("cairn", socket_timeout=2, retry_on_timeout=False)
        i = 0
        while not self.stop_event.is_set():
            try:
                master.set(f"w:{i}", i)
                self.ok.append(i)
                if self.wait and master.execute_command("WAIT", 1, 1000) >= 1:
                    self.acked.append(i)
                i += 1
            except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError, redis.ResponseError):
                self.failures += 1
                time.sleep(0.1)

    def stop(self):
        self.stop_event.set()
        self.join(10)


def watching(cluster):
    """Waits until the replicas are linked and the sentinels see both and each other; the
    first sentinel's client."""
    primary, a, b, sentinels = cluster
    wait_until(lambda: caught_up(primary.server, a.server, b.server), what="replicas linked")
    s0 = sentinels[0].client()
    wait_until(lambda: int(s0.execute_command("SENTINEL", "master", "cairn")["num-slaves"]) == 2
               and int(s0.execute_command("SENTINEL", "master", "cairn")["num-other-sentinels"]) == 2,
               timeout=30, what="sentinels to see both replicas and each other")
    return s0


def primary_port(sentinel):
    return int(sentinel.client().execute_command("SENTINEL", "get-master-addr-by-name", "cairn")[1])


def test_sentinel_fails_over_a_killed_primary_and_loses_no_acknowledged_write(cluster):
    primary, a, b, sentinels = cluster
    s0 = watching(cluster)
    assert "s_down" not in s0.execute_command("SENTINEL", "master", "cairn")["flags"]
    writer = Writer(sentinels)
    writer.start()
    time.sleep(2)
    acked_before = len(writer.acked)
    assert acked_before > 10
    primary.server.stop(signal.SIGKILL)
    killed_at = time.time()
    wait_until(lambda: primary_port(sentinels[1]) != primary.port, timeout=40, what="sentinel to promote a replica")
    print(f"failover took {time.time() - killed_at:.1f} s")
    new = a if primary_port(sentinels[1]) == a.port else b
    other = b if new is a else a
    # The client keeps writing on the new primary.
    count = len(writer.ok)
    wait_until(lambda: len(writer.ok) > count + 20, timeout=20, what="writes on the new primary")
    writer.stop()
    assert info(new.server)["role"] == "master"
    # The other replica follows the new primary; the old one rejoins as a replica once restarted.
    report = lambda: replication_report(new_primary=new.server, other=other.server, old_primary=primary.server)
    wait_until(lambda: info(other.server).get("master_port") == new.port and info(other.server)["master_link_status"] == "up",
               timeout=30, what="the other replica to follow the new primary", explain=report)
    primary.server.start()
    restarted_at = time.time()
    # Sentinel converts a restarted old primary only once it has reported its role for 8 s
    # (SENTINEL_PUBLISH_PERIOD * 4): about 11 s here, on a loaded machine too.
    wait_until(lambda: info(primary.server).get("master_port") == new.port and info(primary.server)["master_link_status"] == "up",
               timeout=40, what="the old primary to rejoin as a replica", explain=report)
    print(f"the old primary rejoined {time.time() - restarted_at:.1f} s after its restart")
    # Every write WAIT 1 acknowledged before the kill is on the new primary.
    r = new.client()
    missing = [i for i in writer.acked if r.get(f"w:{i}") != str(i).encode()]
    assert not missing, f"{len(missing)} acknowledged writes lost: {missing[:10]}"
    wait_until(lambda: caught_up(new.server, other.server, primary.server), timeout=30, explain=report)
    assert digest(other.server) == digest(new.server) == digest(primary.server)
    # The roles are in the config files (each change of role writes the line, and Sentinel's
    # CONFIG REWRITE too), in redis-server's form.
    assert f"\nreplicaof 127.0.0.1 {new.port}\n" in open(other.config).read()
    assert f"\nreplicaof 127.0.0.1 {new.port}\n" in open(primary.config).read()
    assert not [line for line in open(new.config).read().splitlines() if line.startswith("replicaof") and line != 'replicaof ""']


def test_a_graceful_sentinel_failover_loses_no_acknowledged_write(cluster):
    primary, a, b, sentinels = cluster
    s0 = watching(cluster)
    writer = Writer(sentinels, wait=False)
    writer.start()
    time.sleep(1.5)
    assert s0.execute_command("SENTINEL", "FAILOVER", "cairn")
    wait_until(lambda: primary_port(sentinels[0]) != primary.port, timeout=30, what="the failover")
    new = a if primary_port(sentinels[0]) == a.port else b
    count = len(writer.ok)
    wait_until(lambda: len(writer.ok) > count + 20, timeout=20, what="writes on the new primary")
    writer.stop()
    wait_until(lambda: info(primary.server).get("master_port") == new.port and info(primary.server)["master_link_status"] == "up",
               timeout=40, what="the old primary to follow the new one",
               explain=lambda: replication_report(new_primary=new.server, old_primary=primary.server))
    r = new.client()
    missing = [i for i in writer.ok if r.get(f"w:{i}") != str(i).encode()]
    assert not missing, f"{len(missing)} of {len(writer.ok)} acknowledged writes lost: {missing[:10]}"


def roles(nodes):
    return [n.client().execute_command("ROLE")[0].decode() for n in nodes]


def test_after_a_graceful_failover_every_node_restarts_from_its_own_file_in_its_new_role(cluster):
    """The old primary follows its successor by itself, so Sentinel never rewrites its file:
    the node must record its new role itself, or a restart from its file brings back a second
    primary. Every node restarts from its own file with the sentinels gone: exactly one primary."""
    primary, a, b, sentinels = cluster
    s0 = watching(cluster)
    primary.client().set("before", "failover")
    assert s0.execute_command("SENTINEL", "FAILOVER", "cairn")
    wait_until(lambda: primary_port(sentinels[0]) != primary.port, timeout=30, what="the failover")
    new = a if primary_port(sentinels[0]) == a.port else b
    other = b if new is a else a
    wait_until(lambda: info(primary.server).get("master_port") == new.port and info(other.server).get("master_port") == new.port,
               timeout=40, what="both others to follow the new primary",
               explain=lambda: replication_report(new_primary=new.server, other=other.server, old_primary=primary.server))
    assert f"\nreplicaof 127.0.0.1 {new.port}\n" in open(primary.config).read()
    for s in sentinels:
        s.process.kill()
        s.process.wait()
    for n in (primary, a, b):
        n.server.stop()
    for n in (primary, a, b):
        n.server.start()
    assert sorted(roles([primary, a, b])) == ["master", "slave", "slave"]
    assert roles([new]) == ["master"]
    wait_until(lambda: caught_up(new.server, other.server, primary.server), timeout=30, what="the replicas to catch up again")
    assert primary.client().get("before") == b"failover"
