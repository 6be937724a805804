"""scripts/bench-scale: a 10,000,000-field hash and a 10,000,000-member sorted set in a cairnd
with a 64 MiB block cache: load rate, point and range reads, DEL, space after COMPACT, RSS."""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import redis

MIB = 1 << 20


def start(binary, directory):
    port_file = os.path.join(directory, "port")
    log = open(os.path.join(directory, "cairnd.log"), "wb")
    process = subprocess.Popen([binary, "--port", "0", "--dir", os.path.join(directory, "data"), "--port-file", port_file,
                                "--log-level", "warning", "--set", "block-cache-size=64mb"], stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline and process.poll() is None:
        if os.path.exists(port_file) and open(port_file).read().strip():
            return process, int(open(port_file).read())
        time.sleep(0.05)
    raise SystemExit("cairnd did not start")


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def disk(directory):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(directory) for f in fs)


def timed(c, argv, samples):
    """Median and p99 µs of one command per sample (argv is a function of the sample index)."""
    took = []
    for i in range(samples):
        started = time.perf_counter()
        c.execute_command(*argv(i))
        took.append((time.perf_counter() - started) * 1e6)
    took.sort()
    return took[len(took) // 2], took[int(len(took) * 0.99)]


def load(c, n, make, label):
    started = time.perf_counter()
    batch = 1000
    pipe = c.pipeline(transaction=False)
    for start in range(0, n, batch):
        pipe.execute_command(*make(start, min(n, start + batch)))
        if (start // batch) % 20 == 19:
            pipe.execute()
    pipe.execute()
    took = time.perf_counter() - started
    print(f"{label}: loaded {n:,} in {took:.0f} s ({n / took:,.0f}/s)")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bin", required=True)
    p.add_argument("--members", type=int, default=10_000_000)
    p.add_argument("--samples", type=int, default=2000)
    args = p.parse_args()
    directory = tempfile.mkdtemp(prefix="cairn-scale-")
    process, port = start(os.path.join(args.bin, "cairnd"), directory)
    c = redis.Redis(port=port, socket_timeout=600)
    n = args.members
    try:
        config = {k.decode() if isinstance(k, bytes) else k: v for k, v in c.config_get("*").items()}
        budget = int(config.get("block-cache-size", 64 * MIB)) + 4 * int(config.get("write-buffer-size", 64 * MIB)) + 64 * MIB
        load(c, n, lambda a, b: ["HSET", "hash"] + [x for i in range(a, b) for x in (f"field:{i:09d}", f"value-{i}")], "hash")
        assert c.hlen("hash") == n
        have_zset = True
        try:
            load(c, n, lambda a, b: ["ZADD", "zset"] + [x for i in range(a, b) for x in (i * 0.5, f"member:{i:09d}")], "zset")
            assert c.zcard("zset") == n
        except redis.ResponseError as e:
            print(f"sorted sets: skipped ({e})")
            have_zset = False
        c.execute_command("COMPACT")
        print(f"data directory {disk(directory) / MIB:,.0f} MiB, cairnd RSS {rss(process.pid) / MIB:,.0f} MiB (budget {budget / MIB:,.0f} MiB)")
        rnd = random.Random(1)
        picks = [rnd.randrange(n) for _ in range(args.samples)]
        med, p99 = timed(c, lambda i: ("HGET", "hash", f"field:{picks[i]:09d}"), args.samples)
        print(f"HGET random field: median {med:.0f} µs, p99 {p99:.0f} µs")
        if have_zset:
            med, p99 = timed(c, lambda i: ("ZSCORE", "zset", f"member:{picks[i]:09d}"), args.samples)
            print(f"ZSCORE random member: median {med:.0f} µs, p99 {p99:.0f} µs")
            med, p99 = timed(c, lambda i: ("ZRANGE", "zset", picks[i] * 0.5, "+inf", "BYSCORE", "LIMIT", 0, 100), args.samples)
            print(f"ZRANGE BYSCORE page of 100 from a random score: median {med:.0f} µs, p99 {p99:.0f} µs")
            few = max(10, args.samples // 100)
            med, p99 = timed(c, lambda i: ("ZRANK", "zset", f"member:{picks[i]:09d}"), few)
            print(f"ZRANK random member ({few} samples; O(rank)): median {med / 1000:.1f} ms, p99 {p99 / 1000:.1f} ms")
        print(f"cairnd RSS after reads {rss(process.pid) / MIB:,.0f} MiB (budget {budget / MIB:,.0f} MiB)")
        before = disk(directory)
        for key in ["hash"] + (["zset"] if have_zset else []):
            started = time.perf_counter()
            assert c.delete(key) == 1
            print(f"DEL {key}: {(time.perf_counter() - started) * 1000:.2f} ms")
        started = time.perf_counter()
        c.execute_command("COMPACT")
        print(f"COMPACT: {time.perf_counter() - started:.1f} s; data directory {before / MIB:,.0f} MiB -> {disk(directory) / MIB:,.0f} MiB")
    finally:
        process.terminate()
        process.wait(60)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
