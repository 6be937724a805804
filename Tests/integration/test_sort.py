"""SORT and SORT_RO against the real cairnd and a real redis-server 7.0, side by side: the same
requests go to both and the raw replies (RESP2 and RESP3, read byte-exact) must be equal.

Sources are lists, sets and sorted sets of numbers and of words; weights are strings (`w_*`)
and hash fields (`h_*->f`), some missing. Requests combine every option (BY, LIMIT, GET, ASC,
DESC, ALPHA, STORE), drawn from a fixed seed. Where Redis's order is its hash table's (a set or
a sorted set sorted by nothing, or ALPHA ties among weights, whose order is the unsorted
input's) the reply is compared as a multiset, and not at all when a LIMIT window of such an
order is asked for.
"""
import itertools
import random
import time

import pytest

from conftest import REDIS_SERVER, Cairnd
# The byte-exact RESP reader the geo comparison uses.
from test_geo import Error, Raw, both, same

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

NUMBERS = ["3", "1", "10", "-2.5", "7", "1e3", "0", "42", "-0", "5", "5", "0x10", " 8", "+4", "inf", "-inf"]
WORDS = ["pear", "apple", "Banana", "cherry", "apple", "zebra", "Ångström", "a b", "", "10", "9", "émile", "\x00nul", "AAA"]
SETS = ["3", "1", "10", "-2.5", "7", "100", "0", "42", "-7", "12", "11", "2"]
WORD_SET = ["pear", "apple", "Banana", "cherry", "zebra", "Ångström", "a b", "10", "9", "émile", "mango", "kiwi"]

SOURCES = {
    "nums": ("RPUSH", NUMBERS),
    "words": ("RPUSH", WORDS),
    "nset": ("SADD", SETS),
    "wset": ("SADD", WORD_SET),
    "zn": ("ZADD", SETS),
    "zw": ("ZADD", WORD_SET),
}


def load(conn):
    rng = random.Random(7)
    commands = [("FLUSHALL",)]
    elements = set()
    for key, (cmd, items) in SOURCES.items():
        if cmd == "ZADD":
            scores = rng.sample(range(-50, 50), len(items))
            commands.append(("ZADD", key, *[x for s, m in zip(scores, items) for x in (str(s), m)]))
        else:
            commands.append((cmd, key, *items))
        elements.update(items)
    # Distinct weights for every element (so no ALPHA ties); hash fields for some only.
    weights = rng.sample(range(1000), len(elements))
    for i, (e, w) in enumerate(zip(sorted(elements), weights)):
        commands.append(("SET", f"w_{e}", str(w)))
        commands.append(("SET", f"s_{e}", f"word{w:04d}"))
        if i % 3:
            commands.append(("HSET", f"h_{e}", "f", str(w * 2), "g", f"g{w}"))
    commands.append(("SET", "w_", "noise"))
    commands.append(("LPUSH", "h_pear", "wrong type"))
    commands.append(("SADD", "s_apple", "wrong type"))
    assert conn.pipeline(commands)[0] == "OK"


@pytest.fixture(scope="module")
def conns(servers):
    cairn, reference = servers
    pairs = {p: (Raw(cairn.port, p), Raw(reference.port, p)) for p in (2, 3)}
    load(pairs[2][0])
    load(pairs[2][1])
    yield pairs
    for a, b in pairs.values():
        a.close()
        b.close()


def grouped(reply, size):
    """A reply's elements in groups of `size` (one group per sorted element), sorted."""
    if not isinstance(reply, list):
        return reply
    return sorted((tuple(reply[i:i + size]) for i in range(0, len(reply), size)), key=repr)


# BY patterns: weights present for all (distinct), some (hash fields), none, and no sort.
BYS = [None, "w_*", "s_*", "h_*->f", "h_*->g", "missing_*", "nosort", "w_", "*", "h_*->"]
LIMITS = [None, ("0", "3"), ("2", "-1"), ("-5", "2"), ("100", "5"), ("0", "0"), ("3", "100"),
          ("1", "9223372036854775807"), ("-9223372036854775808", "2"), ("5", "-9223372036854775808")]
GETS = [[], ["#"], ["#", "w_*"], ["h_*->f"], ["s_*", "h_*->g", "#"], ["nokey"], ["h_*->nofield"], ["*"]]


