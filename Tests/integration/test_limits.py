"""Limits a stranger or an unlucky operator meets, against the real cairnd: request sizes and
failed logins before AUTH, CONFIG SET values the config file could not hold, and a descriptor
limit smaller than maxclients."""
import os
import resource
import socket
import subprocess
import threading
import time

import pytest
import redis

from conftest import Cairnd

MIB = 1024 * 1024


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def cpu_seconds(pid):
    """utime + stime of the process, in seconds (fields 14 and 15 of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connect(port, source="127.0.0.1", timeout=20):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_reply_line(sock):
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    return data


def recv_until_closed(sock, timeout=20):
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


# --- before AUTH -------------------------------------------------------------------------------


class Streamer(threading.Thread):
    """Sends `header`, then filler bytes until `limit` bytes or the server closes; keeps
    whatever the server answered."""

    def __init__(self, port, header, limit, filler=b"x" * 65536):
        super().__init__(daemon=True)
        self.sock = connect(port)
        self.header, self.limit, self.filler = header, limit, filler
        self.sent = 0
        self.closed_by_server = False

    def run(self):
        try:
            self.sock.sendall(self.header)
            deadline = time.monotonic() + 30
            while self.sent < self.limit and time.monotonic() < deadline:
                self.sock.sendall(self.filler)
                self.sent += len(self.filler)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.closed_by_server = True

    def reply(self):
        return recv_until_closed(self.sock, timeout=5)


def peak_rss_while(pid, threads):
    peak = rss_bytes(pid)
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_bytes(pid))
        time.sleep(0.02)
    return max(peak, rss_bytes(pid))


def test_unauthenticated_big_bulk_cannot_grow_memory(fresh_server):
    srv = fresh_server("--requirepass", "secret")
    pid = srv.process.pid
    time.sleep(1)
    baseline = rss_bytes(pid)
    # Each announces a 512 MB value and streams up to 256 MB of it.
    streamers = [Streamer(srv.port, b"*2\r\n$3\r\nSET\r\n$536870912\r\n", 256 * MIB) for _ in range(3)]
    for s in streamers:
        s.start()
    peak = peak_rss_while(pid, streamers)
    print(f"idle RSS {baseline / MIB:.1f} MiB, peak with 3 unauthenticated 512 MB bulks "
          f"{peak / MIB:.1f} MiB (+{(peak - baseline) / MIB:.1f} MiB); sent "
          f"{[round(s.sent / MIB) for s in streamers]} MiB")
    for s in streamers:
        assert s.reply().startswith(b"-ERR Protocol error: unauthenticated bulk length\r\n")
        assert s.sent < 256 * MIB, "the server kept reading instead of closing"
    assert peak - baseline < 64 * MIB
    # The server still serves, and a logged-in client may send big values.
    c = srv.client(password="secret")
    c.set("k", b"v" * (2 * MIB))
    assert len(c.get("k")) == 2 * MIB


def test_unauthenticated_multibulk_length_is_limited(fresh_server):
    srv = fresh_server("--requirepass", "secret")
    sock = connect(srv.port)
    sock.sendall(b"*11\r\n")
    assert recv_until_closed(sock) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    # AUTH and a long request in one write: the limits end with the AUTH.
    sock = connect(srv.port)
    sock.sendall(command("AUTH", "secret") + command("MSET", *(["k", "v"] * 20)) + command("SET", "big", b"v" * 100000))
    assert read_reply_line(sock) == b"+OK\r\n"
    assert read_reply_line(sock) == b"+OK\r\n"
    assert read_reply_line(sock) == b"+OK\r\n"
    # Without a password nothing changes.
    open_srv = fresh_server()
    sock = connect(open_srv.port)
    sock.sendall(command("MSET", *(["k", "v"] * 20)) + command("SET", "big", b"v" * 100000))
    assert read_reply_line(sock) == b"+OK\r\n"
    assert read_reply_line(sock) == b"+OK\r\n"


def test_unauthenticated_client_that_does_not_read_is_closed(fresh_server):
    srv = fresh_server("--requirepass", "secret")
    pid = srv.process.pid
    time.sleep(1)
    baseline = rss_bytes(pid)
    # Small requests, each answered with NOAUTH, never read: the replies back up, then the
    # unparsed requests would.
    streamers = [Streamer(srv.port, b"", 256 * MIB, filler=b"PING\r\n" * 10000) for _ in range(3)]
    for s in streamers:
        s.start()
    peak = peak_rss_while(pid, streamers)
    print(f"idle RSS {baseline / MIB:.1f} MiB, peak {peak / MIB:.1f} MiB; sent "
          f"{[round(s.sent / MIB) for s in streamers]} MiB")
    for s in streamers:
        assert s.closed_by_server and s.sent < 256 * MIB
    assert peak - baseline < 64 * MIB


def test_failed_auth_is_limited_server_wide(fresh_server):
    srv = fresh_server("--requirepass", "secret",
                       "--set", "auth-max-failures=5", "--set", "auth-max-failures-total=20")
    wrong = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    per_address = b"-WRONGPASS too many failed AUTH attempts from this address; try again in a minute\r\n"
    server_wide = b"-WRONGPASS too many failed AUTH attempts on this server (auth-max-failures-total); try again in a minute\r\n"
    checked = 0
    replies = []
    for host in range(2, 12):
        sock = connect(srv.port, source=f"127.0.0.{host}")
        for _ in range(6):
            sock.sendall(command("AUTH", "guess"))
            reply = read_reply_line(sock)
            replies.append(reply)
            checked += reply == wrong
        sock.close()
    print(f"10 addresses, 60 guesses: {checked} checked")
    assert set(replies) <= {wrong, per_address, server_wide}
    # The first address met its own limit; then the server's limit held across addresses.
    assert replies[:6] == [wrong] * 5 + [per_address]
    assert checked == 20
    assert replies[-1] == server_wide
    # Until the minute is over, even the right password from a fresh address is refused...
    sock = connect(srv.port, source="127.0.0.99")
    sock.sendall(command("AUTH", "secret"))
    assert read_reply_line(sock) == server_wide
    # ...while a client logged in before goes on.
    srv2 = fresh_server("--requirepass", "secret", "--set", "auth-max-failures-total=3")
    c = srv2.client(password="secret")
    assert c.ping() is True
    for host in range(2, 6):
        sock = connect(srv2.port, source=f"127.0.0.{host}")
        sock.sendall(command("AUTH", "guess"))
        read_reply_line(sock)
    assert c.ping() is True
    assert c.config_get("auth-max-failures-total") == {"auth-max-failures-total": "3"}


# --- CONFIG SET validates as the config file does -----------------------------------------------


def config_set_error(c, *args):
    with pytest.raises(redis.ResponseError) as e:
        c.execute_command("CONFIG", "SET", *args)
    return str(e.value)


def test_config_set_refuses_what_config_rewrite_cannot_write_back(fresh_server, tmp_path):
    conf = tmp_path / "cairn.conf"
    conf.write_text("loglevel notice\ntimeout 0\n")
    srv = fresh_server(str(conf))
    c = srv.client(decode_responses=True)
    levels = "debug, verbose, notice, warning, nothing, trace, info, error"
    control = "argument must not contain control characters such as newlines (the config file could not hold it)"
    refused = [
        (("loglevel", "bogus"), f"CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: {levels}"),
        (("loglevel", "notice\nrequirepass x"), f"CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: {levels}"),
        (("requirepass", "pass\nword"), f"CONFIG SET failed (possibly related to argument 'requirepass') - {control}"),
        (("backup-dir", "/tmp/b\r"), f"CONFIG SET failed (possibly related to argument 'backup-dir') - {control}"),
        (("proto-max-bulk-len", "0"), "CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive"),
        (("client-query-buffer-limit", "100"), "CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 9223372036854775807 inclusive"),
        (("maxclients", "0"), "CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"),
        (("appendfsync", "sometimes"), "CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: always, everysec, no"),
        (("timeout", "soon"), "CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"),
        # Several at once: all or none.
        (("timeout", "100", "loglevel", "bogus"), f"CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: {levels}"),
        (("timeout", "100", "timeout", "200"), "CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter"),
    ]
    before = c.config_get("*")
    for args, error in refused:
        assert config_set_error(c, *args) == error, args
    assert c.config_get("*") == before
    # New clients still get in, and still may send ordinary values.
    c2 = srv.client()
    c2.set("k", b"v" * 1000)
    assert c2.get("k") == b"v" * 1000

    # What it accepts, CONFIG REWRITE writes back and the server starts from.
    assert c.config_set("requirepass", "a 'quoted' \"pass\" #word") is True
    assert c.execute_command("CONFIG", "SET", "loglevel", "WARNING", "timeout", "100", "proto-max-bulk-len", "1mb") == "OK"
    assert c.execute_command("AUTH", "a 'quoted' \"pass\" #word") is True
    assert c.execute_command("CONFIG", "REWRITE") == "OK"
    c.close()
    c2.close()
    srv.restart()
    c = srv.client(decode_responses=True, password="a 'quoted' \"pass\" #word")
    got = c.config_get("*")
    # (The fixture's --log-level flag overrides the file's loglevel.)
    assert "\nloglevel warning\n" in conf.read_text()
    assert got["timeout"] == "100"
    assert got["proto-max-bulk-len"] == str(1024 * 1024)


def test_config_file_and_flags_refuse_the_same_values(fresh_server, tmp_path):
    for line in ["loglevel bogus", "proto-max-bulk-len 0", "maxclients 0", "compression rar"]:
        conf = tmp_path / "bad.conf"
        conf.write_text(line + "\n")
        with pytest.raises(RuntimeError) as e:
            fresh_server(str(conf))
        assert "config line 1: bad value" in str(e.value), str(e.value)
        name, value = line.split(" ", 1)
        with pytest.raises(RuntimeError) as e:
            fresh_server("--set", f"{name}={value}")
        assert f"bad value '{value}' for {name}: argument" in str(e.value), str(e.value)


# --- a descriptor limit below maxclients --------------------------------------------------------


def fd_limit(n):
    """For preexec_fn: soft and hard RLIMIT_NOFILE of n, so cairnd cannot raise it."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


