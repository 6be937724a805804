#!/usr/bin/env python3
"""Cairn's value cache against RocksDB's row cache, for GETs of a uniform and a skewed key space.

Starts redis-server and three cairnd: no cache beyond the block cache, `row-cache-size`, and
`value-cache-size` (the same size), each loaded with the same SETs. Then, in alternating
rounds, runs with redis-benchmark:

- `uniform`: GETs over all of `-r keyspace`, each key read about once per run;
- `skewed`: 90% of GETs on the first tenth of the key space (bench.py's `get_skewed`);
- `skewed+writes`: the skewed GETs while a tenth as many SETs go to random keys of the whole
  key space at the same time (writes move key-lock stripes, which the value cache checks).

Prints each server's median rate, the ratio to Redis's, and each cache's hit counts.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="folder with a release cairnd")
    p.add_argument("--size", default="256mb", help="row and value cache size (256mb)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are taken (3)")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--data-size", type=int, default=100)
    p.add_argument("--keyspace", type=int, default=1_000_000)
    p.add_argument("--requests", type=int, default=200_000, help="requests per run at -P 1 (200000)")
    p.add_argument("--requests-pipelined", type=int, default=1_000_000, help="requests per run at -P 16 (1000000)")
    p.add_argument("--pipelines", default="1,16")
    p.add_argument("--workloads", default="uniform,skewed,skewed+writes")
    return p.parse_args()


def run_skewed_with_writes(port, pipeline, args, requests):
    """The skewed GETs, with SETs of random keys (a tenth as many) running alongside."""
    cmd = ["redis-benchmark", "-p", str(port), "-n", str(requests // 10), "-c", "5", "-d", str(args.data_size),
           "-r", str(args.keyspace), "-P", str(pipeline), "-q", "-t", "set"]
    writer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return bench.run_skewed(port, pipeline, args, requests)
    finally:
        writer.wait()


def run(port, workload, pipeline, args):
    requests = args.requests if pipeline == 1 else args.requests_pipelined
    if workload == "uniform":
        return bench.run_benchmark(port, "get", pipeline, args)
    if workload == "skewed":
        return bench.run_skewed(port, pipeline, args, requests)
    return run_skewed_with_writes(port, pipeline, args, requests)


def main():
    args = parse_args()
    pipelines = [int(p) for p in args.pipelines.split(",")]
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    workdir = tempfile.mkdtemp(prefix="cairn-bench-caches-")
    cairnd = os.path.join(os.path.abspath(args.bin), "cairnd")
    conf = os.path.join(bench.ROOT, "config", "cairn.conf")

    def cairn(name, options):
        data = os.path.join(workdir, name)
        sets = [a for o in options for a in ("--set", o)]
        return bench.ServerUnderTest(name, lambda port: [cairnd, conf, "--port", str(port), "--dir", data,
                                                         "--log-level", "warning"] + sets, workdir)

    servers = []
    try:
        servers.append(cairn("none", []))
        servers.append(cairn("row-cache", [f"row-cache-size={args.size}"]))
        servers.append(cairn("value-cache", [f"value-cache-size={args.size}"]))
        os.makedirs(os.path.join(workdir, "redis-data"))
        servers.append(bench.ServerUnderTest("Redis", lambda port: [
            "redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
            "--dir", os.path.join(workdir, "redis-data")], workdir))
        for s in servers:
            subprocess.run(["redis-benchmark", "-p", str(s.port), "-n", str(args.keyspace), "-c", "50", "-P", "16",
                            "-d", str(args.data_size), "-r", str(args.keyspace), "-q", "-t", "set"],
                           check=True, stdout=subprocess.DEVNULL)
        samples = {}
        for rnd in range(args.rounds):
            order = servers if rnd % 2 == 0 else list(reversed(servers))
            for pipeline in pipelines:
                for workload in workloads:
                    for s in order:
                        r = run(s.port, workload, pipeline, args)
                        samples.setdefault((s.name, workload, pipeline), []).append(r["rps"])
                        print(f"round {rnd + 1} {s.name:12} {workload:14} -P {pipeline:<3} {r['rps']:>12,.0f} ops/s",
                              file=sys.stderr)
        counts = {s.name: {f: s.info_field("stats", f) for f in ("value_cache_hits", "value_cache_misses")}
                  for s in servers if s.name == "value-cache"}
        rss = {s.name: s.rss_bytes() for s in servers}
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"GETs, redis-benchmark -c {args.clients} -d {args.data_size} -r {args.keyspace}, caches {args.size}, "
          f"median of {args.rounds} alternating rounds ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n")
    names = [s.name for s in servers]
    print(f"{'workload':<15}{'-P':>4}" + "".join(f"{n:>14}" for n in names) + "".join(f"{n + '/Redis':>20}" for n in names[:-1]))
    for pipeline in pipelines:
        for workload in workloads:
            rates = {n: bench.median(samples[(n, workload, pipeline)]) for n in names}
            print(f"{workload:<15}{pipeline:>4}" + "".join(f"{rates[n]:>14,.0f}" for n in names)
                  + "".join(f"{rates[n] / rates['Redis']:>20.2f}" for n in names[:-1]))
    for name, c in counts.items():
        total = c["value_cache_hits"] + c["value_cache_misses"]
        print(f"\n{name}: {c['value_cache_hits']:,} hits of {total:,} lookups"
              f" ({100 * c['value_cache_hits'] / max(1, total):.0f}%)")
    print("RSS after the runs: " + ", ".join(f"{n} {rss[n] / bench.MIB:,.0f} MiB" for n in names))


if __name__ == "__main__":
    main()
