"""Fixtures that start the real cairnd binary on a free port with a fresh data directory.

CAIRND names the binary (scripts/test sets it); by default .build/debug/cairnd. CAIRN_CLI names
the cairn-cli binary the same way; by default .build/debug/cairn-cli.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import shutil

import pytest
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("CAIRND", os.path.join(ROOT, ".build", "debug", "cairnd"))
CLI = os.environ.get("CAIRN_CLI", os.path.join(ROOT, ".build", "debug", "cairn-cli"))
# The reference for the tests that compare with Redis (None: they skip).
REDIS_SERVER = shutil.which("redis-server")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server process on a free port, without persistence."""

    def __init__(self, *args):
        self.directory = tempfile.mkdtemp(prefix="cairn-redis-")
        self.port = free_port()
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", self.directory, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                redis.Redis(port=self.port).ping()
                return
            except redis.ConnectionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def client(self, **kwargs):
        return redis.Redis(port=self.port, socket_timeout=30, **kwargs)

    def stop(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


class Cairnd:
    """One cairnd process. `restart()` keeps the data directory."""

    def __init__(self, args=(), directory=None, preexec_fn=None):
        self.directory = directory or tempfile.mkdtemp(prefix="cairnd-it-")
        self.args = list(args)
        # Runs in the child before exec (e.g. to set resource limits).
        self.preexec_fn = preexec_fn
        self.process = None
        self.port = None
        self.start()

    def start(self):
        port_file = os.path.join(self.directory, "port")
        if os.path.exists(port_file):
            os.remove(port_file)
        self.log = open(os.path.join(self.directory, "cairnd.log"), "ab")
        self.process = subprocess.Popen(
            [BINARY, "--port", "0", "--dir", os.path.join(self.directory, "data"),
             "--port-file", port_file, "--log-level", "notice", *self.args],
            stdout=self.log, stderr=self.log, preexec_fn=self.preexec_fn)
        deadline = time.time() + 20
        while time.time() < deadline:
            if os.path.exists(port_file):
                text = open(port_file).read().strip()
                if text:
                    self.port = int(text)
                    return
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError("cairnd did not start:\n" + open(os.path.join(self.directory, "cairnd.log")).read())

    def client(self, **kwargs):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30, **kwargs)

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def restart(self):
        self.stop()
        self.start()

    def cleanup(self):
        if self.process and os.path.isdir(self.directory):
            # pytest shows this only with a failing test: how cairnd saw it.
            self.log.flush()
            with open(os.path.join(self.directory, "cairnd.log"), "rb") as f:
                tail = f.read()[-4000:].decode(errors="replace")
            status = "running" if self.process.poll() is None else f"exited with {self.process.returncode}"
            print(f"cairnd {status}; the end of its log:\n{tail}", file=sys.stderr)
        self.stop(signal.SIGKILL)
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    s = Cairnd()
    yield s
    s.cleanup()


@pytest.fixture
def fresh_server():
    servers = []

    def make(*args):
        s = Cairnd(args)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.cleanup()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(server, request):
    client = server.client(protocol=request.param)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def tmpfs_dir(request):
    """A fresh tmpfs, 64 MiB unless parametrized indirectly with another size."""
    size = getattr(request, "param", "64m")
    directory = tempfile.mkdtemp(prefix="cairnd-diskfull-")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", directory],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        os.rmdir(directory)
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mount.stderr.strip()}")
    yield directory
    subprocess.run(["umount", "-l", directory])
    os.rmdir(directory)


def resp_command(*args):
    """One request as RESP bytes (a multibulk of bulk strings), for raw sockets."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


@pytest.fixture(scope="module")
def servers():
    """A cairnd and a redis-server beside it, for the tests that compare their replies; one pair
    per test module."""
    cairn = Cairnd()
    reference = RedisServer()
    yield cairn, reference
    cairn.cleanup()
    reference.stop()


@pytest.fixture(scope="module", params=[2, 3], ids=["resp2", "resp3"])
def pair(request, servers):
    """Raw connections (every reply as it came) to `servers`' cairnd and redis-server, in RESP2
    and RESP3: for the tests that compare replies."""
    from test_geo import Raw
    cairn, reference = servers
    c, r = Raw(cairn.port, request.param), Raw(reference.port, request.param)
    yield c, r
    c.close()
    r.close()
