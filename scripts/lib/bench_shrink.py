"""scripts/bench-shrink: collections that shrink stay fast.

Fills one sorted set (ZADD), one set (SADD) and, once Cairn has lists, one list (RPUSH) with
N members each, then pops them all (ZPOPMIN, SPOP, LPOP) in pipelined batches and prints the
rate of every 100,000 pops: a rate that falls towards the end means the deleted entries pile
up in front of the next read. The last column is the last slice's rate over the first's.

    python3 scripts/lib/bench_shrink.py --bin .build/release [--members 1000000] [--types zset,set,list]
"""
import argparse
import os
import shutil
import sys
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_watch import start_cairnd  # noqa: E402

BATCH = 1000  # commands per pipeline round trip


def fill(c, kind, members):
    for start in range(0, members, BATCH * 10):
        p = c.pipeline(transaction=False)
        for b in range(start, min(members, start + BATCH * 10), BATCH):
            names = [f"member:{i:09d}" for i in range(b, min(members, b + BATCH))]
            if kind == "zset":
                p.zadd("shrink:zset", {n: i for i, n in enumerate(names, b)})
            elif kind == "set":
                p.sadd("shrink:set", *names)
            else:
                p.rpush("shrink:list", *names)
        p.execute()


def pop_all(c, kind, members, slice_size):
    key = f"shrink:{kind}"
    rates = []
    done = 0
    slice_start = time.monotonic()
    while done < members:
        p = c.pipeline(transaction=False)
        n = min(BATCH, members - done)
        for _ in range(n):
            if kind == "zset":
                p.zpopmin(key)
            elif kind == "set":
                p.spop(key)
            else:
                p.lpop(key)
        replies = p.execute()
        assert all(replies), f"{kind}: a pop found nothing with {members - done} members left"
        done += n
        if done % slice_size == 0 or done == members:
            now = time.monotonic()
            rates.append(n_rate := (slice_size if done % slice_size == 0 else done % slice_size) / (now - slice_start))
            print(f"  {kind:5} pops {done - (slice_size if done % slice_size == 0 else done % slice_size):>9,}-{done:<9,} {n_rate:>10,.0f}/s", flush=True)
            slice_start = now
    assert c.exists(key) == 0, f"{kind}: the emptied key still exists"
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory holding cairnd")
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--slice", type=int, default=100_000, help="pops per printed rate (100000)")
    parser.add_argument("--types", default="zset,set,list", help="which collections (zset,set,list)")
    args = parser.parse_args()
    process, port, directory = start_cairnd(os.path.join(args.bin, "cairnd"))
    try:
        c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=600)
        for kind in args.types.split(","):
            if kind == "list":
                try:
                    c.rpush("shrink:probe", "x")
                    c.delete("shrink:probe")
                except redis.ResponseError as e:
                    print(f"list: skipped ({e})")
                    continue
            started = time.monotonic()
            fill(c, kind, args.members)
            print(f"{kind}: {args.members:,} members loaded in {time.monotonic() - started:.1f} s", flush=True)
            rates = pop_all(c, kind, args.members, args.slice)
            print(f"{kind}: last slice / first slice = {rates[-1] / rates[0]:.2f}", flush=True)
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
