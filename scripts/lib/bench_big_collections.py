"""Big collection commands against cairnd and redis-server, side by side: each command's own time
on each server, and the longest wait of a victim client doing GET and SET on other keys while it
runs (scripts/bench-big-collections).

The command's own time is the server's: INFO commandstats' usec for the one call (reset before
it), so neither the network nor this script's parsing of a big reply counts. The victims run in
a process of their own, so this process's work on a big reply cannot delay them either.

Each command runs on collections of --members members (set algebra and *STORE on two sets that
share half their members, sorted-set unions, range removals, list scans and inserts, RENAME and
COPY of a hash, and reads of a whole big key). Both servers get the same data; each command is
measured --rounds times on each, alternating, and the medians are printed with their ratio.

    python3 scripts/lib/bench_big_collections.py --bin .build/release [--members 500000] [--rounds 3]
"""
import argparse
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(__file__))
from bench import ServerUnderTest, ROOT  # noqa: E402


def victim(port, op, measuring, stop, worst):
    """GET or SET round trips on keys no command here touches; keeps the longest one while
    `measuring` is set, in `worst` (seconds)."""
    client = redis.Redis(port=port, socket_timeout=120)
    i = 0
    while not stop.is_set():
        t = time.monotonic()
        if op == "get":
            client.get(f"victim:{i % 100}")
        else:
            client.set(f"victim:{i % 100}", i)
        if measuring.is_set():
            worst.value = max(worst.value, time.monotonic() - t)
        i += 1
        time.sleep(0.001)


def load(port, n):
    """The same data on both servers: sets s1/s2 (half shared), sorted sets z1/z2, list l, hash h."""
    c = redis.Redis(port=port, socket_timeout=600)
    c.flushall()
    step = 10_000
    for start in range(0, n, step):
        p = c.pipeline(transaction=False)
        ids = range(start, min(n, start + step))
        p.sadd("s1", *[f"m:{i:08d}" for i in ids])
        p.sadd("s2", *[f"m:{i + n // 2:08d}" for i in ids])
        p.zadd("z1", {f"m:{i:08d}": i for i in ids})
        p.zadd("z2", {f"m:{i + n // 2:08d}": i for i in ids})
        p.rpush("l", *[f"e:{i:08d}" for i in ids])
        p.hset("h", mapping={f"f:{i:08d}": f"v:{i}" for i in ids})
        p.execute()
    c.set("victim:0", "0")


