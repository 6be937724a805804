"""Operator tools through redis-py, RESP2 and RESP3, against the real cairnd: SLOWLOG, LATENCY,
INFO commandstats/errorstats/latencystats and the other fields exporters read, MONITOR, CONFIG.

Every executor (a request alone, a run of GETs read as one MultiGet, plain writes batched
across clients, EXEC's commands, the long queue) must feed the slow log, the statistics and
MONITOR the same way, so most tests drive each of them."""
import os
import re
import socket
import time

import pytest
import redis

from conftest import Cairnd, resp_command


@pytest.fixture
def slowlog_all(r):
    """Every request goes to the slow log while the test runs."""
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    yield r
    r.config_set("slowlog-log-slower-than", 10000)
    r.config_set("slowlog-max-len", 128)
    r.slowlog_reset()


def raw_slowlog(r, count=-1):
    """SLOWLOG GET without redis-py's parsing: [id, time, usec, argv, addr, name] entries."""
    reply = r.execute_command("SLOWLOG", "GET", count, **{"NEVER_DECODE": True})
    return reply


# MARK: SLOWLOG

def test_slowlog_records_every_path(slowlog_all):
    r = slowlog_all
    r.client_setname("logger")
    r.set("alone", "1", ex=100)           # SET with options: alone
    r.get("alone")                         # a single GET (alone)
    p = r.pipeline(transaction=False)
    for i in range(5):
        p.get(f"g{i}")                     # a run of GETs: one MultiGet
    for i in range(5):
        p.set(f"s{i}", i)                  # plain SETs: the grouped write batch
    p.incr("counter")
    p.execute()
    with r.pipeline(transaction=True) as tx:  # MULTI/EXEC: each queued command, not EXEC
        tx.set("tx", "1")
        tx.get("tx")
        tx.execute()
    entries = raw_slowlog(r)
    argvs = [[a.decode() for a in e[3]] for e in entries]
    for want in (["SET", "alone", "1", "EX", "100"], ["GET", "alone"], ["GET", "g0"], ["GET", "g4"],
                 ["SET", "s0", "0"], ["SET", "s4", "4"], ["INCRBY", "counter", "1"], ["MULTI"],
                 ["SET", "tx", "1"], ["GET", "tx"]):
        assert want in argvs, f"{want} missing from the slow log: {argvs}"
    assert ["EXEC"] not in argvs, "EXEC is not logged (skip_slowlog), its commands are"
    newest = entries[0]
    ids = [e[0] for e in entries]
    assert ids == sorted(ids, reverse=True), "newest first"
    assert abs(newest[1] - time.time()) < 60
    assert newest[2] >= 0
    assert re.fullmatch(rb"127\.0\.0\.1:\d+", newest[4])
    assert entries[[a for a in argvs].index(["GET", "alone"])][5] == b"logger"
    assert r.slowlog_len() == len(entries) + 1, "and the SLOWLOG GET itself"


def test_slowlog_trims_arguments_as_redis(slowlog_all):
    r = slowlog_all
    r.execute_command("DEL", *[f"k{i}" for i in range(40)])
    r.set("big", "a" * 200)
    entries = raw_slowlog(r, 3)
    big = [a for a in entries if a[3][0] == b"SET"][0][3]
    assert big == [b"SET", b"big", b"a" * 128 + b"... (72 more bytes)"]
    many = [a for a in entries if a[3][0] == b"DEL"][0][3]
    assert len(many) == 32
    assert many[:31] == [b"DEL"] + [f"k{i}".encode() for i in range(30)]
    assert many[31] == b"... (10 more arguments)"


def test_slowlog_redacts_passwords(slowlog_all):
    r = slowlog_all
    with pytest.raises(redis.RedisError):
        r.execute_command("AUTH", "nobody", "secret")
    argvs = [e[3] for e in raw_slowlog(r, 5)]
    assert [b"AUTH", b"(redacted)", b"(redacted)"] in argvs
    assert not any(b"secret" in a for argv in argvs for a in argv)


def test_slowlog_len_reset_max_len_and_threshold(slowlog_all):
    r = slowlog_all
    for i in range(10):
        r.set(f"k{i}", i)
    assert r.slowlog_len() >= 10
    assert len(raw_slowlog(r, 3)) == 3
    assert len(raw_slowlog(r, 0)) == 0
    assert len(r.execute_command("SLOWLOG", "GET")) == 10, "10 entries by default"
    r.config_set("slowlog-max-len", 5)
    assert r.slowlog_len() == 5, "shortening the log drops the oldest"
    r.get("x")
    assert r.slowlog_len() == 5
    assert r.slowlog_reset() is True
    r.config_set("slowlog-log-slower-than", -1)
    r.slowlog_reset()
    r.get("x")
    assert r.slowlog_len() == 0, "negative disables the log"
    r.config_set("slowlog-log-slower-than", 10_000_000)
    r.get("x")
    assert r.slowlog_len() == 0, "nothing is that slow"