def deterministic(source, by, alpha, limit):
    """Whether Redis's order is defined for this request (see the module's note), and, when it
    is not, whether the reply may still be compared as a multiset (no LIMIT window)."""
    unordered = SOURCES[source][0] in ("SADD", "ZADD")
    if by is not None and "*" not in by:
        # No sort: a list or sorted set keeps its order; a set answers in Redis's hash order.
        return (SOURCES[source][0] != "SADD", limit is None)
    if alpha and by is not None and by not in ("w_*", "s_*"):
        # Missing weights tie; Redis's partial sort under LIMIT is not stable even for a list.
        return (not unordered and limit is None, limit is None)
    return (True, True)


def request(source, by, limit, gets, order, alpha, ro=False):
    argv = ["SORT_RO" if ro else "SORT", source]
    if by is not None:
        argv += ["BY", by]
    if limit is not None:
        argv += ["LIMIT", *limit]
    for g in gets:
        argv += ["GET", g]
    if order:
        argv.append(order)
    if alpha:
        argv.append("ALPHA")
    return argv


def test_every_option_combination(conns):
    rng = random.Random(39)
    compared = 0
    for protocol in (2, 3):
        pair = conns[protocol]
        for source in SOURCES:
            for by, alpha, order in itertools.product(BYS, (False, True), (None, "ASC", "DESC")):
                for _ in range(4 if protocol == 2 else 1):
                    limit, gets = rng.choice(LIMITS), rng.choice(GETS)
                    ordered, comparable = deterministic(source, by, alpha, limit)
                    argv = request(source, by, limit, gets, order, alpha, ro=rng.random() < 0.3)
                    got, want = both(pair, *argv)
                    if ordered:
                        assert got == want, argv
                    elif comparable:
                        assert grouped(got, max(1, len(gets))) == grouped(want, max(1, len(gets))), argv
                    else:
                        assert type(got) is type(want) and (isinstance(want, Error) or len(got) == len(want)), argv
                    compared += 1
    assert compared > 900


def test_numeric_errors_and_special_values(conns):
    pair = conns[2]
    same(pair, "RPUSH", "odd", "1", "abc", "2")
    for argv in [("SORT", "odd"), ("SORT", "odd", "DESC", "LIMIT", "0", "0"), ("SORT", "odd", "ALPHA"),
                 ("SORT", "odd", "BY", "nosort"), ("SORT", "odd", "STORE", "odd-out"), ("EXISTS", "odd-out"),
                 ("SORT", "words"), ("SORT", "words", "BY", "h_*->g"), ("SORT", "words", "BY", "h_*->f")]:
        same(pair, *argv)
    # Overflow and underflow (ERANGE) last: redis-server never clears errno before its strtod,
    # so until some failing call resets it, every non-integer weight after one fails too.
    for values in (["nan", "1"], ["1 ", "2"], ["", "-1", " 2", "\t3"], ["0x1p3", "9"], ["-inf", "inf", "0"],
                   ["1.5", "1.50", "01.5"], ["\x001", "x"], ["9007199254740993", "9007199254740992"],
                   ["1e400", "2"], ["1e-400", "2"]):
        same(pair, "DEL", "vals")
        same(pair, "RPUSH", "vals", *values)
        for p in (2, 3):
            same(conns[p], "SORT", "vals")
            same(conns[p], "SORT", "vals", "DESC")
        same(pair, "DEL", "byvals")
        same(pair, "RPUSH", "byvals", "a", "b")
        same(pair, "SET", "v_a", values[0])
        same(pair, "SET", "v_b", values[1])
        same(pair, "SORT", "byvals", "BY", "v_*")
    same(pair, "DEL", "odd", "vals", "byvals", "v_a", "v_b")
    # A new connection's accept loop ends on EAGAIN, which clears redis-server's ERANGE.
    Raw(pair[1].sock.getpeername()[1]).close()
    same(pair, "RPUSH", "after", " 1", "0.5")
    same(pair, "SORT", "after")
    same(pair, "DEL", "after")


