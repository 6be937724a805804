"""appendfsync: kill -9 under load, then check that every acknowledged write survived."""
import signal
import threading
import time

import pytest
import redis

WRITERS = 24
LOAD_SECONDS = 2.5


def load_then_kill(server):
    """Runs WRITERS clients writing distinct keys until the server is killed with SIGKILL.

    Returns, per writer, the values whose write was acknowledged (the reply arrived) and how
    many of its transactions (SET + INCR of its counter, one batch) were acknowledged.
    """
    acked = [dict() for _ in range(WRITERS)]
    transactions = [0] * WRITERS
    started = threading.Barrier(WRITERS + 1)

    def writer(n):
        c = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=10)
        started.wait()
        i = 0
        try:
            while True:
                key, value = f"w{n}:{i}", f"value-{n}-{i}"
                if i % 10 == 9:
                    p = c.pipeline(transaction=True)
                    p.set(key, value)
                    p.incr(f"count{n}")
                    p.execute()
                    transactions[n] += 1
                else:
                    c.set(key, value)
                acked[n][key] = value
                i += 1
        except (redis.ConnectionError, redis.TimeoutError):
            return  # the server died: this write was not acknowledged

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    started.wait()
    time.sleep(LOAD_SECONDS)
    server.process.send_signal(signal.SIGKILL)
    server.process.wait()
    for t in threads:
        t.join(30)
    return acked, transactions


def check_all_present(server, acked, transactions):
    c = server.client()
    total = 0
    for n, writes in enumerate(acked):
        keys = list(writes)
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            got = c.mget(chunk)
            missing = [k for k, v in zip(chunk, got) if v is None or v.decode() != writes[k]]
            assert missing == [], f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
        total += len(keys)
        # The last transaction may have committed without its reply arriving: one more at most.
        count = int(c.get(f"count{n}") or 0)
        assert transactions[n] <= count <= transactions[n] + 1
    return total


@pytest.mark.parametrize("mode", ["always", "everysec"])
def test_kill_9_under_load_loses_nothing_acknowledged(fresh_server, mode):
    s = fresh_server("--appendfsync", mode)
    acked, transactions = load_then_kill(s)
    s.start()  # same data directory
    total = check_all_present(s, acked, transactions)
    print(f"\nappendfsync {mode}: {total} acknowledged writes from {WRITERS} clients, all present after kill -9")
    assert total > WRITERS * 10  # the load really ran


def test_always_shares_one_wal_sync_among_concurrent_writers(fresh_server):
    s = fresh_server("--appendfsync", "always")
    c = s.client()
    before = c.info("persistence")["wal_syncs"]
    writes = [0]
    lock = threading.Lock()

    def writer(n):
        w = s.client()
        for i in range(200):
            w.set(f"g{n}:{i}", i)
        with lock:
            writes[0] += 200

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    syncs = c.info("persistence")["wal_syncs"] - before
    print(f"\nappendfsync always: {writes[0]} writes from 20 clients, {syncs} WAL syncs")
    assert writes[0] == 4000
    assert 0 < syncs < writes[0]  # every write waited for a sync, and syncs were shared
    assert c.get("g19:199") == b"199"


def test_appendfsync_changes_at_run_time(fresh_server):
    s = fresh_server()
    c = s.client()
    assert c.config_get("appendfsync") == {"appendfsync": "everysec"}
    for mode in ("always", "no", "everysec"):
        c.config_set("appendfsync", mode)
        assert c.info("persistence")["appendfsync"] == mode
        before = c.info("persistence")["wal_syncs"]
        c.set(f"k-{mode}", mode)
        assert c.get(f"k-{mode}") == mode.encode()
        if mode == "always":
            assert c.info("persistence")["wal_syncs"] > before
    with pytest.raises(redis.ResponseError):
        c.config_set("appendfsync", "sometimes")