def test_slowlog_errors_and_help(r):
    for bad in ("-2", "abc"):
        with pytest.raises(redis.ResponseError, match=r"^count should be greater than or equal to -1$"):
            r.execute_command("SLOWLOG", "GET", bad)
    with pytest.raises(redis.ResponseError, match=r"wrong number of arguments for 'slowlog\|len' command"):
        r.execute_command("SLOWLOG", "LEN", "x")
    with pytest.raises(redis.ResponseError, match=r"unknown subcommand 'FOO'. Try SLOWLOG HELP."):
        r.execute_command("SLOWLOG", "FOO")
    help_lines = r.execute_command("SLOWLOG", "HELP")
    text = [l.decode() if isinstance(l, bytes) else l for l in help_lines]
    assert text[0] == "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert "LEN" in text and text[-2:] == ["HELP", "    Prints this help."]


# MARK: INFO statistics

def stat(r, name):
    return r.info("commandstats").get(f"cmdstat_{name}", {"calls": 0, "rejected_calls": 0, "failed_calls": 0, "usec": 0})


def test_commandstats_count_every_path(r):
    r.config_resetstat()
    r.set("a", "1", nx=True)                  # alone
    p = r.pipeline(transaction=False)
    for i in range(8):
        p.get(f"k{i}")                        # grouped read
    for i in range(8):
        p.set(f"k{i}", i)                     # grouped write
    p.execute()
    with r.pipeline(transaction=True) as tx:  # EXEC's commands
        tx.get("a")
        tx.set("b", 2)
        tx.execute()
    assert stat(r, "set")["calls"] == 10
    assert stat(r, "get")["calls"] == 9
    assert stat(r, "exec")["calls"] == 1 and stat(r, "multi")["calls"] == 1
    s = stat(r, "set")
    assert s["usec"] >= 0 and s["usec_per_call"] >= 0
    assert s["rejected_calls"] == 0 and s["failed_calls"] == 0


def test_commandstats_rejected_and_failed_calls_and_errorstats(r):
    r.config_resetstat()
    with pytest.raises(redis.ResponseError):
        r.execute_command("GET")                       # arity: rejected
    r.set("text", "abc")
    with pytest.raises(redis.ResponseError):
        r.incr("text")                                 # ran and failed
    p = r.pipeline(transaction=False)
    p.incr("text")                                     # failed on the grouped write path
    p.incr("n")
    p.execute(raise_on_error=False)
    with pytest.raises(redis.ResponseError):
        r.execute_command("NOSUCHCOMMAND")             # unknown: no cmdstat, an error
    with pytest.raises(redis.ResponseError):
        r.execute_command("CONFIG", "GET")             # a subcommand's arity: rejected
    with pytest.raises(redis.ResponseError):
        r.execute_command("CONFIG", "FOO")             # an unknown subcommand: no cmdstat
    assert stat(r, "config|get")["rejected_calls"] == 1
    assert "cmdstat_config" not in r.info("commandstats")
    assert stat(r, "get")["rejected_calls"] == 1
    assert stat(r, "get")["calls"] == 0
    incr = r.info("commandstats")
    failed = sum(v["failed_calls"] for k, v in incr.items() if k in ("cmdstat_incr", "cmdstat_incrby"))
    assert failed == 2
    errors = r.info("errorstats")
    assert errors["errorstat_ERR"]["count"] == 6
    r.config_resetstat()
    assert "errorstat_ERR" not in r.info("errorstats")


def raw_info(r, section):
    """INFO's text as the server wrote it (redis-py parses INFO into a dict)."""
    kwargs = r.connection_pool.connection_kwargs
    with socket.create_connection((kwargs["host"], kwargs["port"])) as sock:
        sock.sendall(resp_command("INFO", section))
        data = b""
        while b"\r\n" not in data:
            data += sock.recv(65536)
        header, rest = data.split(b"\r\n", 1)
        length = int(header[1:])
        while len(rest) < length + 2:
            rest += sock.recv(65536)
        return rest[:length].decode()


def test_latencystats_and_histogram(r):
    r.config_resetstat()
    for i in range(20):
        r.set(f"k{i}", i)
        r.get(f"k{i}")
    stats = r.info("latencystats")
    get = stats["latency_percentiles_usec_get"]
    assert set(get) == {"p50", "p99", "p99.9"}
    assert 0 < get["p50"] <= get["p99"] <= get["p99.9"]
    text = raw_info(r, "latencystats")
    assert re.search(r"^latency_percentiles_usec_set:p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}\r?$", text, re.M)
    hist = r.execute_command("LATENCY", "HISTOGRAM", "set", "get", "nosuch")
    if isinstance(hist, list):
        hist = dict(zip(hist[::2], hist[1::2]))
    assert set(hist) == {b"set", b"get"}
    entry = hist[b"get"]
    if isinstance(entry, list):
        entry = dict(zip(entry[::2], entry[1::2]))
    assert entry[b"calls"] == 20
    buckets = entry[b"histogram_usec"]
    if isinstance(buckets, list):
        buckets = dict(zip(buckets[::2], buckets[1::2]))
    keys = list(buckets)
    assert all(k & (k - 1) == 0 for k in keys), "power-of-two microsecond buckets"
    assert list(buckets.values()) == sorted(buckets.values()) and buckets[keys[-1]] == 20, "cumulative"
    everything = r.execute_command("LATENCY", "HISTOGRAM")
    assert len(everything) >= 2