def commands(n):
    """(name, request, reset): the command, and what restores the data it changed."""
    mid = f"e:{n // 2:08d}"
    last = f"e:{n - 1:08d}"
    return [
        ("SINTERCARD 2 s1 s2", ("SINTERCARD", 2, "s1", "s2"), None),
        ("SINTER s1 s2", ("SINTER", "s1", "s2"), None),
        ("SUNION s1 s2", ("SUNION", "s1", "s2"), None),
        ("SDIFF s1 s2", ("SDIFF", "s1", "s2"), None),
        ("SINTERSTORE", ("SINTERSTORE", "out:s", "s1", "s2"), None),
        ("SUNIONSTORE", ("SUNIONSTORE", "out:s", "s1", "s2"), None),
        ("SDIFFSTORE", ("SDIFFSTORE", "out:s", "s1", "s2"), None),
        ("ZUNIONSTORE", ("ZUNIONSTORE", "out:z", 2, "z1", "z2"), None),
        ("ZINTERSTORE", ("ZINTERSTORE", "out:z", 2, "z1", "z2"), None),
        ("ZUNION WITHSCORES", ("ZUNION", 2, "z1", "z2", "WITHSCORES"), None),
        ("SMEMBERS s1", ("SMEMBERS", "s1"), None),
        ("HGETALL h", ("HGETALL", "h"), None),
        ("ZRANGE z1 0 -1", ("ZRANGE", "z1", 0, -1, "WITHSCORES"), None),
        ("LRANGE l 0 -1", ("LRANGE", "l", 0, -1), None),
        ("LPOS l <last>", ("LPOS", "l", last), None),
        ("LINSERT l BEFORE <mid>", ("LINSERT", "l", "BEFORE", mid, "x"), ("LREM", "l", 0, "x")),
        ("LREM l 0 <mid>", ("LREM", "l", 0, mid), ("LINSERT", "l", "AFTER", f"e:{n // 2 - 1:08d}", mid)),
        ("COPY h h2", ("COPY", "h", "h2", "REPLACE"), None),
        ("RENAME h h3", ("RENAME", "h", "h3"), ("RENAME", "h3", "h")),
        ("ZREMRANGEBYRANK z1 0 <half>", ("ZREMRANGEBYRANK", "out:z", 0, n // 2), None),
    ]


def server_usec(client, request):
    """The server's own time for the one call of `request` since the last CONFIG RESETSTAT."""
    name = str(request[0]).lower()
    stats = client.info("commandstats")
    entry = stats.get(f"cmdstat_{name}")
    return entry["usec"] if entry else 0


def cpu_seconds(pid):
    """The process's CPU time so far (user + system, every thread), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(port, pid, request):
    """Runs `request` while two victims run: (the server's seconds, the wall seconds, the victims'
    worst, the server's CPU seconds meanwhile, its background threads' included)."""
    stop, measuring = multiprocessing.Event(), multiprocessing.Event()
    worst = [multiprocessing.Value("d", 0.0) for _ in range(2)]
    victims = [multiprocessing.Process(target=victim, args=(port, op, measuring, stop, w), daemon=True)
               for op, w in zip(("get", "set"), worst)]
    for v in victims:
        v.start()
    time.sleep(0.3)
    c = redis.Redis(port=port, socket_timeout=600)
    c.config_resetstat()
    measuring.set()
    cpu = cpu_seconds(pid)
    t = time.monotonic()
    c.execute_command(*request)
    elapsed = time.monotonic() - t
    time.sleep(0.1)
    cpu = cpu_seconds(pid) - cpu
    measuring.clear()
    usec = server_usec(c, request)
    stop.set()
    for v in victims:
        v.join(30)
    return usec / 1e6, elapsed, max(w.value for w in worst), cpu


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    p.add_argument("--members", type=int, default=500_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="", help="comma-separated command names (prefix match) to run")
    a = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="cairn-bench-big-")
    cairn_bin = os.path.join(os.path.abspath(a.bin), "cairnd")
    cairn = ServerUnderTest("Cairn", lambda port: [cairn_bin, os.path.join(ROOT, "config", "cairn.conf"), "--port", str(port),
                                                   "--dir", os.path.join(workdir, "cairn-data"), "--log-level", "warning"], workdir)
    os.makedirs(os.path.join(workdir, "redis-data"))
    red = ServerUnderTest("Redis", lambda port: ["redis-server", "--port", str(port), "--save", "", "--appendonly", "yes",
                                                 "--appendfsync", "everysec", "--dir", os.path.join(workdir, "redis-data")], workdir)
    wanted = [w.strip().upper() for w in a.only.split(",") if w.strip()]
    chosen = [c for c in commands(a.members) if not wanted or any(c[0].upper().startswith(w) for w in wanted)]
    results = {}
    try:
        for server in (cairn, red):
            t = time.monotonic()
            load(server.port, a.members)
            print(f"loaded {server.name} in {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)
        for rnd in range(a.rounds):
            for server in (cairn, red) if rnd % 2 == 0 else (red, cairn):
                c = redis.Redis(port=server.port, socket_timeout=600)
                for name, request, reset in chosen:
                    seconds, wall, worst, cpu = measure(server.port, server.process.pid, request)
                    results.setdefault((server.name, name), []).append((seconds, worst, cpu))
                    if reset:
                        c.execute_command(*reset)
                    print(f"round {rnd + 1} {server.name:5} {name:28} {seconds * 1000:9.1f} ms (client saw {wall * 1000:9.1f} ms)"
                          f"  victim {worst * 1000:7.1f} ms  cpu {cpu * 1000:7.0f} ms", file=sys.stderr, flush=True)
        print(f"\n{a.members:,} members, medians of {a.rounds} rounds: the server's own time for the command (INFO commandstats),"
              f" the longest GET/SET round trip of a victim on other keys meanwhile, and the server's CPU time meanwhile"
              f" (every thread: on a busy machine the steadier measure of the work)\n")
        print(f"| command | Cairn | Redis | Cairn / Redis | Cairn's victim | Redis's victim | Cairn CPU | Redis CPU | CPU ratio |")
        print(f"|---|---|---|---|---|---|---|---|---|")
        for name, _, _ in chosen:
            cs = results[("Cairn", name)]
            rs = results[("Redis", name)]
            ct = statistics.median(x[0] for x in cs)
            rt = statistics.median(x[0] for x in rs)
            cv = max(x[1] for x in cs)
            rv = max(x[1] for x in rs)
            cc = statistics.median(x[2] for x in cs)
            rc = statistics.median(x[2] for x in rs)
            print(f"| {name} | {ct * 1000:,.1f} ms | {rt * 1000:,.1f} ms | {ct / rt if rt else float('inf'):.2f}x "
                  f"| {cv * 1000:,.1f} ms | {rv * 1000:,.1f} ms | {cc * 1000:,.0f} ms | {rc * 1000:,.0f} ms "
                  f"| {cc / rc if rc else float('inf'):.2f}x |")
    finally:
        cairn.stop()
        red.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
