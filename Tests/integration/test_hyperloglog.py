"""HyperLogLog (PFADD, PFCOUNT, PFMERGE, PFDEBUG) against the real cairnd and a real
redis-server 7.0: every sequence below runs on both, and the replies (error texts included) and
the stored bytes (GET of each key, so the sparse and dense encodings, the promotion between them
and the cached cardinality in the header) must be equal. Values also move between the two
servers by DUMP/RESTORE and must count the same on both sides.

Replies are read raw (RESP2), so error prefixes (WRONGTYPE, INVALIDOBJ) are compared whole.
"""
import random
import struct
import time

import pytest

from conftest import REDIS_SERVER, RedisServer
from test_count_validation import Error, Raw

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

HLL_REGISTERS = 16384
DENSE_SIZE = 16 + HLL_REGISTERS * 6 // 8


@pytest.fixture(scope="module")
def redis_server():
    s = RedisServer()
    yield s
    s.stop()


class Both:
    """One raw connection to cairnd and one to redis-server, driven in step."""

    def __init__(self, cairn_port, redis_port):
        self.cairn = Raw(cairn_port)
        self.redis = Raw(redis_port)

    def same(self, *argv):
        """Runs `argv` on both servers; the replies must be equal. Returns Redis's."""
        ours, theirs = self.cairn.call(*argv), self.redis.call(*argv)
        assert ours == theirs, f"{argv[:4]}: cairnd {ours!r:.300} redis-server {theirs!r:.300}"
        return theirs

    def same_pipeline(self, commands):
        ours, theirs = self.cairn.pipeline(commands), self.redis.pipeline(commands)
        for c, a, b in zip(commands, ours, theirs):
            assert a == b, f"{c[:4]}: cairnd {a!r:.300} redis-server {b!r:.300}"
        return theirs

    def same_bytes(self, *keys):
        """GET of each key (the stored HyperLogLog, header and registers) is equal."""
        for k in keys:
            ours, theirs = self.cairn.call("GET", k), self.redis.call("GET", k)
            assert ours == theirs, f"GET {k}: {len(ours or b'')} bytes on cairnd, {len(theirs or b'')} on redis-server, first difference at {first_difference(ours, theirs)}"

    def set_both(self, key, value):
        assert self.cairn.call("SET", key, value) == self.redis.call("SET", key, value) == "OK"

    def close(self):
        self.cairn.close()
        self.redis.close()


def first_difference(a, b):
    a, b = a or b"", b or b""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


@pytest.fixture
def both(server, redis_server):
    b = Both(server.port, redis_server.port)
    b.same("FLUSHALL")
    yield b
    b.close()