def test_missing_and_empty_sources(conns):
    for p in (2, 3):
        pair = conns[p]
        for argv in [("SORT", "nokey"), ("SORT", "nokey", "BY", "nosort", "LIMIT", "0", "1"),
                     ("SORT", "nokey", "GET", "#", "GET", "w_*"), ("SORT_RO", "nokey", "ALPHA", "DESC"),
                     ("SORT", "nokey", "LIMIT", "-1", "-1"), ("SORT", "nokey", "STORE", "dst"), ("EXISTS", "dst")]:
            same(pair, *argv)


def test_nosort_keeps_list_and_sorted_set_order(conns):
    pair = conns[2]
    same(pair, "DEL", "big", "zbig")
    same(pair, "RPUSH", "big", *[f"e{i}" for i in range(300)])
    same(pair, "ZADD", "zbig", *[x for i in range(300) for x in (str((i * 37) % 300), f"m{i}")])
    for key in ("big", "zbig"):
        for limit in [None, ("0", "10"), ("250", "100"), ("299", "1"), ("300", "1"), ("-3", "4"), ("10", "-1"), ("5", "0")]:
            for order in (None, "DESC"):
                argv = ["SORT", key, "BY", "nosort"] + (["LIMIT", *limit] if limit else []) + ([order] if order else [])
                same(pair, *argv)
                same(pair, *(argv + ["GET", "#", "GET", "w_*"]))
                same(pair, *(argv + ["STORE", "out"]))
                same(pair, "LRANGE", "out", "0", "-1")
        same(pair, "SORT", key, "BY", "const", "ALPHA", "LIMIT", "1", "5")
        same(pair, "SORT", key, "LIMIT", "0", "5", "ALPHA", "DESC")
    same(pair, "DEL", "big", "zbig", "out")