@pytest.fixture
def limited_server():
    servers = []

    def make(*args, limit=256):
        s = Cairnd(args, preexec_fn=fd_limit(limit))
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.cleanup()


def log_text(srv):
    srv.log.flush()
    with open(os.path.join(srv.directory, "cairnd.log"), "rb") as f:
        return f.read().decode(errors="replace")


def open_many(port, count):
    """`count` connections, each sending PING; returns their first reply line (b"" if none)."""
    socks, replies = [], []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"PING\r\n")
        socks.append(s)
    deadline = time.monotonic() + 20  # for all of them: a hung one must not hold each 10 s
    for s in socks:
        try:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            replies.append(read_reply_line(s))
        except (ConnectionResetError, socket.timeout) as e:
            replies.append(repr(e).encode())
    return socks, replies


def test_maxclients_is_lowered_to_fit_the_descriptor_limit(limited_server):
    srv = limited_server(limit=256)
    assert "maxclients has been reduced to" in log_text(srv)
    existing = srv.client(decode_responses=True)
    maxclients = int(existing.config_get("maxclients")["maxclients"])
    assert 1 <= maxclients <= 256 - 32
    socks, replies = open_many(srv.port, 300)
    pongs = replies.count(b"+PONG\r\n")
    refused = replies.count(b"-ERR max number of clients reached\r\n")
    print(f"ulimit -n 256: maxclients {maxclients}; 300 connections: {pongs} served, {refused} refused")
    assert pongs == maxclients - 1
    assert refused == 300 - pongs
    # The refused ones are closed, not left waiting.
    for s, reply in zip(socks, replies):
        if reply.startswith(b"-ERR"):
            # (A reset, as the server closed with our PING unread, also says closed.)
            assert recv_until_closed(s, timeout=10) == b""
    assert existing.ping() is True
    for s in socks:
        s.close()