def elements(n, prefix="e", seed=1):
    """n distinct elements: text and some binary, deterministic."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 5 == 0:
            out.append(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 24))) + str(i).encode())
        else:
            out.append(f"{prefix}{i}")
    return out


def encoding(both, key):
    return both.same("PFDEBUG", "ENCODING", key)


def sparse_header(card=0, valid=True):
    """A sparse header with `card` cached (valid or not)."""
    c = struct.pack("<Q", card)
    if not valid:
        c = c[:7] + bytes([c[7] | 0x80])
    return b"HYLL" + bytes([1, 0, 0, 0]) + c


def xzero(n):
    return bytes([0x40 | (n - 1) >> 8, (n - 1) & 0xFF])


def val(value, length):
    return bytes([0x80 | (value - 1) << 2 | (length - 1)])


@pytest.mark.parametrize("n", [10, 1000, 100_000])
def test_cardinalities_equal_bytes_and_promotion(both, n):
    """PFADD in batches of growing size, each reply, encoding and stored value compared;
    the count and the cached cardinality after PFCOUNT too."""
    items = elements(n, seed=n)
    step, i, promoted = 1, 0, False
    while i < n:
        batch = items[i:i + step]
        both.same("PFADD", "hll", *batch)
        i += len(batch)
        # One element at a time while sparse (each opcode change checked), then larger steps.
        if encoding(both, "hll") == "dense":
            promoted = True
            step = min(step * 2, 2000)
        elif i > 200:
            step = min(step + 7, 200)
        if n <= 1000 or i % 10 == 0 or i == n:
            both.same_bytes("hll")
        if i % 97 == 0 or i == n:
            both.same("PFCOUNT", "hll")
            both.same_bytes("hll")
    count = both.same("PFCOUNT", "hll")
    assert abs(count - n) <= max(2, n * 0.03), count
    both.same_bytes("hll")
    # Adding what is there already changes nothing and keeps the cache.
    assert both.same("PFADD", "hll", *items[:50]) == 0
    both.same_bytes("hll")
    assert promoted == (n > 1000), "sparse up to a few hundred elements, dense past hll-sparse-max-bytes"
    both.same("PFDEBUG", "GETREG", "hll")


def test_pfadd_replies_and_empty_elements(both):
    assert both.same("PFADD", "hll") == 1  # creates the key
    both.same_bytes("hll")
    assert both.same("PFADD", "hll") == 0
    assert both.same("PFCOUNT", "hll") == 0
    assert both.same("PFADD", "hll", "") == 1  # the empty string is an element
    assert both.same("PFADD", "hll", "", "") == 0
    both.same("PFADD", "hll", "a", "b", "c")
    both.same_bytes("hll")
    both.same("PFADD")
    both.same("PFCOUNT")
    both.same("PFMERGE")
    assert both.same("PFCOUNT", "nokey") == 0


def test_pfcount_caches_in_the_header(both):
    both.same("PFADD", "hll", *elements(300))
    value = both.redis.call("GET", "hll")
    assert value[15] & 0x80, "PFADD marks the cache stale"
    both.same_bytes("hll")
    both.same("PFCOUNT", "hll")
    both.same_bytes("hll")
    assert both.redis.call("GET", "hll")[15] & 0x80 == 0
    # A cached count is answered as stored, whatever the registers say.
    both.set_both("forged", sparse_header(card=12345) + xzero(HLL_REGISTERS))
    assert both.same("PFCOUNT", "forged") == 12345
    # Marked stale, it is recomputed and stored.
    both.set_both("forged", sparse_header(card=12345, valid=False) + xzero(HLL_REGISTERS))
    assert both.same("PFCOUNT", "forged") == 0
    both.same_bytes("forged")
    # A dense value too.
    both.same("PFADD", "dense", *elements(5000))
    both.same("PFCOUNT", "dense")
    both.same_bytes("dense")
    # The expiry stays.
    both.same("EXPIRE", "dense", "1000")
    both.same("PFADD", "dense", "new-one", "new-two")
    both.same("PFCOUNT", "dense")
    assert both.same("TTL", "dense") > 900


def test_pfcount_of_several_keys(both):
    both.same("PFADD", "a", *elements(100, "x"))
    both.same("PFADD", "b", *elements(200, "x"))  # overlaps a
    both.same("PFADD", "c", *elements(5000, "y"))  # dense
    both.same("PFADD", "d", *elements(3, "z"))
    for keys in (["a", "b"], ["a", "c"], ["a", "b", "c", "d"], ["missing", "a"], ["missing", "other"],
                 ["c", "c"], ["d", "missing", "c"]):
        both.same("PFCOUNT", *keys)
    # The union is computed, not cached: nothing changes.
    both.same_bytes("a", "b", "c", "d")
    both.same("SET", "str", "not an hll")
    both.same("RPUSH", "list", "x")
    both.same("PFCOUNT", "a", "str")
    both.same("PFCOUNT", "a", "list")
    both.same("PFCOUNT", "list", "str")


def test_pfmerge_into_new_and_existing_keys(both):
    both.same("PFADD", "s1", *elements(50, "p"))
    both.same("PFADD", "s2", *elements(80, "q"))
    both.same("PFADD", "big", *elements(3000, "r"))
    assert both.same("PFMERGE", "new", "s1", "s2") == "OK"
    both.same_bytes("new")
    both.same("PFCOUNT", "new")
    both.same_bytes("new")
    # Into an existing sparse key, the key itself one of the inputs.
    both.same("PFADD", "dest", *elements(20, "t"))
    both.same("PFMERGE", "dest", "s1", "missing")
    both.same_bytes("dest")
    # Sparse sources big enough together to pass hll-sparse-max-bytes.
    both.same("PFADD", "m1", *elements(400, "u"))
    both.same("PFADD", "m2", *elements(400, "v"))
    both.same("PFADD", "m3", *elements(400, "w"))
    both.same("PFMERGE", "grown", "m1", "m2", "m3")
    both.same_bytes("grown")
    both.same("PFDEBUG", "ENCODING", "grown")
    # A dense source makes the destination dense.
    both.same("PFMERGE", "dest", "big")
    assert encoding(both, "dest") == "dense"
    both.same_bytes("dest")
    both.same("PFMERGE", "dense2", "big", "s2")
    both.same_bytes("dense2")
    # Destination alone, missing or not.
    both.same("PFMERGE", "alone")
    both.same("PFMERGE", "s1")
    both.same_bytes("alone", "s1")
    for k in ("new", "dest", "grown", "dense2", "alone", "s1"):
        both.same("PFCOUNT", k)
        both.same_bytes(k)
    # The destination keeps its expiry.
    both.same("EXPIRE", "dest", "1000")
    both.same("PFMERGE", "dest", "s2")
    assert both.same("TTL", "dest") > 900


def test_wrong_types(both):
    both.same("SET", "str", "bar")
    both.same("SET", "long", "x" * 40)
    both.same("SET", "int", "12345")
    both.same("RPUSH", "list", "a")
    both.same("HSET", "hash", "f", "v")
    both.same("PFADD", "hll", "a")
    for key in ("str", "long", "int", "list", "hash"):
        both.same("PFADD", key, "x")
        both.same("PFADD", key)
        both.same("PFCOUNT", key)
        both.same("PFCOUNT", "hll", key)
        both.same("PFMERGE", key, "hll")
        both.same("PFMERGE", "hll", key)
        both.same("PFMERGE", "fresh", "hll", key)
        both.same("PFDEBUG", "ENCODING", key)
    both.same_bytes("str", "long", "int", "hll")
    assert both.same("EXISTS", "fresh") == 0
    # Headers Redis does not take for a HyperLogLog.
    base = both.redis.call("GET", "hll")
    for name, value in [
        ("magic", b"0123" + base[4:]),
        ("encoding", base[:4] + b"x" + base[5:]),
        ("encoding2", base[:4] + b"\x02" + base[5:]),
        ("dense-length", base[:4] + b"\x00" + base[5:]),
        ("short", base[:15]),
        ("empty", b""),
    ]:
        both.set_both(name, value)
        both.same("PFCOUNT", name)
        both.same("PFADD", name, "x")
        both.same("PFMERGE", "fresh", name)
        both.same_bytes(name)


def test_corrupted_values(both):
    # More opcodes after the registers end.
    both.same("PFADD", "tail", "a", "b", "c")
    both.same("APPEND", "tail", "hello")
    assert both.same("PFCOUNT", "tail").startswith("INVALIDOBJ")
    both.same("PFCOUNT", "tail", "tail")
    both.same("PFMERGE", "out", "tail")
    both.same("PFDEBUG", "GETREG", "tail")
    both.same("PFDEBUG", "TODENSE", "tail")
    both.same("PFDEBUG", "DECODE", "tail")
    # Runs that stop short of the last register: elements landing before the end are added
    # (and stay, as in Redis), the first one past it fails.
    both.set_both("short", sparse_header(valid=False) + xzero(8000) + val(3, 2) + xzero(100))
    for e in elements(40):
        both.same("PFADD", "short", e)
        both.same_bytes("short")
    both.same("PFCOUNT", "short")
    # An XZERO cut in half at the end.
    both.set_both("cut", sparse_header() + xzero(HLL_REGISTERS - 100) + b"\x40")
    for e in elements(40, "k"):
        both.same("PFADD", "cut", e)
        both.same_bytes("cut")
    both.same("PFCOUNT", "cut")
    both.same("PFDEBUG", "DECODE", "cut")
    # Runs adding up past 2^32 registers (Redis's overflow regression).
    both.set_both("overflow", sparse_header() + xzero(HLL_REGISTERS) * 140_000 + b"\xff")
    both.same("PFCOUNT", "overflow", "overflow")
    both.same("PFDEBUG", "GETREG", "overflow")
    both.same("PFADD", "overflow", "z")
    both.same_bytes("overflow")
    # A VAL above the last register.
    both.set_both("val", sparse_header(valid=False) + xzero(HLL_REGISTERS - 1) + val(5, 4))
    both.same("PFCOUNT", "val")
    both.same("PFMERGE", "out", "val")
    assert both.same("EXISTS", "out") == 0


def test_random_corruption(both):
    """Redis's own fuzz: an HLL with a few bytes overwritten; every command answers the same
    and leaves the same bytes (partly added elements included)."""
    rng = random.Random(7)
    for round_ in range(150):
        both.same("DEL", "hll")
        items = [str(rng.random()) for _ in range(rng.randint(0, 3000 if round_ % 3 else 300))]
        both.same("PFADD", "hll", *items)
        for _ in range(5):
            length = both.same("STRLEN", "hll")
            both.same("SETRANGE", "hll", rng.randrange(length), bytes([rng.getrandbits(8)]))
            if rng.random() < 0.5:
                break
        both.same_bytes("hll")
        both.same("PFCOUNT", "hll")
        both.same("PFCOUNT", "hll", "missing")
        both.same("PFADD", "hll", *[str(rng.random()) for _ in range(rng.randint(1, 20))])
        both.same_bytes("hll")
        both.same("PFMERGE", "merged", "hll")
        both.same_bytes("merged")
        both.same("DEL", "merged")


def test_dump_from_redis_restores_into_cairn_and_back(both):
    sets = {"tiny": elements(5, "a"), "sparse": elements(250, "b"), "dense": elements(20000, "c"),
            "empty": []}
    for key, items in sets.items():
        both.redis.call("PFADD", key, *items)
    both.redis.call("PFCOUNT", "sparse")  # one with its cache filled, the others stale
    for key in sets:
        payload = both.redis.call("DUMP", key)
        assert both.cairn.call("RESTORE", key, "0", payload) == "OK"
        assert both.cairn.call("GET", key) == both.redis.call("GET", key)
        both.same("PFCOUNT", key)
        both.same_bytes(key)
        both.same("PFADD", key, *elements(100, "more"))
        both.same_bytes(key)
        both.same("PFCOUNT", key)
    both.same("PFCOUNT", *sets)
    both.same("PFMERGE", "all", *sets)
    both.same_bytes("all")
    # Back again: cairnd's payloads restore into redis-server and count the same there.
    for key in list(sets) + ["all"]:
        both.same("PFADD", key, "after")
        payload = both.cairn.call("DUMP", key)
        assert both.redis.call("RESTORE", key + ":back", "0", payload) == "OK"
        assert both.redis.call("PFCOUNT", key + ":back") == both.cairn.call("PFCOUNT", key)
        assert both.redis.call("GET", key + ":back") == both.cairn.call("GET", key)


def test_in_multi_and_in_scripts(both):
    replies = both.same_pipeline([
        ("MULTI",),
        ("PFADD", "t1", "a", "b", "c"),
        ("PFADD", "t2", *elements(3000)),
        ("PFCOUNT", "t1"),
        ("PFCOUNT", "t1", "t2"),
        ("PFMERGE", "t3", "t1", "t2"),
        ("PFCOUNT", "t3"),
        ("SET", "s", "x"),
        ("PFADD", "s", "y"),
        ("EXEC",),
    ])
    assert isinstance(replies[-1], list) and isinstance(replies[-1][-1], Error)
    both.same_bytes("t1", "t2", "t3")
    script = """
        local added = redis.call('pfadd', KEYS[1], unpack(ARGV))
        local n = redis.call('pfcount', KEYS[1])
        redis.call('pfmerge', KEYS[2], KEYS[1], KEYS[3])
        return {added, n, redis.call('pfcount', KEYS[2]), redis.call('pfcount', KEYS[1], KEYS[3])}
    """
    both.same("EVAL", script, "3", "e1", "e2", "t3", *elements(100, "lua"))
    both.same_bytes("e1", "e2")
    both.same("EVAL", "return redis.pcall('pfadd', KEYS[1], 'x')", "1", "s")
    both.same("EVAL", "return redis.call('pfcount', KEYS[1])", "1", "s")
    both.same("PFADD", "e1", "z")
    both.same("EVAL_RO", "return redis.call('pfcount', KEYS[1])", "1", "e1")
    both.same_bytes("e1")
    both.same("EVAL_RO", "return redis.call('pfadd', KEYS[1], 'q')", "1", "e1")


def test_pfdebug(both):
    both.same("PFADD", "hll", *elements(20))
    both.same("PFDEBUG", "DECODE", "hll")
    both.same("PFDEBUG", "ENCODING", "hll")
    both.same("PFDEBUG", "getreg", "hll")  # converts and stores
    both.same_bytes("hll")
    both.same("PFDEBUG", "ENCODING", "hll")
    both.same("PFDEBUG", "DECODE", "hll")
    both.same("PFDEBUG", "TODENSE", "hll")
    both.same("PFADD", "other", "a")
    both.same("PFDEBUG", "TODENSE", "other")
    both.same_bytes("other")
    both.same("PFDEBUG", "NOPE", "hll")
    both.same("PFDEBUG", "NOPE", "missing")
    both.same("PFDEBUG", "ENCODING")
    both.same("PFDEBUG", "ENCODING", "hll", "extra")


def test_command_table_matches_redis(both):
    """Arity and key positions as COMMAND INFO gives them, and the ACL categories each command
    is listed under (ACL CAT), equal to redis-server's."""
    names = [b"pfadd", b"pfcount", b"pfmerge"]
    for name in names:
        ours = both.cairn.call("COMMAND", "INFO", name)[0]
        theirs = both.redis.call("COMMAND", "INFO", name)[0]
        # Name, arity, first key, last key, step.
        assert [ours[0], ours[1], *ours[3:6]] == [theirs[0], theirs[1], *theirs[3:6]], (ours, theirs)
    for category in both.redis.call("ACL", "CAT"):
        ours = set(both.cairn.call("ACL", "CAT", category)) & set(names)
        theirs = set(both.redis.call("ACL", "CAT", category)) & set(names)
        assert ours == theirs, category