def test_store(conns):
    pair = conns[2]
    steps = [
        ("SORT", "nset", "STORE", "dst"), ("TYPE", "dst"), ("LRANGE", "dst", "0", "-1"),
        # A set sorted by nothing is stored in byte order, as Redis does.
        ("SORT", "wset", "BY", "nosort", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
        ("SORT", "wset", "BY", "nosort", "DESC", "LIMIT", "2", "4", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
        ("SORT", "nset", "BY", "nosort", "GET", "#", "GET", "h_*->f", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
        ("SORT", "words", "ALPHA", "GET", "h_*->f", "GET", "nokey", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
        ("SET", "strdst", "x"), ("EXPIRE", "strdst", "100"),
        ("SORT", "zn", "STORE", "strdst"), ("TYPE", "strdst"), ("TTL", "strdst"), ("LRANGE", "strdst", "0", "-1"),
        ("ZADD", "zdst", "1", "a"), ("SORT", "nums", "BY", "nosort", "LIMIT", "0", "3", "STORE", "zdst"), ("TYPE", "zdst"),
        # An empty result deletes the destination.
        ("SORT", "nums", "LIMIT", "100", "1", "STORE", "zdst"), ("EXISTS", "zdst"),
        ("SORT", "nokey", "STORE", "dst"), ("EXISTS", "dst"),
        ("SORT", "nums", "LIMIT", "0", "0", "STORE", "newdst"), ("EXISTS", "newdst"),
        # Source and destination the same key.
        ("RPUSH", "self", "3", "1", "2"), ("SORT", "self", "DESC", "STORE", "self"), ("LRANGE", "self", "0", "-1"),
        # The last STORE wins; a failed conversion stores nothing.
        ("SORT", "nset", "STORE", "a1", "STORE", "a2"), ("EXISTS", "a1", "a2"),
        ("SET", "keep", "v"), ("SORT", "words", "STORE", "keep"), ("GET", "keep"),
        ("SORT", "wset", "BY", "w_*", "LIMIT", "1", "3", "GET", "#", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
        ("DEL", "dst", "strdst", "self", "a2", "keep"),
    ]
    for argv in steps:
        same(pair, *argv)


def test_errors(conns):
    pair = conns[2]
    same(pair, "SET", "str", "v")
    same(pair, "HSET", "hash", "f", "v")
    for argv in [("SORT",), ("SORT_RO",), ("SORT", "str"), ("SORT", "hash"), ("SORT", "str", "FOO"),
                 ("SORT", "nums", "LIMIT", "1"), ("SORT", "nums", "LIMIT", "a", "1"), ("SORT", "nums", "LIMIT", "1", "b"),
                 ("SORT", "nums", "LIMIT", "1.5", "1"), ("SORT", "nums", "BY"), ("SORT", "nums", "GET"),
                 ("SORT", "nums", "STORE"), ("SORT_RO", "nums", "STORE", "x"), ("SORT", "str", "LIMIT", "x", "y"),
                 ("SORT", "str", "BY", "nosort"), ("SORT", "nums", "ASC", "BY", "w_*", "BOGUS"), ("SORT", "nums", "alpha", "desc", "limit", "0", "2"),
                 ("sort_ro", "words", "by", "S_*", "alpha", "get", "#")]:
        same(pair, *argv)
    same(pair, "DEL", "str", "hash")


def test_multi_exec(conns):
    for p in (2, 3):
        c, r = conns[p]
        commands = [
            ("MULTI",),
            ("RPUSH", "tx", "3", "1", "2"),
            ("SORT", "tx"),
            ("SET", "w_1", "900"),
            ("HSET", "h_2", "f", "-1"),
            ("SORT", "tx", "BY", "w_*", "GET", "#", "GET", "h_*->f"),
            ("SORT", "tx", "DESC", "STORE", "txd"),
            ("LRANGE", "txd", "0", "-1"),
            ("RPUSH", "txd", "x"),
            ("SORT", "txd"),
            ("SORT_RO", "txd", "ALPHA", "LIMIT", "1", "2"),
            ("SADD", "txs", "b", "a"),
            ("SORT", "txs", "BY", "nosort", "STORE", "txd"),
            ("LRANGE", "txd", "0", "-1"),
            ("SORT", "tx", "LIMIT", "5", "5", "STORE", "txd"),
            ("EXISTS", "txd"),
            ("EXEC",),
            ("DEL", "tx", "txs"),
        ]
        assert c.pipeline(commands) == r.pipeline(commands)
    load(conns[2][0])
    load(conns[2][1])


def test_eval(conns):
    for p in (2, 3):
        pair = conns[p]
        scripts = [
            ("return redis.call('SORT', KEYS[1])", "1", "nset"),
            # In a script a set sorted by nothing comes in byte order.
            ("return redis.call('SORT', KEYS[1], 'BY', 'nosort')", "1", "wset"),
            ("return redis.call('SORT_RO', KEYS[1], 'BY', 'nosort', 'DESC', 'LIMIT', 1, 3)", "1", "wset"),
            ("return redis.call('SORT', KEYS[1], 'BY', 'w_*', 'GET', '#', 'GET', 'h_*->f')", "1", "words"),
            ("return redis.call('SORT', KEYS[1], 'ALPHA', 'STORE', KEYS[2])", "2", "words", "luad"),
            ("return redis.call('LRANGE', KEYS[1], 0, -1)", "1", "luad"),
            ("return redis.pcall('SORT', KEYS[1])", "1", "words"),
            ("return redis.pcall('SORT_RO', KEYS[1], 'STORE', 'x')", "1", "nums"),
            ("return redis.call('DEL', KEYS[1])", "1", "luad"),
        ]
        for body, numkeys, *rest in scripts:
            got, want = both(pair, "EVAL", body, numkeys, *rest)
            if isinstance(want, Error):
                # Redis adds the script's name and line; the error itself must match.
                assert isinstance(got, Error) and got.split(" script:")[0] == want.split(" script:")[0], body
            else:
                assert got == want, body


def test_keys_and_acl_categories(conns):
    pair = conns[2]
    for argv in [("SORT", "src"), ("SORT", "src", "STORE", "dst"), ("SORT", "src", "STORE", "a", "STORE", "b"),
                 ("SORT", "src", "BY", "store", "GET", "store", "LIMIT", "store", "1", "STORE", "d"),
                 ("SORT", "src", "STORE"), ("SORT_RO", "src", "BY", "x"), ("SORT", "src", "LIMIT", "0", "1", "STORE", "dst")]:
        same(pair, "COMMAND", "GETKEYS", *argv)
    c, r = pair
    for name in ("sort", "sort_ro"):
        got, want = c.call("COMMAND", "INFO", name), r.call("COMMAND", "INFO", name)
        # Name, arity and key positions (Cairn's flags do not list denyoom and movablekeys yet).
        assert got[0][:2] + got[0][3:6] == want[0][:2] + want[0][3:6], name
    for category in ("set", "sortedset", "list", "dangerous", "keyspace", "read", "write", "slow", "fast"):
        for name in (b"sort", b"sort_ro"):
            assert (name in c.call("ACL", "CAT", category)) == (name in r.call("ACL", "CAT", category)), (name, category)


def test_acl_limited_user(servers):
    """A user whose key patterns do not cover every key may sort, but not BY or GET a pattern
    (the keys those reach are unchecked), nor store outside its patterns."""
    replies = []
    for port in (servers[0].port, servers[1].port):
        admin = Raw(port)
        assert admin.call("ACL", "SETUSER", "sorter", "on", "nopass", "~app:*", "+@all") == "OK"
        assert admin.call("ACL", "SETUSER", "reader", "on", "nopass", "%R~*", "~app:*", "+@all") == "OK"
        assert admin.call("RPUSH", "app:src", "2", "1") == 2
        out = []
        for name in ("sorter", "reader"):
            user = Raw(port)
            assert user.call("AUTH", name, "x") == "OK"
            out += [user.call(*argv) for argv in [
                ("SORT", "app:src"),
                ("SORT", "app:src", "BY", "nosort"),
                ("SORT", "app:src", "BY", "app:w_*"),
                ("SORT", "app:src", "GET", "#"),
                ("SORT", "app:src", "GET", "app:*"),
                ("SORT_RO", "app:src", "BY", "w_*", "GET", "#"),
                ("SORT", "app:src", "STORE", "app:dst"),
                ("SORT", "app:src", "STORE", "other"),
                ("SORT", "other"),
                ("SORT", "app:src", "FOO", "GET", "#"),
            ]]
            user.close()
        replies.append(out)
        assert admin.call("ACL", "DELUSER", "sorter", "reader") == 2
        admin.call("DEL", "app:src", "app:dst", "other")
        admin.close()
    assert replies[0] == replies[1]


def test_big_sort_runs_as_in_redis(conns):
    """Past the size at which Cairn runs a command off the connection's worker."""
    pair = conns[2]
    rng = random.Random(5)
    values = [str(rng.randint(-10**6, 10**6)) for _ in range(12000)]
    c, r = pair
    for conn in pair:
        for i in range(0, len(values), 1000):
            conn.call("RPUSH", "huge", *values[i:i + 1000])
    same(pair, "SORT", "huge", "LIMIT", "0", "50")
    same(pair, "SORT", "huge", "DESC", "LIMIT", "11990", "50")
    assert same(pair, "SORT", "huge", "STORE", "hugeout") == 12000
    assert c.call("LRANGE", "hugeout", "0", "-1") == r.call("LRANGE", "hugeout", "0", "-1")
    same(pair, "SORT", "huge", "BY", "nosort", "DESC", "LIMIT", "100", "20")
    same(pair, "DEL", "huge", "hugeout")


def test_store_replicates():
    """SORT ... STORE reaches a replica like any write; the replica serves SORT_RO and refuses
    SORT (a write command, as in Redis)."""
    primary = Cairnd()
    replica = Cairnd()
    try:
        p, r = Raw(primary.port), Raw(replica.port)
        assert r.call("REPLICAOF", "127.0.0.1", str(primary.port)) == "OK"
        p.pipeline([("RPUSH", "src", *[str(i * 7 % 20) for i in range(20)]),
                    ("SORT", "src", "DESC", "STORE", "dst"),
                    ("SORT", "src", "BY", "nosort", "LIMIT", "0", "0", "STORE", "gone"),
                    ("SET", "str", "x"), ("SORT", "src", "ALPHA", "STORE", "str")])
        deadline = time.time() + 30
        while p.call("WAIT", "1", "1000") != 1:
            assert time.time() < deadline, "the replica did not acknowledge"
        for key in ("dst", "str"):
            want = p.call("LRANGE", key, "0", "-1")
            assert len(want) == 20
            while r.call("LRANGE", key, "0", "-1") != want:
                assert time.time() < deadline, f"{key} did not replicate"
                time.sleep(0.05)
        assert r.call("EXISTS", "gone") == 0
        assert r.call("SORT_RO", "src", "LIMIT", "0", "5") == p.call("SORT_RO", "src", "LIMIT", "0", "5")
        assert r.call("SORT", "src").startswith("READONLY")
        p.close()
        r.close()
    finally:
        replica.cleanup()
        primary.cleanup()
