"""Expiry at scale against the real cairnd: a million keys with a 2-second TTL vanish from every
command, and the background sweep gives their space back without anyone running COMPACT."""
import os
import subprocess
import sys
import time

KEYS = 1_000_000


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def load_with_ttl(server, count, seconds, prefix=b"exp:"):
    """Sends `count` SETs (random 100-byte values, EX `seconds`) through redis-cli --pipe."""
    value = os.urandom(50).hex().encode()
    payload = b"".join(resp(b"SET", b"%s%07d" % (prefix, i), value, b"EX", b"%d" % seconds) for i in range(count))
    result = subprocess.run(["redis-cli", "-p", str(server.port), "--pipe"], input=payload,
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert b"errors: 0, replies: %d" % count in result.stdout, result.stdout


def directory_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except FileNotFoundError:
                pass  # a file RocksDB deleted while we walked
    return total


def assert_nothing_visible(c, sample):
    assert c.dbsize() == 0
    assert c.keys("exp:*") == []
    cursor, seen = 0, []
    while True:
        cursor, batch = c.scan(cursor, count=5000)
        seen.extend(batch)
        if cursor == 0:
            break
    assert seen == []
    assert c.randomkey() is None
    assert c.execute_command("RANGE", "-", "+", "LIMIT", "10") == []
    assert c.exists(*sample) == 0
    assert c.mget(sample) == [None] * len(sample)
    assert all(c.ttl(k) == -2 for k in sample[:50])
    it = c.execute_command("ITER.OPEN")
    assert c.execute_command("ITER.NEXT", it, "100") == []
    c.execute_command("ITER.CLOSE", it)


def test_million_keys_expire_everywhere_and_space_comes_back(fresh_server):
    s = fresh_server()
    c = s.client()
    c.set("keep", "still here")
    started = time.time()
    load_with_ttl(s, KEYS, 2)
    loaded = time.time()
    data_dir = os.path.join(s.directory, "data")
    peak = directory_bytes(data_dir)

    # Right after the TTL passes, before the sweep can have deleted much, nothing is visible.
    time.sleep(max(0.0, 2.2 - (time.time() - loaded)))
    sample = [b"exp:%07d" % i for i in range(0, KEYS, KEYS // 1000)]
    c.delete("keep")
    assert_nothing_visible(c, sample)
    c.set("keep", "still here")

    # The sweep deletes them and compacts: the directory shrinks with no COMPACT. (Compactions
    # during the load may already have dropped some through the expiry compaction filter.)
    deadline = time.time() + 180
    size = peak
    while time.time() < deadline:
        size = directory_bytes(data_dir)
        if size < peak // 10:
            break
        time.sleep(1)
    reclaimed = time.time()
    stats = c.info("stats")
    print(f"\n1,000,000 keys, EX 2: load {loaded - started:.1f}s, data dir {peak / 2**20:.1f} MiB after load, "
          f"{size / 2**20:.1f} MiB {reclaimed - loaded:.1f}s after the load ended "
          f"(expired_keys={stats['expired_keys']}, expired_values_compacted={stats['expired_values_compacted']}, "
          f"sweep compactions={stats['expire_sweep_compactions']})", file=sys.stderr)
    assert size < peak // 10, f"data directory still {size} bytes of a {peak}-byte peak"
    # Every key goes by the sweep or by the compaction filter. The directory can shrink while the
    # sweep's time-bounded steps still have the last keys of its pass to delete, so wait for them.
    deadline = time.time() + 60
    while True:
        stats = c.info("stats")
        if stats["expired_keys"] + stats["expired_values_compacted"] >= KEYS or time.time() > deadline:
            break
        time.sleep(0.2)
    assert stats["expired_keys"] + stats["expired_values_compacted"] >= KEYS
    assert stats["expired_keys"] > KEYS // 2, "the sweep, not luck, did most of the work"
    assert c.info("keyspace").get("db0", {}).get("keys", 0) <= 10
    assert c.get("keep") == b"still here"
    assert c.dbsize() == 1