def test_hll_sparse_max_bytes(both):
    """A lower hll-sparse-max-bytes promotes sooner, byte for byte as Redis does."""
    assert both.same("CONFIG", "GET", "hll-sparse-max-bytes") == [b"hll-sparse-max-bytes", b"3000"]
    both.same("CONFIG", "SET", "hll-sparse-max-bytes", "abc")
    both.same("CONFIG", "SET", "hll-sparse-max-bytes", "-1")
    try:
        both.same("CONFIG", "SET", "hll-sparse-max-bytes", "100")
        promoted_at = None
        for i, e in enumerate(elements(200)):
            both.same("PFADD", "hll", e)
            both.same_bytes("hll")
            if promoted_at is None and encoding(both, "hll") == "dense":
                promoted_at = i
        assert promoted_at is not None and promoted_at < 100
        both.same("PFADD", "m1", *elements(30, "x"))
        both.same("PFADD", "m2", *elements(30, "y"))
        both.same("PFMERGE", "m", "m1", "m2")
        both.same_bytes("m")
        both.same("PFDEBUG", "ENCODING", "m")
    finally:
        both.same("CONFIG", "SET", "hll-sparse-max-bytes", "3000")


def test_acl_key_patterns(both):
    """A user limited to some keys reaches only those: PFMERGE reads its sources and writes
    its destination."""
    rules = ["on", "nopass", "+@all", "~app:*", "%R~ro:*"]
    for conn in (both.cairn, both.redis):
        assert conn.call("ACL", "SETUSER", "hlluser", "reset", *rules) == "OK"
    both.same("PFADD", "ro:src", "a", "b")
    both.same("PFADD", "secret", "s")
    try:
        both.same("AUTH", "hlluser", "x")
        both.same("PFADD", "app:h", "a", "b")
        both.same("PFADD", "secret", "c")
        both.same("PFADD", "ro:src", "c")
        both.same("PFCOUNT", "app:h", "secret")
        both.same("PFCOUNT", "secret")
        both.same("PFMERGE", "app:d", "app:h", "ro:src")
        both.same("PFMERGE", "app:d", "secret")
        both.same("PFMERGE", "ro:src", "app:h")
        both.same("PFMERGE", "secret", "app:h")
    finally:
        both.cairn.call("AUTH", "default", "x")
        both.redis.call("AUTH", "default", "x")
        both.same("ACL", "DELUSER", "hlluser")
    both.same_bytes("app:h", "app:d", "secret", "ro:src")