def test_info_fields_operators_and_exporters_read(r):
    info = r.info("everything")
    assert re.fullmatch(r"[0-9a-f]{40}", info["run_id"])
    assert info["cluster_enabled"] == 0
    for field in ("used_memory", "used_memory_peak", "used_memory_rss", "mem_fragmentation_ratio",
                  "maxmemory", "maxmemory_policy", "instantaneous_ops_per_sec", "instantaneous_input_kbps",
                  "instantaneous_output_kbps", "total_net_input_bytes", "total_net_output_bytes"):
        assert field in info, field
    assert info["used_memory_peak"] >= info["used_memory"] > 0
    assert info["maxmemory_policy"] == "noeviction"
    # Load for a second: the instantaneous rate follows (sampled ten times a second).
    deadline = time.time() + 1.2
    p = r.pipeline(transaction=False)
    while time.time() < deadline:
        for i in range(50):
            p.get("x")
        p.execute()
    stats = r.info("stats")
    assert stats["instantaneous_ops_per_sec"] > 0
    assert stats["instantaneous_input_kbps"] > 0 and stats["instantaneous_output_kbps"] > 0
    assert "cmdstat_get" not in r.info(), "commandstats only with all/everything, as Redis"
    assert "errorstat_ERR" in r.info() or True


# MARK: LATENCY

def test_latency_monitor_records_slow_commands(r):
    r.latency_reset()
    r.config_set("latency-monitor-threshold", 1)
    try:
        r.mset({f"lat:{i}": "v" * 100 for i in range(20000)})
        for _ in range(3):
            r.keys("lat:*")                              # the long queue; well over 1 ms
        latest = r.execute_command("LATENCY", "LATEST")
        names = [e[0] for e in latest]
        assert b"command" in names or "command" in names
        event = [e for e in latest if e[0] in (b"command", "command")][0]
        assert abs(event[1] - time.time()) < 60 and event[2] >= 1 and event[3] >= event[2]
        history = r.execute_command("LATENCY", "HISTORY", "command")
        assert len(history) >= 1 and all(len(s) == 2 and s[1] >= 1 for s in history)
        assert r.execute_command("LATENCY", "HISTORY", "nosuch") == []
        doctor = r.execute_command("LATENCY", "DOCTOR")
        doctor = doctor.decode() if isinstance(doctor, bytes) else str(doctor)
        assert "command: " in doctor and "latency spikes" in doctor
        assert r.execute_command("LATENCY", "RESET", "nosuch") == 0
        assert r.execute_command("LATENCY", "RESET", "command") == 1
        assert r.execute_command("LATENCY", "LATEST") == []
    finally:
        r.config_set("latency-monitor-threshold", 0)
    r.latency_reset()
    r.keys("lat:*")
    assert r.execute_command("LATENCY", "LATEST") == [], "threshold 0: the monitor is off"


def test_latency_errors_and_help(r):
    with pytest.raises(redis.ResponseError, match=r"unknown subcommand 'FOO'. Try LATENCY HELP."):
        r.execute_command("LATENCY", "FOO")
    with pytest.raises(redis.ResponseError, match=r"wrong number of arguments for 'latency\|history' command"):
        r.execute_command("LATENCY", "HISTORY")
    text = [l.decode() if isinstance(l, bytes) else l for l in r.execute_command("LATENCY", "HELP")]
    assert text[0].startswith("LATENCY <subcommand>") and "LATEST" in text


# MARK: MONITOR

MONITOR_LINE = re.compile(rb'^\+(\d{10})\.(\d{6}) \[0 127\.0\.0\.1:\d+\] (.*)$')


