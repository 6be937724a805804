"""CPU per request and cores used, for A/B comparisons of cairnd builds (or against redis-server).

Instruction counts (scripts/profile) do not show waiting: two workers taking turns on a lock
cost the same instructions as two running together. This runs each build on a fresh server,
alternating builds round by round, and prints for each redis-benchmark test its rate, the
cores the server used (its CPU time from /proc over the wall time), the benchmark client's
cores, and the server's CPU microseconds per request; then the median rate of each build and
test over the rounds. Rates on a small shared machine move by 15% between rounds; compare
medians of alternating rounds only.

  python3 scripts/lib/cpu_per_request.py --bin OLD --bin NEW --tests set,incr --rounds 4
  python3 scripts/lib/cpu_per_request.py --bin NEW --redis --tests get -P 16
  python3 scripts/lib/cpu_per_request.py --bin NEW --tests mset -n 60000 --set io-threads=1

A test named get first loads the keyspace with SETs (untimed). Not part of scripts/test.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time


def parse_args():
    p = argparse.ArgumentParser(prog="cpu_per_request.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", action="append", required=True, help="folder with a release cairnd (repeatable: A/B)")
    p.add_argument("--redis", action="store_true", help="also run redis-server in each round")
    p.add_argument("--tests", default="set,incr", help="redis-benchmark -t list (set,incr)")
    p.add_argument("-P", type=int, default=16, help="pipeline depth (16)")
    p.add_argument("-n", type=int, default=400_000, help="requests per test (400000)")
    p.add_argument("-r", type=int, default=100_000, help="keyspace (100000)")
    p.add_argument("-c", type=int, default=50, help="clients (50)")
    p.add_argument("--rounds", type=int, default=1, help="alternating rounds (1)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a cairnd option (repeatable)")
    return p.parse_args()


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_for_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"no server on port {port}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(server, options, workdir):
    port = free_port()
    if server == "redis":
        cmd = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", workdir]
    else:
        cmd = [os.path.join(server, "cairnd"), "--port", str(port), "--dir", workdir]
        for o in options:
            cmd += ["--set", o]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port)
    return proc, port


def run_test(proc, port, test, args):
    hz = os.sysconf("SC_CLK_TCK")
    before, started = cpu_ticks(proc.pid), time.time()
    bench = ["redis-benchmark", "-p", str(port), "-t", test, "-n", str(args.n), "-r", str(args.r),
             "-P", str(args.P), "-c", str(args.c), "-d", "100", "-q"]
    usage = os.times()
    out = subprocess.run(bench, capture_output=True, text=True).stdout
    after_usage = os.times()
    wall = time.time() - started
    server = (cpu_ticks(proc.pid) - before) / hz
    client = (after_usage.children_user - usage.children_user) + (after_usage.children_system - usage.children_system)
    rates = re.findall(r"([\d.]+) requests per second", out)
    if not rates:
        raise SystemExit(f"redis-benchmark printed no rate for {test}: {out[-300:]}")
    return float(rates[-1]), server / wall, client / wall, server / args.n * 1e6


def main():
    args = parse_args()
    servers = [os.path.abspath(b) for b in args.bin] + (["redis"] if args.redis else [])
    tests = [t.strip() for t in args.tests.split(",") if t.strip()]
    rates = {}
    for rnd in range(1, args.rounds + 1):
        for server in servers:
            with tempfile.TemporaryDirectory() as workdir:
                proc, port = start(server, args.set, workdir)
                try:
                    if "get" in tests:
                        subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-n", str(2 * args.r),
                                        "-r", str(args.r), "-P", "16", "-q"], stdout=subprocess.DEVNULL)
                    for test in tests:
                        rate, cores, client, micros = run_test(proc, port, test, args)
                        rates.setdefault((server, test), []).append(rate)
                        print(f"round {rnd} {server:40} {test:8} -P {args.P}: {rate:10,.0f} req/s  server cores "
                              f"{cores:.2f}  client cores {client:.2f}  server CPU {micros:.2f} us/req", flush=True)
                finally:
                    proc.terminate()
                    proc.wait()
    print("\nmedians over the rounds")
    for (server, test), values in rates.items():
        print(f"{server:40} {test:8} {statistics.median(values):10,.0f} req/s  ({len(values)} rounds)")


if __name__ == "__main__":
    main()
