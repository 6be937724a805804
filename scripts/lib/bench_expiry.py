"""The expiry sweep's cost, behind scripts/bench-expiry.

Loads 1,000,000 keys into a fresh cairnd, all expiring at one moment, and runs redis-benchmark
SET/GET from that moment on, while the background sweep deletes them; then the same run with
the same keys and no TTL. Prints throughput of each and the ratio, and how long the sweep took
to delete every key and give back the space.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, ServerUnderTest, run_benchmark  # noqa: E402


def resp(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def load(port, keys, expire_at):
    value = os.urandom(50).hex().encode()
    ttl = (b"EXAT", b"%d" % expire_at) if expire_at else ()
    payload = b"".join(resp(b"SET", b"exp:%07d" % i, value, *ttl) for i in range(keys))
    out = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=payload, capture_output=True, check=True)
    if b"errors: 0" not in out.stdout:
        raise SystemExit(out.stdout.decode())


def info_field(port, section, field):
    text = subprocess.run(["redis-cli", "-p", str(port), "INFO", section], capture_output=True, text=True).stdout
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split(":")[1])
    return 0


def directory_bytes(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs
               if os.path.exists(os.path.join(r, f)))


def one_run(args, expiring, workdir):
    data = os.path.join(workdir, f"data-{'ttl' if expiring else 'plain'}-{time.time_ns()}")
    server = ServerUnderTest("Cairn", lambda port: [os.path.join(args.bin, "cairnd"), os.path.join(ROOT, "config", "cairn.conf"),
                                                    "--port", str(port), "--dir", data, "--log-level", "warning"], workdir)
    try:
        expire_at = int(time.time()) + args.load_seconds if expiring else 0
        load(server.port, args.keys, expire_at)
        # Both runs start at the same point of the timeline: when the keys fall due.
        time.sleep(max(0.0, (expire_at or int(time.time()) + args.load_seconds) - time.time()))
        size_before = directory_bytes(data)
        started = time.time()
        results = {}
        for test in ("set", "get"):
            results[test] = run_benchmark(server.port, test, args.pipeline, args)["rps"]
        swept_at = None

        def gone():
            # The sweep deletes keys; compactions that the benchmark's own writes set off drop
            # expired values through the compaction filter before the sweep reaches them.
            return (info_field(server.port, "stats", "expired_keys")
                    + info_field(server.port, "stats", "expired_values_compacted"))
        if expiring:
            while time.time() - started < 300 and gone() < args.keys:
                time.sleep(0.5)
            swept_at = time.time() - started
        return {"set": results["set"], "get": results["get"], "swept_seconds": swept_at,
                "expired": info_field(server.port, "stats", "expired_keys"),
                "compacted": info_field(server.port, "stats", "expired_values_compacted"),
                "size_before": size_before, "size_after": directory_bytes(data)}
    finally:
        server.stop()


def main():
    p = argparse.ArgumentParser(prog="scripts/bench-expiry", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--keys", type=int, default=1_000_000, help="keys that expire (1000000)")
    p.add_argument("--load-seconds", type=int, default=25, help="time allowed for loading them (25)")
    p.add_argument("--rounds", type=int, default=2, help="runs of each kind, alternating (2)")
    p.add_argument("--requests-pipelined", type=int, default=1_000_000, help="redis-benchmark -n (1000000)")
    p.add_argument("--pipeline", type=int, default=16, help="redis-benchmark -P (16)")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--data-size", type=int, default=100)
    p.add_argument("--keyspace", type=int, default=1_000_000)
    args = p.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.requests = args.requests_pipelined
    workdir = tempfile.mkdtemp(prefix="cairn-bench-expiry-")
    runs = {True: [], False: []}
    for rnd in range(args.rounds):
        for expiring in ((True, False) if rnd % 2 == 0 else (False, True)):
            r = one_run(args, expiring, workdir)
            runs[expiring].append(r)
            print(f"round {rnd + 1} {'expiring' if expiring else 'no TTL  '}: SET {r['set']:,.0f}  GET {r['get']:,.0f}"
                  + (f"  all gone {r['swept_seconds']:.1f}s after they fell due" if expiring else ""),
                  file=sys.stderr)
    med = {k: {t: statistics.median(x[t] for x in v) for t in ("set", "get")} for k, v in runs.items()}
    print(f"\nredis-benchmark -t set,get -n {args.requests_pipelined} -P {args.pipeline} -c {args.clients} "
          f"-d {args.data_size} -r {args.keyspace}, started when {args.keys:,} keys fall due; median of {args.rounds}\n")
    print(f"{'':24}{'SET ops/s':>12}{'GET ops/s':>12}")
    print(f"{'no TTL':24}{med[False]['set']:>12,.0f}{med[False]['get']:>12,.0f}")
    print(f"{f'{args.keys:,} keys expiring':24}{med[True]['set']:>12,.0f}{med[True]['get']:>12,.0f}")
    print(f"{'ratio (expiring/no TTL)':24}{med[True]['set'] / med[False]['set']:>12.2f}{med[True]['get'] / med[False]['get']:>12.2f}")
    for r in runs[True]:
        print(f"gone {r['swept_seconds']:.1f}s after they fell due: {r['expired']:,} deleted by the sweep, "
              f"{r['compacted']:,} values dropped by compaction's expiry filter; data directory "
              f"{r['size_before'] / 2**20:.1f} MiB -> {r['size_after'] / 2**20:.1f} MiB (includes the benchmark's own keys)")


if __name__ == "__main__":
    main()