class Monitor:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(resp_command("MONITOR"))
        self.buffer = b""
        assert self.line() == b"+OK"

    def line(self, timeout=5):
        deadline = time.time() + timeout
        while b"\r\n" not in self.buffer:
            self.sock.settimeout(max(0.01, deadline - time.time()))
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("monitor closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def commands(self, count):
        out = []
        for _ in range(count):
            m = MONITOR_LINE.match(self.line())
            assert m, "Redis's monitor line format"
            assert abs(int(m.group(1)) - time.time()) < 60
            out.append(m.group(3))
        return out

    def close(self):
        self.sock.close()


def test_monitor_shows_every_path_in_redis_format(server, r):
    mon = Monitor(server.port)
    try:
        r.set("k", 'a b"c\n\x01')                       # grouped write, quoted as sdscatrepr
        r.get("k")
        p = r.pipeline(transaction=False)
        p.get("g1")
        p.get("g2")                                    # one MultiGet
        p.execute()
        with r.pipeline(transaction=True) as tx:
            tx.incr("n")
            tx.execute()
        r.keys("nothing:*")                            # the long queue
        r.config_get("maxmemory")                      # admin: not shown
        with socket.create_connection(("127.0.0.1", server.port)) as other:
            other.sendall(resp_command("AUTH", "someone", "secret"))
            assert other.recv(1000).startswith(b"-WRONGPASS")
        r.echo("last")
        seen = mon.commands(10)
        assert seen == [
            b'"SET" "k" "a b\\"c\\n\\x01"',
            b'"GET" "k"',
            b'"GET" "g1"',
            b'"GET" "g2"',
            b'"MULTI"',
            b'"INCRBY" "n" "1"',
            b'"EXEC"',
            b'"KEYS" "nothing:*"',
            b'"AUTH" "(redacted)" "(redacted)"',
            b'"ECHO" "last"',
        ]
    finally:
        mon.close()


def test_slow_monitor_is_disconnected_not_waited_for(fresh_server):
    s = fresh_server("--set", "client-output-buffer-limit=normal 1mb 0 0")
    sock = socket.create_connection(("127.0.0.1", s.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(resp_command("MONITOR"))
    time.sleep(0.2)
    c = s.client()
    value = "x" * 50_000
    started = time.time()
    p = c.pipeline(transaction=False)
    for i in range(400):                                # 20 MB of monitor lines, never read
        p.set(f"k{i}", value)
    p.execute()
    assert time.time() - started < 20
    assert c.get("k399") == value.encode(), "the writer was served"
    time.sleep(0.3)
    clients = c.client_list()
    assert len(clients) == 1, "the monitor that did not read was disconnected"
    sock.close()


# MARK: CONFIG

def test_config_set_several_options_at_once(r):
    try:
        assert r.execute_command("CONFIG", "SET", "timeout", "70", "maxmemory", "100") in (b"OK", "OK", True)
        assert r.config_get("timeout") == {"timeout": "70"}
        assert r.config_get("maxmemory") == {"maxmemory": "100"}
        assert r.info("memory")["maxmemory"] == 100
        with pytest.raises(redis.ResponseError, match=r"Unknown option or number of arguments for CONFIG SET - 'nosuch'"):
            r.execute_command("CONFIG", "SET", "timeout", "5", "nosuch", "1")
        assert r.config_get("timeout") == {"timeout": "70"}, "all or nothing"
        with pytest.raises(redis.ResponseError, match=r"CONFIG SET failed \(possibly related to argument 'maxmemory'\) - argument must be a memory value"):
            r.execute_command("CONFIG", "SET", "timeout", "5", "maxmemory", "lots")
        assert r.config_get("timeout") == {"timeout": "70"}, "all or nothing"
        with pytest.raises(redis.ResponseError, match="duplicate parameter"):
            r.execute_command("CONFIG", "SET", "timeout", "5", "timeout", "6")
    finally:
        r.execute_command("CONFIG", "SET", "timeout", "0", "maxmemory", "0")


def test_config_set_of_the_fixed_options(r):
    # The line harnesses start with: taken, as the value it already has.
    assert r.config_set("save", "") is True and r.config_get("save") == {"save": ""}
    assert r.execute_command("CONFIG", "SET", "save", "", "timeout", "0") in (b"OK", "OK", True)
    assert r.config_set("appendonly", "YES") is True and r.config_get("appendonly") == {"appendonly": "yes"}
    with pytest.raises(redis.ResponseError, match=r"CONFIG SET failed \(possibly related to argument 'save'\) - Cairn takes no RDB snapshots"):
        r.config_set("save", "3600 1")
    with pytest.raises(redis.ResponseError, match=r"CONFIG SET failed \(possibly related to argument 'appendonly'\) - Cairn's WAL is its append-only log"):
        r.config_set("appendonly", "no")
    with pytest.raises(redis.ResponseError, match=r"^CONFIG SET failed \(possibly related to argument 'databases'\) - can't set immutable config$"):
        r.config_set("databases", "1")
    assert r.config_get("save") == {"save": ""} and r.config_get("appendonly") == {"appendonly": "yes"}


def test_maxmemory_policy_is_noeviction(r):
    assert r.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    r.config_set("maxmemory-policy", "noeviction")
    with pytest.raises(redis.ResponseError, match=r"never evicts keys: only noeviction is supported"):
        r.config_set("maxmemory-policy", "allkeys-lru")
    with pytest.raises(redis.ResponseError, match=r"argument\(s\) must be one of the following: volatile-lru"):
        r.config_set("maxmemory-policy", "sometimes")


def test_config_get_star_lists_every_option(r):
    everything = r.config_get("*")
    for name in ("port", "dir", "timeout", "maxmemory", "maxmemory-policy", "slowlog-log-slower-than",
                 "slowlog-max-len", "latency-monitor-threshold", "appendfsync", "save", "appendonly",
                 "block-cache-size", "client-output-buffer-limit"):
        assert name in everything, name
    assert set(r.config_get("maxmemory*")) == {"maxmemory", "maxmemory-policy"}
    assert set(r.config_get("slowlog-*")) == {"slowlog-log-slower-than", "slowlog-max-len"}
    assert r.config_get("s?ve") == {"save": ""}
    assert set(r.config_get("[ab]ppend*")) >= {"appendfsync", "appendonly"}


# MARK: MEMORY and OBJECT

def test_memory_usage(r):
    r.set("k", "hello")
    # key (1) + stored value (5 bytes and its 2-byte header) + the per-entry overhead (16)
    assert r.memory_usage("k") == 1 + 7 + 16
    r.set("k", "hello", ex=100)
    assert r.memory_usage("k") > 1 + 7 + 16, "an expiry is stored in the header"
    r.set("big", "x" * 10_000)
    assert 10_000 < r.memory_usage("big") < 10_100
    assert r.memory_usage("big", samples=0) == r.memory_usage("big")
    assert r.memory_usage("missing") is None
    with pytest.raises(redis.ResponseError, match=r"^value is not an integer or out of range$"):
        r.execute_command("MEMORY", "USAGE", "k", "SAMPLES", "x")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("MEMORY", "USAGE", "k", "FOO")
    with pytest.raises(redis.ResponseError, match=r"wrong number of arguments for 'memory\|usage' command"):
        r.execute_command("MEMORY", "USAGE")


def test_memory_stats_doctor_help_purge(r):
    stats = r.memory_stats()
    for field in ("peak.allocated", "total.allocated", "startup.allocated", "keys.count", "dataset.bytes",
                  "rocksdb.memtables", "rocksdb.block-cache", "fragmentation"):
        assert field in stats, field
    assert stats["peak.allocated"] >= stats["total.allocated"] > 0
    doctor = r.execute_command("MEMORY", "DOCTOR")
    doctor = doctor.decode() if isinstance(doctor, bytes) else str(doctor)
    assert doctor.startswith("Hi Sam") or doctor.startswith("Sam,")
    assert r.memory_purge() in (True, b"OK", "OK")
    text = [l.decode() if isinstance(l, bytes) else l for l in r.execute_command("MEMORY", "HELP")]
    assert text[0] == "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert "USAGE <key> [SAMPLES <count>]" in text


def test_object_subcommands(r):
    r.set("n", "123")
    r.set("s", "hello")
    r.set("big", "x" * 45)
    assert r.object("encoding", "n") in (b"int", "int")
    assert r.object("encoding", "s") in (b"embstr", "embstr")
    assert r.object("encoding", "big") in (b"raw", "raw")
    assert r.object("encoding", "missing") is None
    assert r.object("refcount", "s") == 1
    assert r.object("refcount", "missing") is None
    assert r.object("freq", "missing") is None
    with pytest.raises(redis.ResponseError, match=r"^An LFU maxmemory policy is not selected, access frequency not tracked\."):
        r.object("freq", "s")
    with pytest.raises(redis.ResponseError, match=r"does not track when keys were last accessed"):
        r.object("idletime", "s")
    assert r.object("idletime", "missing") is None
    with pytest.raises(redis.ResponseError, match=r"unknown subcommand 'foo'. Try OBJECT HELP."):
        r.execute_command("OBJECT", "foo")
    with pytest.raises(redis.ResponseError, match=r"wrong number of arguments for 'object\|freq' command"):
        r.execute_command("OBJECT", "FREQ")
    text = [l.decode() if isinstance(l, bytes) else l for l in r.execute_command("OBJECT", "HELP")]
    assert text[0].startswith("OBJECT <subcommand>") and "FREQ <key>" in text


# MARK: CLIENT PAUSE

def test_client_pause_write_holds_writes_not_reads(server, r):
    other = server.client()
    try:
        r.set("k", "before")
        assert r.client_pause(400, all=False) is True
        started = time.time()
        assert other.get("k") == b"before", "reads go on"
        assert time.time() - started < 0.3
        other.set("k", "after")                      # waits for the pause to end
        assert time.time() - started >= 0.35
        p = other.pipeline(transaction=False)         # the grouped paths wait the same way
        assert r.client_pause(300, all=False) is True
        started = time.time()
        for i in range(5):
            p.set(f"g{i}", i)
        p.execute()
        assert time.time() - started >= 0.25
        assert r.client_pause(10_000, all=False) is True
        started = time.time()
        import threading
        threading.Timer(0.3, lambda: server.client().client_unpause()).start()
        other.incr("counter")
        assert 0.25 <= time.time() - started < 5, "CLIENT UNPAUSE resumes the writer"
    finally:
        r.client_unpause()
        other.close()


def test_client_pause_all_and_errors(server, r):
    other = server.client()
    try:
        assert r.execute_command("CLIENT", "PAUSE", "300", "ALL") in (True, b"OK", "OK")
        started = time.time()
        assert other.ping() is True
        assert time.time() - started >= 0.25, "ALL holds every command"
    finally:
        other.close()
    with pytest.raises(redis.ResponseError, match=r"^timeout is not an integer or out of range$"):
        r.execute_command("CLIENT", "PAUSE", "abc")
    with pytest.raises(redis.ResponseError, match=r"^timeout is negative$"):
        r.execute_command("CLIENT", "PAUSE", "-1")
    with pytest.raises(redis.ResponseError, match=r"^CLIENT PAUSE mode must be WRITE or ALL$"):
        r.execute_command("CLIENT", "PAUSE", "10", "foo")
    assert r.execute_command("CLIENT", "NO-EVICT", "on") in (True, b"OK", "OK")
    assert r.execute_command("CLIENT", "NO-TOUCH", "off") in (True, b"OK", "OK")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("CLIENT", "NO-EVICT", "maybe")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("CLIENT", "NO-TOUCH", "maybe")


# MARK: bit commands

def test_bit_commands_redis_examples(r):
    assert r.setbit("b", 7, 1) == 0
    assert r.setbit("b", 7, 0) == 1
    assert r.getbit("b", 0) == 0 and r.getbit("b", 100) == 0 and r.getbit("missing", 7) == 0
    assert r.get("b") == b"\x00"
    r.set("s", "foobar")
    assert r.bitcount("s") == 26
    assert r.bitcount("s", 0, 0) == 4
    assert r.bitcount("s", 1, 1) == 6
    assert r.bitcount("s", 1, 1, "BYTE") == 6
    assert r.bitcount("s", 5, 30, "BIT") == 17
    assert r.bitcount("missing") == 0
    r.set("p", b"\xff\xf0\x00")
    assert r.bitpos("p", 0) == 12
    r.set("p", b"\x00\xff\xf0")
    assert r.bitpos("p", 1, 0) == 8
    assert r.bitpos("p", 1, 2) == 16
    assert r.bitpos("p", 1, 2, -1, "BYTE") == 16
    assert r.bitpos("p", 1, 7, 15, "BIT") == 8
    r.set("p", b"\x00\x00\x00")
    assert r.bitpos("p", 1) == -1
    r.set("p", b"\xff\xff\xff")
    assert r.bitpos("p", 0) == 24, "no end given: the string reads as padded with zeros"
    assert r.bitpos("p", 0, 0, -1) == -1, "an explicit end: no clear bit in range"
    assert r.bitpos("missing", 1) == -1 and r.bitpos("missing", 0) == 0
    r.set("k1", "foobar")
    r.set("k2", "abcdef")
    assert r.bitop("AND", "dest", "k1", "k2") == 6
    assert r.get("dest") == b"`bc`ab"
    assert r.bitop("OR", "dest", "k1", "k2", "missing") == 6
    assert r.bitop("XOR", "dest", "k1", "k1") == 6 and r.get("dest") == b"\x00" * 6
    assert r.bitop("NOT", "dest", "k1") == 6 and r.get("dest") == bytes(~b & 0xFF for b in b"foobar")
    assert r.bitop("AND", "dest", "missing", "missing2") == 0
    assert r.exists("dest") == 0, "an empty result deletes the destination"


def test_bitfield(r):
    r.set("s", "foobar")
    assert r.execute_command("BITFIELD", "s", "GET", "u4", "0", "GET", "i8", "#1", "SET", "u8", "0", "255",
                             "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "1000",
                             "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "300") == [6, 111, 102, 1, 127, None]
    assert r.strlen("s") == 13, "INCRBY at bit 100 grew the string"
    bf = r.bitfield("counter")
    assert bf.incrby("u2", 100, 1).incrby("i5", 100, 1).execute() == [1, 9], "as redis-server answers"
    assert r.execute_command("BITFIELD", "mykey", "OVERFLOW", "WRAP", "INCRBY", "u2", "102", "1") == [1]
    for _ in range(3):
        r.execute_command("BITFIELD", "mykey", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1")
    assert r.execute_command("BITFIELD_RO", "mykey", "GET", "u2", "102") == [3]
    assert r.execute_command("BITFIELD", "missing", "GET", "i64", "0") == [0]
    assert r.exists("missing") == 0, "reads create nothing"
    r.set("t", "v", ex=100)
    r.execute_command("BITFIELD", "t", "SET", "u8", "0", "65")
    r.setbit("t", 15, 1)
    assert r.get("t") == b"A\x01" and 0 < r.ttl("t") <= 100, "writes keep the TTL"


def test_bit_command_errors(r):
    r.set("s", "foobar")
    offset = r"^bit offset is not an integer or out of range$"
    for argv in (("GETBIT", "b", "-1"), ("GETBIT", "b", "4294967296"), ("SETBIT", "b", "x", "1"),
                 ("SETBIT", "b", "4294967296", "1"), ("BITFIELD", "s", "GET", "i8", "-1"),
                 ("BITFIELD", "s", "GET", "i8", "#x")):
        with pytest.raises(redis.ResponseError, match=offset):
            r.execute_command(*argv)
    assert r.getbit("b", 4294967295) == 0, "the last bit of a 512 MB string"
    with pytest.raises(redis.ResponseError, match=r"^bit is not an integer or out of range$"):
        r.execute_command("SETBIT", "b", "7", "2")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("BITCOUNT", "s", "0")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("BITCOUNT", "s", "0", "1", "foo")
    with pytest.raises(redis.ResponseError, match=r"^value is not an integer or out of range$"):
        r.execute_command("BITCOUNT", "s", "a", "b")
    with pytest.raises(redis.ResponseError, match=r"^The bit argument must be 1 or 0\.$"):
        r.execute_command("BITPOS", "s", "2")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("BITPOS", "s", "1", "0", "1", "foo")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("BITOP", "FOO", "d", "s")
    with pytest.raises(redis.ResponseError, match=r"^BITOP NOT must be called with a single source key\.$"):
        r.execute_command("BITOP", "NOT", "d", "s", "s")
    with pytest.raises(redis.ResponseError, match=r"wrong number of arguments for 'bitop' command"):
        r.execute_command("BITOP", "AND", "d")
    bad_type = r"^Invalid bitfield type\. Use something like i16 u8\. Note that u64 is not supported but i64 is\.$"
    for t in ("x", "u64", "i65", "i0"):
        with pytest.raises(redis.ResponseError, match=bad_type):
            r.execute_command("BITFIELD", "s", "GET", t, "0")
    with pytest.raises(redis.ResponseError, match=r"^Invalid OVERFLOW type specified$"):
        r.execute_command("BITFIELD", "s", "OVERFLOW", "foo")
    with pytest.raises(redis.ResponseError, match=r"^value is not an integer or out of range$"):
        r.execute_command("BITFIELD", "s", "SET", "i8", "0", "x")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("BITFIELD", "s", "INCRBY", "i8", "0")
    with pytest.raises(redis.ResponseError, match=r"^BITFIELD_RO only supports the GET subcommand$"):
        r.execute_command("BITFIELD_RO", "s", "SET", "i8", "0", "1")
    assert r.get("s") == b"foobar", "a refused BITFIELD changed nothing"


def test_setbit_respects_max_value_size(fresh_server):
    s = fresh_server("--set", "max-value-size=1kb")
    c = s.client()
    assert c.setbit("b", 1024 * 8 - 1, 1) == 0
    with pytest.raises(redis.ResponseError, match=r"string exceeds maximum allowed size \(max-value-size\)"):
        c.setbit("b", 1024 * 8, 1)
    with pytest.raises(redis.ResponseError, match=r"string exceeds maximum allowed size \(max-value-size\)"):
        c.execute_command("BITFIELD", "b", "SET", "u8", str(1024 * 8), "1")


def test_bit_commands_match_redis_server(server):
    """Random bit commands against cairnd and redis-server 7.0: the same replies and values."""
    import os
    import random
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "lib"))
    import watch_contention
    process, port, workdir = watch_contention.start_redis_server()
    try:
        c, rd = server.client(), redis.Redis(port=port)
        keys = ["bit:a", "bit:b", "bit:c"]
        c.delete(*keys)
        rng = random.Random(7)

        def offset():
            return rng.choice([0, 1, 7, 8, 15, 31, 63, 64, 100, rng.randint(0, 300)])

        def index():
            return rng.choice([0, 1, -1, -2, 5, -10, 100, -100, rng.randint(-40, 40)])

        def command():
            k, t = rng.choice(keys), rng.random()
            if t < 0.15: return ["SETBIT", k, offset(), rng.choice([0, 1])]
            if t < 0.25: return ["GETBIT", k, offset()]
            if t < 0.35: return ["BITCOUNT", k] + ([index(), index()] + ([rng.choice(["BIT", "BYTE"])] if rng.random() < 0.5 else []) if rng.random() < 0.6 else [])
            if t < 0.5:
                a = ["BITPOS", k, rng.choice([0, 1])]
                extra = rng.random()
                if extra < 0.7: a.append(index())
                if extra < 0.5: a.append(index())
                if extra < 0.3: a.append(rng.choice(["BIT", "BYTE"]))
                return a
            if t < 0.6:
                op = rng.choice(["AND", "OR", "XOR", "NOT"])
                return ["BITOP", op, rng.choice(keys)] + rng.sample(keys, 1 if op == "NOT" else rng.randint(1, 3))
            if t < 0.65: return ["SET", k, rng.choice(["", "foobar", "\xff\xf0\x00", "a" * 20])]
            a = ["BITFIELD", k]
            for _ in range(rng.randint(1, 4)):
                kind = rng.random()
                width = rng.choice([1, 2, 3, 5, 8, 9, 16, 31, 33, 63, 64])
                ty = ("i" if width == 64 else rng.choice(["i", "u"])) + str(width)
                off = rng.choice([str(offset()), "#" + str(rng.randint(0, 5))])
                value = rng.choice([0, 1, -1, 127, 128, 255, 256, -129, 1000, 2 ** 62, -2 ** 63, 2 ** 63 - 1, rng.randint(-300, 300)])
                if kind < 0.2: a += ["OVERFLOW", rng.choice(["WRAP", "SAT", "FAIL"])]
                elif kind < 0.5: a += ["GET", ty, off]
                elif kind < 0.75: a += ["SET", ty, off, value]
                else: a += ["INCRBY", ty, off, value]
            return a

        def run(client, argv):
            try:
                return client.execute_command(*argv)
            except redis.ResponseError as e:
                return f"error: {e}"

        for _ in range(2000):
            argv = command()
            assert run(c, argv) == run(rd, argv), argv
        for k in keys:
            assert c.get(k) == rd.get(k)
    finally:
        watch_contention.stop_redis_server(process, workdir)


# MARK: prometheus-redis-exporter

def test_prometheus_redis_exporter_scrapes_cairnd(server):
    """Debian's prometheus-redis-exporter against cairnd: no error in its log, per-command call
    counts and latency percentiles exported, and db0's keys and keys with a TTL as DBSIZE and
    the TTLs say, after a load and after FLUSHALL (scripts/lib/deps.sh installs it)."""
    import shutil
    import subprocess
    import urllib.request
    exporter = shutil.which("prometheus-redis-exporter")
    if exporter is None:
        pytest.skip("prometheus-redis-exporter is not installed (apt-get install prometheus-redis-exporter)")
    r = server.client()
    r.flushall()
    r.config_resetstat()
    for i in range(10):
        r.set(f"k{i}", i)
        r.get(f"k{i}")
    r.set("text", "x")
    with pytest.raises(redis.ResponseError):
        r.incr("text")                                  # redis-py sends INCRBY text 1
    for i in range(3):
        r.expire(f"k{i}", 1000)
    r.hset("h", mapping={"a": 1, "b": 2})
    r.rpush("l", 1, 2, 3)
    wait_for_keyspace_count(r, keys=13, expires=3)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [exporter, "-redis.addr", f"redis://127.0.0.1:{server.port}", "-web.listen-address", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def scrape():
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            except OSError:
                time.sleep(0.1)
                continue
            metrics = {}
            for line in text.splitlines():
                if line.startswith("redis_"):
                    name, value = line.rsplit(" ", 1)
                    metrics[name] = float(value)
            return metrics
        pytest.fail("the exporter did not answer")

    try:
        metrics = scrape()
        r.flushall()
        flushed = scrape()
    finally:
        process.terminate()
        log = process.communicate(timeout=10)[0].decode()
    assert "level=error" not in log and "level=fatal" not in log and "level=warn" not in log, log
    assert metrics["redis_up"] == 1
    assert metrics["redis_exporter_last_scrape_error{err=\"\"}"] == 0
    assert metrics['redis_commands_total{cmd="set"}'] == 11
    assert metrics['redis_commands_total{cmd="get"}'] == 10
    assert metrics['redis_commands_failed_calls_total{cmd="incrby"}'] == 1
    for q in ("50", "99", "99.9"):
        assert metrics[f'redis_latency_percentiles_usec{{cmd="get",quantile="{q}"}}'] > 0
    assert metrics['redis_errors_total{err="ERR"}'] >= 1
    assert metrics["redis_cluster_enabled"] == 0
    assert metrics["redis_memory_used_peak_bytes"] > 0
    assert "redis_slowlog_length" in metrics
    names = {n.split("{")[0] for n in metrics}
    assert len(names) >= 55, f"{len(names)} metric names"
    # The keyspace: what DBSIZE and the TTLs say, then nothing at once after FLUSHALL.
    assert metrics['redis_db_keys{db="db0"}'] == 13
    assert metrics['redis_db_keys_expiring{db="db0"}'] == 3
    assert 900 < metrics['redis_db_avg_ttl_seconds{db="db0"}'] <= 1000
    assert flushed['redis_db_keys{db="db0"}'] == 0
    assert flushed['redis_db_keys_expiring{db="db0"}'] == 0


def wait_for_keyspace_count(c, keys, expires):
    """Polls INFO keyspace (which asks for a fresh background count) until db0 shows these
    figures, and checks them against DBSIZE."""
    assert c.dbsize() == keys
    deadline = time.time() + 20
    db0 = None
    while time.time() < deadline:
        db0 = c.info("keyspace").get("db0", {"keys": 0, "expires": 0})
        if (db0["keys"], db0["expires"]) == (keys, expires):
            return
        time.sleep(0.05)
    pytest.fail(f"INFO keyspace shows {db0}, wanted keys={keys} expires={expires}")


def test_redis_cli_memkeys_and_hotkeys(server):
    import subprocess
    c = server.client()
    c.flushall()
    for i in range(20):
        c.set(f"key{i}", "x" * (10 * (i + 1)))
    memkeys = subprocess.run(["redis-cli", "-p", str(server.port), "--memkeys"], capture_output=True, text=True, timeout=60)
    assert memkeys.returncode == 0, memkeys.stderr
    assert "20 strings with" in memkeys.stdout
    # Cairn tracks no access frequency: the refusal is Redis's own for a server without LFU.
    hotkeys = subprocess.run(["redis-cli", "-p", str(server.port), "--hotkeys"], capture_output=True, text=True, timeout=60)
    assert hotkeys.returncode == 1
    assert "An LFU maxmemory policy is not selected" in hotkeys.stdout + hotkeys.stderr


def test_workers_follow_the_cores_cairnd_may_use():
    """Pinned to one CPU (taskset, a container's cpuset), cairnd starts one worker, not one per
    core of the machine; background jobs stay at 2 (a flush and a compaction)."""
    s = Cairnd(preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    try:
        c = s.client()
        assert c.config_get("io-threads") == {"io-threads": "1"}
        assert c.config_get("max-background-jobs") == {"max-background-jobs": "2"}
        assert c.set("k", "v") and c.get("k") == b"v"
    finally:
        s.cleanup()


def test_value_cache_serves_repeated_gets_and_reports_itself(fresh_server):
    s = fresh_server("--set", "value-cache-size=16mb")
    c = s.client()
    c.mset({f"k{i}": f"v{i}" for i in range(200)})
    for _ in range(3):
        p = c.pipeline(transaction=False)
        for i in range(200):
            p.get(f"k{i}")
        assert p.execute() == [f"v{i}".encode() for i in range(200)]
    stats = c.info("stats")
    assert stats["value_cache_hits"] >= 200
    memory = c.info("memory")
    assert memory["value_cache_entries"] == 200 and memory["value_cache_capacity"] == 16 << 20
    c.set("k7", "new")
    assert c.get("k7") == b"new"
    c.config_set("value-cache-size", "0")
    assert c.info("memory")["value_cache_entries"] == 0
    assert c.get("k7") == b"new"