def test_replicated(fresh_server):
    """PFADD, PFMERGE and the count PFCOUNT stores reach a replica as the primary's bytes; a
    PFCOUNT on the replica answers the same count and stores nothing."""
    primary, replica = fresh_server(), fresh_server()
    p, r = primary.client(), replica.client()
    assert r.execute_command("REPLICAOF", "127.0.0.1", primary.port) == b"OK"
    p.execute_command("PFADD", "sparse", *elements(100))
    p.execute_command("PFADD", "dense", *elements(5000))
    p.execute_command("PFMERGE", "merged", "sparse", "dense")
    p.execute_command("PFADD", "cached", *elements(300, "c"))
    count = p.execute_command("PFCOUNT", "cached")
    keys = ["sparse", "dense", "merged", "cached"]
    deadline = time.time() + 30
    while [r.get(k) for k in keys] != [p.get(k) for k in keys]:
        assert time.time() < deadline, "the replica did not catch up"
        time.sleep(0.05)
    assert r.get("cached")[15] & 0x80 == 0, "the stored count was replicated"
    stale = r.get("merged")
    assert stale[15] & 0x80
    # Counted on the primary as a union of one (which stores nothing there either).
    assert r.execute_command("PFCOUNT", "merged") == p.execute_command("PFCOUNT", "merged", "merged")
    assert r.execute_command("PFCOUNT", "cached") == count
    assert r.get("merged") == stale


