"""LCS against the real cairnd and a real redis-server 7.0, side by side: the same requests go
to both and the raw replies (RESP2 and RESP3, read byte-exact) must be equal: the subsequence,
LEN, IDX with and without WITHMATCHLEN and MINMATCHLEN (the ranges in Redis's order), missing
keys, errors, MULTI, EVAL and the limit on the table's memory.
"""
import random

import pytest

from conftest import REDIS_SERVER
# The byte-exact RESP reader the geo comparison uses.
from test_geo import Error, Raw, both, same

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

PAIRS = [
    ("ohmytext", "mynewtext"), ("", ""), ("", "abc"), ("abc", ""), ("a", "a"), ("a", "b"),
    ("abcdef", "abcdef"), ("abcdef", "fedcba"), ("aaaa", "aa"), ("abab", "baba"),
    ("rosettacode", "raisethysword"), ("thisisatest", "testing123testing"),
    ("\x00\x01\x02\xff", "\x02\x00\xff\x01"), ("AGGTAB", "GXTXAYB"), ("xxxxabcxxxxabc", "abcyyyyabcyyyabc"),
]


@pytest.fixture(scope="module")
def conns(servers):
    cairn, reference = servers
    pairs = {p: (Raw(cairn.port, p), Raw(reference.port, p)) for p in (2, 3)}
    yield pairs
    for a, b in pairs.values():
        a.close()
        b.close()


OPTIONS = [(), ("LEN",), ("IDX",), ("IDX", "WITHMATCHLEN"), ("IDX", "MINMATCHLEN", "2"),
           ("IDX", "MINMATCHLEN", "3", "WITHMATCHLEN"), ("WITHMATCHLEN", "IDX", "MINMATCHLEN", "-5"),
           ("MINMATCHLEN", "4"), ("LEN", "MINMATCHLEN", "1"), ("idx", "withmatchlen", "minmatchlen", "0")]


def strings():
    rng = random.Random(11)
    out = [(a.encode("latin-1"), b.encode("latin-1")) for a, b in PAIRS]
    for _ in range(40):
        alphabet = rng.choice([b"ab", b"abc", b"ACGT", bytes(range(256))])
        a = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        b = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        out.append((a, b))
    return out


def test_every_option(conns):
    for protocol in (2, 3):
        pair = conns[protocol]
        for a, b in strings():
            same(pair, "MSET", "k1", a, "k2", b)
            for options in OPTIONS:
                same(pair, "LCS", "k1", "k2", *options)
                same(pair, "LCS", "k2", "k1", *options)
            same(pair, "LCS", "k1", "k1", "IDX", "WITHMATCHLEN")
            same(pair, "LCS", "k1", "missing", "IDX")
            same(pair, "LCS", "missing", "k2", "LEN")


def test_errors(conns):
    pair = conns[2]
    for argv in [("SET", "s", "hello"), ("RPUSH", "l", "x"), ("HSET", "h", "f", "v"),
                 ("LCS",), ("LCS", "s"), ("LCS", "s", "l"), ("LCS", "l", "s"), ("LCS", "h", "missing"),
                 ("LCS", "l", "s", "BOGUS"), ("LCS", "s", "s", "BOGUS"), ("LCS", "s", "s", "LEN", "IDX"),
                 ("LCS", "s", "s", "MINMATCHLEN"), ("LCS", "s", "s", "MINMATCHLEN", "x"),
                 ("LCS", "s", "s", "MINMATCHLEN", "1.5", "IDX"), ("LCS", "s", "s", "IDX", "LEN", "BOGUS"),
                 ("LCS", "missing1", "missing2"), ("LCS", "missing1", "missing2", "IDX", "WITHMATCHLEN"),
                 ("DEL", "s", "l", "h")]:
        same(pair, *argv)


def test_memory_limit(conns):
    """The table's (len1 + 1) * (len2 + 1) * 4 bytes against proto-max-bulk-len (1 MiB here)."""
    pair = conns[2]
    for conn in pair:
        assert conn.call("CONFIG", "SET", "proto-max-bulk-len", "1048576") == "OK"
    try:
        # 511 * 512 * 4 = 1,046,528 bytes fit; 512 * 513 * 4 = 1,050,624 do not.
        same(pair, "SET", "x", "ab" * 255)
        same(pair, "SET", "y", "ba" * 255 + "ab")
        same(pair, "LCS", "x", "y", "LEN")
        same(pair, "APPEND", "x", "a")
        same(pair, "LCS", "x", "y", "LEN")
        same(pair, "LCS", "x", "y", "IDX")
    finally:
        for conn in pair:
            assert conn.call("CONFIG", "SET", "proto-max-bulk-len", "536870912") == "OK"
    same(pair, "LCS", "x", "y", "LEN")
    same(pair, "DEL", "x", "y")


def test_big_strings(conns):
    """Strings whose table is big enough to be filled off the connection's worker."""
    pair = conns[2]
    rng = random.Random(3)
    a = bytes(rng.choice(b"ACGT") for _ in range(2500))
    b = bytes(rng.choice(b"ACGT") for _ in range(2600))
    same(pair, "MSET", "big1", a, "big2", b)
    for options in [(), ("LEN",), ("IDX", "MINMATCHLEN", "6", "WITHMATCHLEN")]:
        same(pair, "LCS", "big1", "big2", *options)
    same(pair, "DEL", "big1", "big2")


def test_multi_and_eval(conns):
    for p in (2, 3):
        c, r = pair = conns[p]
        commands = [
            ("MULTI",),
            ("SET", "t1", "ohmytext"),
            ("SET", "t2", "mynewtext"),
            ("LCS", "t1", "t2"),
            ("LCS", "t1", "t2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"),
            ("APPEND", "t2", "ohmy"),
            ("LCS", "t1", "t2", "LEN"),
            ("RPUSH", "tl", "x"),
            ("LCS", "t1", "tl"),
            ("EXEC",),
        ]
        assert c.pipeline(commands) == r.pipeline(commands)
        for body in ["return redis.call('LCS', KEYS[1], KEYS[2])",
                     "return redis.call('LCS', KEYS[1], KEYS[2], 'IDX', 'WITHMATCHLEN')",
                     "return redis.call('LCS', KEYS[1], KEYS[2], 'LEN')"]:
            same(pair, "EVAL", body, "2", "t1", "t2")
        got, want = both(pair, "EVAL", "return redis.pcall('LCS', KEYS[1], KEYS[2])", "2", "t1", "tl")
        assert got == want
        same(pair, "DEL", "t1", "t2", "tl")


def test_keys_and_acl_categories(conns):
    c, r = pair = conns[2]
    same(pair, "COMMAND", "GETKEYS", "LCS", "a", "b", "IDX")
    got, want = c.call("COMMAND", "INFO", "lcs"), r.call("COMMAND", "INFO", "lcs")
    assert got[0][:6] == want[0][:6]
    for category in ("read", "string", "slow", "write", "fast", "keyspace"):
        assert (b"lcs" in c.call("ACL", "CAT", category)) == (b"lcs" in r.call("ACL", "CAT", category)), category
