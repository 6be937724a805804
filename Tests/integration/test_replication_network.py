"""A primary and a replica on two hosts, simulated as network namespaces joined through the
root namespace by veth pairs (ip netns). The replica's link is cut for 10 s under a write
load; once it heals, the replica must catch up with a partial sync and hold the primary's data.
"""
import os
import shutil
import subprocess
import threading
import time
import uuid

import pytest
import redis

import conftest
from conftest import Cairnd
from test_replication import caught_up, digest, info, wait_until

IP = shutil.which("ip")


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


class Host:
    """One namespace with a veth to the root namespace: `address` inside, `gateway` outside."""

    def __init__(self, name, subnet):
        self.name = name
        self.outside = f"{name[:6]}o"
        self.inside = f"{name[:6]}i"
        self.gateway = f"10.{subnet}.0.1"
        self.address = f"10.{subnet}.0.2"
        sh(IP, "netns", "add", name)
        sh(IP, "link", "add", self.outside, "type", "veth", "peer", "name", self.inside)
        sh(IP, "link", "set", self.inside, "netns", name)
        sh(IP, "addr", "add", f"{self.gateway}/24", "dev", self.outside)
        sh(IP, "link", "set", self.outside, "up")
        sh(IP, "netns", "exec", name, "ip", "addr", "add", f"{self.address}/24", "dev", self.inside)
        sh(IP, "netns", "exec", name, "ip", "link", "set", self.inside, "up")
        sh(IP, "netns", "exec", name, "ip", "link", "set", "lo", "up")
        sh(IP, "netns", "exec", name, "ip", "route", "add", "default", "via", self.gateway)

    def cut(self, down):
        sh(IP, "link", "set", self.outside, "down" if down else "up")

    def remove(self):
        subprocess.run([IP, "link", "del", self.outside], capture_output=True)
        subprocess.run([IP, "netns", "del", self.name], capture_output=True)


class NamespacedCairnd(Cairnd):
    def __init__(self, host, args):
        self.host = host
        super().__init__(args)

    def start(self):
        real = conftest.BINARY
        wrapper = os.path.join(self.directory, "in-namespace")
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\nexec {IP} netns exec {self.host.name} {real} \"$@\"\n")
        os.chmod(wrapper, 0o755)
        conftest.BINARY = wrapper
        try:
            super().start()
        finally:
            conftest.BINARY = real

    def client(self, **kwargs):
        return redis.Redis(host=self.host.address, port=self.port, socket_timeout=5, **kwargs)


@pytest.fixture
def hosts():
    if os.geteuid() != 0 or IP is None:
        pytest.skip("needs root and iproute2 for network namespaces")
    forward = open("/proc/sys/net/ipv4/ip_forward").read().strip()
    tag = uuid.uuid4().hex[:4]
    made = []
    probe = subprocess.run([IP, "netns", "add", f"cx{tag}"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make network namespaces here: {probe.stderr.strip()}")
    subprocess.run([IP, "netns", "del", f"cx{tag}"], capture_output=True)
    with open("/proc/sys/net/ipv4/ip_forward", "w") as f:
        f.write("1")
    try:
        made.append(Host(f"cp{tag}", 91))
        made.append(Host(f"cr{tag}", 92))
    except subprocess.CalledProcessError as e:
        for h in made:
            h.remove()
        raise AssertionError(f"setting up the namespaces failed: {e.cmd}: {e.stderr}")
    yield made
    for h in made:
        h.remove()
    with open("/proc/sys/net/ipv4/ip_forward", "w") as f:
        f.write(forward)


def test_a_replica_cut_off_for_ten_seconds_catches_up_with_a_partial_sync(hosts):
    p_host, r_host = hosts
    primary = NamespacedCairnd(p_host, ["--bind", p_host.address, "--set", "repl-timeout=4"])
    replica = NamespacedCairnd(r_host, ["--bind", r_host.address, "--set", "repl-timeout=4"])
    try:
        assert replica.client().execute_command("REPLICAOF", p_host.address, primary.port) == b"OK"
        wait_until(lambda: caught_up(primary, replica), what="the replica to link")
        stop, written, errors = threading.Event(), [0], []

        def load():
            r = primary.client()
            try:
                while not stop.is_set():
                    p = r.pipeline(transaction=False)
                    for i in range(20):
                        p.set(f"n:{written[0]}:{i}", written[0])
                    p.incr("counter")
                    p.execute()
                    written[0] += 1
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        t = threading.Thread(target=load)
        t.start()
        time.sleep(1)
        r_host.cut(True)
        cut_at = written[0]
        time.sleep(10)
        assert written[0] > cut_at, "the primary stopped taking writes while its replica was cut off"
        assert info(primary)["connected_slaves"] == 0  # dropped after repl-timeout
        r_host.cut(False)
        time.sleep(2)
        stop.set()
        t.join()
        assert not errors, errors
        wait_until(lambda: caught_up(primary, replica), timeout=60, what="the replica to catch up")
        stats = primary.client().info("stats")
        assert stats["sync_full"] == 1 and stats["sync_partial_ok"] >= 1, stats
        assert digest(replica) == digest(primary)
    finally:
        primary.cleanup()
        replica.cleanup()