def test_pfcount_through_a_snapshot_stores_nothing(server):
    """Reading through SNAPSHOT.USE, PFCOUNT answers the snapshot's count and does not write
    the snapshot's value over the key's newer one."""
    c = server.client()
    c.delete("snap")
    c.execute_command("PFADD", "snap", *elements(200))
    snapshot = c.execute_command("SNAPSHOT.CREATE")
    c.execute_command("PFADD", "snap", *elements(200, "later"))
    newer = c.get("snap")
    c.execute_command("SNAPSHOT.USE", snapshot)
    old_count = c.execute_command("PFCOUNT", "snap")
    c.execute_command("SNAPSHOT.USE", "NONE")
    assert c.get("snap") == newer
    assert c.execute_command("PFCOUNT", "snap") > old_count
    c.execute_command("SNAPSHOT.RELEASE", snapshot)


def test_client_pause_write_holds_pfcount(both, server, redis_server):
    """PFCOUNT may store its count, so CLIENT PAUSE WRITE holds it as Redis does, where a GET
    of the same key runs at once."""
    both.same("PFADD", "hll", "a", "b")
    for port, admin in ((server.port, both.cairn), (redis_server.port, both.redis)):
        other = Raw(port)
        try:
            assert admin.call("CLIENT", "PAUSE", "400", "WRITE") == "OK"
            start = time.time()
            assert other.call("GET", "hll") is not None
            assert time.time() - start < 0.2
            assert other.call("PFCOUNT", "hll") == 2
            assert time.time() - start >= 0.3, port
        finally:
            admin.call("CLIENT", "UNPAUSE")
            other.close()


def test_pipelined_writes_run_batched_alike(both):
    """Pipelined PFADDs and PFMERGEs run together over one overlay (the batched executor):
    replies and bytes as when each runs alone on redis-server."""
    items = elements(3000, "pipe")
    commands = [("PFADD", "p1", e) for e in items[:1500]]
    commands += [("PFADD", "p2", *items[i:i + 50]) for i in range(0, 3000, 50)]
    commands += [("PFMERGE", "p3", "p1", "p2"), ("PFCOUNT", "p3"), ("PFADD", "p3", "x"), ("PFMERGE", "p1", "p3")]
    both.same_pipeline(commands)
    both.same_bytes("p1", "p2", "p3")