def test_out_of_descriptors_at_accept_does_not_spin(limited_server):
    srv = limited_server(limit=256)
    pid = srv.process.pid
    existing = srv.client(decode_responses=True)
    # Above what the descriptors can hold: accept itself runs out (EMFILE).
    assert existing.config_set("maxclients", 10000) is True
    log_before = len(log_text(srv))
    cpu_before = cpu_seconds(pid)
    started = time.monotonic()
    socks, replies = open_many(srv.port, 400)
    pongs = replies.count(b"+PONG\r\n")
    refused = replies.count(b"-ERR max number of clients reached\r\n")
    # Keep them all open a while: nothing more should happen on the server.
    time.sleep(3)
    assert existing.ping() is True
    cpu = cpu_seconds(pid) - cpu_before
    elapsed = time.monotonic() - started
    log_growth = len(log_text(srv)) - log_before
    print(f"400 connections past the descriptor limit: {pongs} served, {refused} refused; "
          f"cairnd CPU {cpu:.2f} s in {elapsed:.1f} s ({100 * cpu / elapsed:.0f}% of a core); "
          f"log grew {log_growth} bytes")
    assert pongs + refused == 400, set(replies)
    assert refused > 0
    assert cpu < 0.3 * elapsed
    assert log_growth < 16 * 1024
    assert "out of file descriptors" in log_text(srv)
    for s in socks:
        s.close()
    # Once descriptors are free again, new clients get in.
    time.sleep(0.5)
    c = srv.client()
    assert c.ping() is True
