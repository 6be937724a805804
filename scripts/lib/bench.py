"""The side-by-side benchmark behind scripts/bench.

Starts cairnd and redis-server (no RDB snapshots, appendonly with appendfsync everysec, Cairn's
default durability) on free loopback ports with fresh data directories, runs redis-benchmark
against each in alternating order for several rounds, and prints medians and ratios
(Cairn / Redis), p50/p99 latency at -P 1, each server's CPU time per request (user + system,
every thread, from /proc), each server's RSS afterwards, and how close the server comes to the
embedded engine (cairn-bench-rocks). Writes JSON and an SVG chart.

With --cores N the servers are pinned to N cores and redis-benchmark to the others (taskset):
cairnd with io-threads N, redis-server on one thread, and (for N > 1) redis-server again with
io-threads N. On a 2-core machine that is N=1; the same command on a larger machine shows how
the rate and the CPU per request grow with N past Redis's single thread.
"""
import argparse
import csv
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Ratio targets from the performance issue: (test, pipeline) -> minimum Cairn/Redis ratio.
TARGETS = {("SET", 1): 0.9, ("GET", 1): 0.9, ("SET", 16): 0.6, ("GET", 16): 0.7,
           ("INCR", 16): 0.5, ("MSET", 16): 0.7,
           # The data types issue: each at least half of Redis's rate at -P 16.
           **{(t, 16): 0.5 for t in ("LPUSH", "LPOP", "SADD", "HSET", "ZADD", "ZPOPMIN", "LRANGE_100")}}
MIB = 1 << 20


def parse_args():
    p = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="folder with release cairnd and cairn-bench-rocks")
    p.add_argument("--rounds", type=int, default=3, help="A/B rounds; medians are taken over them (3)")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c (50)")
    p.add_argument("--data-size", type=int, default=100, help="redis-benchmark -d (100)")
    p.add_argument("--keyspace", type=int, default=1_000_000, help="redis-benchmark -r (1000000)")
    p.add_argument("--requests", type=int, default=200_000, help="requests per test at -P 1 (200000)")
    p.add_argument("--requests-pipelined", type=int, default=1_000_000,
                   help="requests per test at -P 16 and above (1000000)")
    p.add_argument("--tests", default="set,get,get_skewed,incr,mset,lpush,lpop,sadd,hset,zadd,zpopmin,lrange_100,evalsha,xadd,xreadgroup,xack",
                   help="redis-benchmark -t list (set,get,get_skewed,incr,mset,lpush,lpop,sadd,hset,zadd,zpopmin,lrange_100,"
                        "evalsha,xadd,xreadgroup,xack); `evalsha` runs a two-command script; `get_skewed` sends 90%% of its GETs to 10%% of"
                        " the keys (two redis-benchmark runs at once: 9/10 of the clients on the first tenth of -r,"
                        " 1/10 on all of it); xadd, xreadgroup and xack: see STREAM_TESTS")
    p.add_argument("--pipelines", default="1,16", help="pipeline depths (1,16)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a cairnd option for this run (repeatable), e.g. value-cache-size=256mb")
    p.add_argument("--quick", action="store_true", help="a fifth of the requests: a rough look, not a report")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "bench"),
                   help="folder for results.json and chart.svg (docs/bench)")
    p.add_argument("--no-write", action="store_true", help="print only; write no files")
    p.add_argument("--cores", type=int, default=None,
                   help="pin each server to N cores (cairnd with io-threads N) and redis-benchmark to the rest")
    args = p.parse_args()
    if args.quick:
        args.requests //= 5
        args.requests_pipelined //= 5
    return args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, name, log_path):
    deadline = time.time() + 30
    while time.time() < deadline:
        if process.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    with open(log_path) as f:
        raise SystemExit(f"{name} did not start:\n{f.read()}")


class ServerUnderTest:
    def __init__(self, name, argv_for_port, workdir):
        self.name = name
        self.port = free_port()
        self.log_path = os.path.join(workdir, f"{name.lower()}.log")
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(argv_for_port(self.port), stdout=self.log, stderr=self.log, cwd=workdir)
        wait_for_port(self.port, self.process, name, self.log_path)

    def cpu_seconds(self):
        """CPU time so far, user + system, every thread."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_bytes(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def info_field(self, section, name):
        out = subprocess.run(["redis-cli", "-p", str(self.port), "INFO", section],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith(name + ":"):
                return int(line.split(":", 1)[1])
        return 0

    def config(self, name):
        out = subprocess.run(["redis-cli", "-p", str(self.port), "CONFIG", "GET", name],
                             capture_output=True, text=True, check=True).stdout.split()
        return out[1] if len(out) > 1 else None

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


# A two-command script for the `evalsha` test: redis-benchmark runs EVALSHA of it on random keys.
SCRIPT = "redis.call('INCR', KEYS[1]) return redis.call('GET', KEYS[1])"


def client_prefix(args):
    """taskset (and redis-benchmark threads) for the benchmark client under --cores."""
    if not args.client_cpus:
        return [], []
    cpus = ",".join(map(str, args.client_cpus))
    threads = ["--threads", str(len(args.client_cpus))] if len(args.client_cpus) > 1 else []
    return ["taskset", "-c", cpus], threads


def run_skewed(port, pipeline, args, requests):
    """GETs of which 90% go to the first tenth of the key space: two redis-benchmark processes
    at once, 9/10 of the clients and requests on `-r keyspace/10`, the rest on all of it. The
    rate is all requests over the longer run; latencies are the hot run's."""
    hot_clients = max(1, args.clients * 9 // 10)
    runs = [(hot_clients, requests * 9 // 10, args.keyspace // 10),
            (max(1, args.clients - hot_clients), requests // 10, args.keyspace)]
    procs = []
    started = time.monotonic()
    for clients, n, keyspace in runs:
        pin, threads = client_prefix(args)
        cmd = pin + ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", str(clients), "-d", str(args.data_size),
                     "-r", str(keyspace), "-P", str(pipeline), "--csv", "-t", "get"] + threads
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    results = []
    for cmd, proc in procs:
        out, err = proc.communicate()
        rows = [r for r in csv.reader(io.StringIO(out)) if r and r[0] != "test"]
        if proc.returncode != 0 or not rows:
            raise SystemExit(f"redis-benchmark failed: {' '.join(cmd)}\n{out}\n{err}")
        results.append(rows[-1])
    elapsed = time.monotonic() - started
    hot = results[0]
    return {"rps": sum(n for _, n, _ in runs) / elapsed, "p50_ms": float(hot[4]), "p99_ms": float(hot[6]),
            "requests": sum(n for _, n, _ in runs)}


# Stream tests: XADD to 100 streams; XREADGROUP (one entry each, `>`) from a stream filled
# beforehand with one entry per request, by 50 consumers of one group; then XACK of random
# delivered IDs (an ID acknowledged twice answers 0).
STREAM_TESTS = ("xadd", "xreadgroup", "xack")


def stream_benchmark(port, test, requests, cmd):
    """The redis-benchmark command line for a stream test (`cmd` ends with its common options),
    after preparing what it reads."""
    cmd = list(cmd)
    r_at = cmd.index("-r")
    if test == "xadd":
        cmd[r_at + 1] = "100"
        return cmd + ["XADD", "stream:__rand_int__", "*", "field", "value"]
    if test == "xreadgroup":
        fill_stream(port, requests)
        return cmd + ["XREADGROUP", "GROUP", "workers", "worker", "COUNT", "1", "STREAMS", "jobs", ">"]
    cmd[r_at + 1] = str(requests)
    return cmd + ["XACK", "jobs", "workers", "__rand_int__-1"]


def fill_stream(port, entries):
    """`jobs` with entries 0-1 .. entries-1, `f v` each, and the group `workers` at its start."""
    import redis
    c = redis.Redis(port=port)
    c.delete("jobs")
    chunk = 10_000
    for start in range(0, entries, chunk):
        p = c.pipeline(transaction=False)
        for i in range(start, min(entries, start + chunk)):
            p.xadd("jobs", {"f": "v"}, id=f"{i}-1")
        p.execute()
    c.xgroup_create("jobs", "workers", id="0")


def run_benchmark(port, test, pipeline, args):
    requests = args.requests if pipeline == 1 else args.requests_pipelined
    if test == "get_skewed":
        return run_skewed(port, pipeline, args, requests)
    pin, threads = client_prefix(args)
    cmd = pin + ["redis-benchmark", "-p", str(port), "-n", str(requests), "-c", str(args.clients),
                 "-d", str(args.data_size), "-r", str(args.keyspace), "-P", str(pipeline), "--csv"] + threads
    if test in STREAM_TESTS:
        cmd = stream_benchmark(port, test, requests, cmd)
    elif test == "evalsha":
        sha = subprocess.run(["redis-cli", "-p", str(port), "SCRIPT", "LOAD", SCRIPT],
                             capture_output=True, text=True, check=True).stdout.strip()
        # Keys of its own: the SET test leaves strings under key:..., which INCR refuses.
        cmd += ["EVALSHA", sha, "1", "script:__rand_int__"]
    else:
        cmd += ["-t", test]
    result = subprocess.run(cmd, capture_output=True, text=True)
    rows = [r for r in csv.reader(io.StringIO(result.stdout)) if r and r[0] != "test"]
    if result.returncode != 0 or not rows:
        raise SystemExit(f"redis-benchmark failed: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    row = rows[-1]  # lrange_* runs an LPUSH fill first
    # test, rps, avg, min, p50, p95, p99, max (milliseconds); lrange_* runs an LPUSH fill first
    fill = requests if test.startswith("lrange") else 0
    return {"rps": float(row[1]), "p50_ms": float(row[4]), "p99_ms": float(row[6]), "requests": requests + fill}


def embedded_rates(args, workdir):
    """The embedded engine's rates, or None when --bin has no cairn-bench-rocks (an older build
    measured beside a newer one)."""
    if not os.path.exists(os.path.join(args.bin, "cairn-bench-rocks")):
        return None
    out = subprocess.run([os.path.join(args.bin, "cairn-bench-rocks"), "--requests", str(args.requests_pipelined),
                          "--keyspace", str(args.keyspace), "--value-size", str(args.data_size),
                          "--dir", os.path.join(workdir, "embedded")], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def median(values):
    return statistics.median(values) if values else 0.0


def main():
    args = parse_args()
    tests = [t.strip().lower() for t in args.tests.split(",") if t.strip()]
    pipelines = [int(p) for p in args.pipelines.split(",")]
    workdir = tempfile.mkdtemp(prefix="cairn-bench-")
    args.bin = os.path.abspath(args.bin)
    cairn_bin = os.path.join(args.bin, "cairnd")
    print(f"cairn: {cairn_bin}\nredis: {shutil.which('redis-server')}  work: {workdir}", file=sys.stderr)

    server_pin, args.client_cpus = [], []
    if args.cores:
        cpus = sorted(os.sched_getaffinity(0))
        if args.cores > len(cpus):
            raise SystemExit(f"--cores {args.cores}: this process may use {len(cpus)} CPUs")
        server_pin = ["taskset", "-c", ",".join(map(str, cpus[:args.cores]))]
        args.client_cpus = cpus[args.cores:]
        args.set = args.set + [f"io-threads={args.cores}"]
        print(f"servers on CPUs {cpus[:args.cores]}, redis-benchmark on "
              f"{args.client_cpus or 'the same CPUs (none left)'}", file=sys.stderr)

    def redis_argv(data, extra=()):
        os.makedirs(os.path.join(workdir, data))
        return lambda port: server_pin + ["redis-server", "--port", str(port), "--save", "", "--appendonly", "yes",
                                          "--appendfsync", "everysec", "--dir", os.path.join(workdir, data), *extra]

    cairn = ServerUnderTest("Cairn", lambda port: server_pin + [cairn_bin, os.path.join(ROOT, "config", "cairn.conf"),
                                                                "--port", str(port), "--dir", os.path.join(workdir, "cairn-data"),
                                                                "--log-level", "warning"]
                                                  + [a for o in args.set for a in ("--set", o)], workdir)
    redis = ServerUnderTest("Redis", redis_argv("redis-data"), workdir)
    servers = [cairn, redis]
    if args.cores and args.cores > 1:
        # Redis's own way past one core: threads that read and write the sockets.
        servers.append(ServerUnderTest("Redis-io", redis_argv("redis-io-data", ("--io-threads", str(args.cores),
                                                                                 "--io-threads-do-reads", "yes")), workdir))
    samples = {}  # (server, TEST, pipeline) -> [result]
    try:
        for rnd in range(args.rounds):
            order = servers if rnd % 2 == 0 else list(reversed(servers))
            for server in order:
                for pipeline in pipelines:
                    for test in tests:
                        cpu = server.cpu_seconds()
                        r = run_benchmark(server.port, test, pipeline, args)
                        r["cpu_us"] = (server.cpu_seconds() - cpu) * 1e6 / r["requests"]
                        samples.setdefault((server.name, test.upper(), pipeline), []).append(r)
                        print(f"round {rnd + 1}/{args.rounds} {server.name:5} {test.upper():5} -P {pipeline:<3}"
                              f" {r['rps']:>12,.0f} ops/s  p50 {r['p50_ms']:.3f} ms  p99 {r['p99_ms']:.3f} ms"
                              f"  cpu {r['cpu_us']:.2f} us/req", file=sys.stderr)
        rss = {s.name: s.rss_bytes() for s in servers}
        # Where Cairn's memory is: RocksDB's memtables and block cache, the rest is everything else.
        rss_parts = {"memtables": cairn.info_field("memory", "rocksdb_memtables"),
                     "block_cache": cairn.info_field("memory", "rocksdb_block_cache_usage"),
                     "row_cache": cairn.info_field("memory", "rocksdb_row_cache_usage"),
                     "value_cache": cairn.info_field("memory", "value_cache_bytes")}
        budget = (int(cairn.config("block-cache-size") or 0) + 4 * int(cairn.config("write-buffer-size") or 0)
                  + int(cairn.config("row-cache-size") or 0) + int(cairn.config("value-cache-size") or 0) + 64 * MIB)
    finally:
        for s in servers:
            s.stop()
    embedded = embedded_rates(args, workdir)
    shutil.rmtree(workdir, ignore_errors=True)

    rows = []
    for pipeline in pipelines:
        for test in tests:
            name = test.upper()
            c = samples[("Cairn", name, pipeline)]
            r = samples[("Redis", name, pipeline)]
            row = {"test": name, "pipeline": pipeline,
                   "cairn_rps": median([x["rps"] for x in c]), "redis_rps": median([x["rps"] for x in r]),
                   "cairn_p50_ms": median([x["p50_ms"] for x in c]), "redis_p50_ms": median([x["p50_ms"] for x in r]),
                   "cairn_p99_ms": median([x["p99_ms"] for x in c]), "redis_p99_ms": median([x["p99_ms"] for x in r]),
                   "cairn_cpu_us": median([x["cpu_us"] for x in c]), "redis_cpu_us": median([x["cpu_us"] for x in r]),
                   "target": TARGETS.get((name, pipeline))}
            if ("Redis-io", name, pipeline) in samples:
                io_ = samples[("Redis-io", name, pipeline)]
                row["redis_io_rps"] = median([x["rps"] for x in io_])
                row["redis_io_cpu_us"] = median([x["cpu_us"] for x in io_])
            row["ratio"] = row["cairn_rps"] / row["redis_rps"] if row["redis_rps"] else 0.0
            rows.append(row)

    report = render(args, rows, rss, rss_parts, budget, embedded)
    print(report)
    if not args.no_write:
        os.makedirs(args.out, exist_ok=True)
        results = {"parameters": {k: getattr(args, k) for k in
                                  ("rounds", "clients", "data_size", "keyspace", "requests", "requests_pipelined", "set", "cores")},
                   "rows": rows, "rss_bytes": rss, "cairn_rss_parts_bytes": rss_parts, "cairn_rss_budget_bytes": budget, "embedded": embedded,
                   "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
        with open(os.path.join(args.out, "chart.svg"), "w") as f:
            f.write(chart(rows, results["when"]))
        print(f"\nwrote {args.out}/results.json and {args.out}/chart.svg")


def render(args, rows, rss, rss_parts, budget, embedded):
    pinned = (f"; servers pinned to {args.cores} core(s), redis-benchmark to "
              f"{len(args.client_cpus) or 'the same'} other(s)" if args.cores else "")
    lines = [f"redis-benchmark -c {args.clients} -d {args.data_size} -r {args.keyspace}, "
             f"-n {args.requests} at -P 1 and {args.requests_pipelined} pipelined; median of {args.rounds} "
             f"alternating rounds" + (f"; cairnd with {', '.join(args.set)}" if args.set else "") + pinned, "",
             f"{'test':<11}{'-P':>4}{'Cairn ops/s':>14}{'Redis ops/s':>14}{'ratio':>8}{'target':>8}",
             "-" * 54]
    for r in rows:
        target = f"{r['target']:.2f}" if r["target"] else ""
        flag = "" if not r["target"] else ("  ok" if r["ratio"] >= r["target"] else "  below")
        lines.append(f"{r['test']:<11}{r['pipeline']:>4}{r['cairn_rps']:>14,.0f}{r['redis_rps']:>14,.0f}"
                     f"{r['ratio']:>8.2f}{target:>8}{flag}")
    scaling = any("redis_io_rps" in r for r in rows)
    lines += ["", "server CPU per request (us, user + system, every thread)" + (f", {args.cores} core(s) each" if args.cores else ""),
              f"{'test':<11}{'-P':>4}{'Cairn':>9}{'Redis':>9}{'ratio':>8}"
              + (f"{'Redis-io ops/s':>16}{'Redis-io':>10}{'Cairn / Redis-io':>18}" if scaling else ""),
              "-" * (41 + (44 if scaling else 0))]
    for r in rows:
        ratio = r["cairn_cpu_us"] / r["redis_cpu_us"] if r["redis_cpu_us"] else 0.0
        line = f"{r['test']:<11}{r['pipeline']:>4}{r['cairn_cpu_us']:>9.2f}{r['redis_cpu_us']:>9.2f}{ratio:>8.2f}"
        if "redis_io_rps" in r:
            line += (f"{r['redis_io_rps']:>16,.0f}{r['redis_io_cpu_us']:>10.2f}"
                     f"{r['cairn_rps'] / r['redis_io_rps'] if r['redis_io_rps'] else 0.0:>18.2f}")
        lines.append(line)
    lines += ["", "latency at -P 1 (ms)", f"{'test':<11}{'Cairn p50':>11}{'Redis p50':>11}{'Cairn p99':>11}"
              f"{'Redis p99':>11}{'p99 ratio':>11}", "-" * 61]
    for r in rows:
        if r["pipeline"] != 1:
            continue
        ratio = r["cairn_p99_ms"] / r["redis_p99_ms"] if r["redis_p99_ms"] else 0.0
        lines.append(f"{r['test']:<11}{r['cairn_p50_ms']:>11.3f}{r['redis_p50_ms']:>11.3f}{r['cairn_p99_ms']:>11.3f}"
                     f"{r['redis_p99_ms']:>11.3f}{ratio:>11.2f}" + ("  (target <= 2)" if r["test"] in ("SET", "GET", "INCR") else ""))
    set16 = next((r for r in rows if r["test"] == "SET" and r["pipeline"] >= 16), None)
    if embedded is not None:
        lines += ["", f"embedded engine, one thread: put {embedded['put_ops']:,} ops/s, get {embedded['get_ops']:,} ops/s"]
    if set16 and embedded is not None:
        lines.append(f"server SET -P {set16['pipeline']} / embedded put: {set16['cairn_rps'] / embedded['put_ops']:.2f}"
                     " (target >= 0.80)")
    caches = rss_parts.get("row_cache", 0) + rss_parts.get("value_cache", 0)
    lines += ["", f"RSS after the run: Cairn {rss['Cairn'] / MIB:,.0f} MiB (budget {budget / MIB:,.0f} MiB = block cache"
              f" + 4 memtables + row and value caches + 64 MiB), Redis {rss['Redis'] / MIB:,.0f} MiB",
              f"  of Cairn's: memtables {rss_parts['memtables'] / MIB:,.0f} MiB, block cache {rss_parts['block_cache'] / MIB:,.0f} MiB,"
              f" row cache {rss_parts.get('row_cache', 0) / MIB:,.0f} MiB, value cache {rss_parts.get('value_cache', 0) / MIB:,.0f} MiB,"
              f" the rest {(rss['Cairn'] - rss_parts['memtables'] - rss_parts['block_cache'] - caches) / MIB:,.0f} MiB"]
    return "\n".join(lines)


def chart(rows, when):
    """Horizontal bars of Cairn/Redis per test, with the 1.0 line and each target marked."""
    bar_h, gap, left, width = 22, 10, 120, 520
    top = 50
    height = top + len(rows) * (bar_h + gap) + 50
    scale = width / max(1.2, max(r["ratio"] for r in rows) * 1.1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
           f'font-family="sans-serif" font-size="13">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="22" font-size="15" font-weight="bold">Cairn / redis-server throughput '
           f'(redis-benchmark, same run)</text>',
           f'<text x="10" y="40" fill="#555">{when}; bar = ratio of medians; black tick = target</text>']
    for i, r in enumerate(rows):
        y = top + i * (bar_h + gap)
        w = r["ratio"] * scale
        ok = r["target"] is None or r["ratio"] >= r["target"]
        color = "#3b7dd8" if ok else "#d8713b"
        out.append(f'<text x="10" y="{y + 16}">{r["test"]} -P {r["pipeline"]}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>')
        out.append(f'<text x="{left + w + 6:.1f}" y="{y + 16}">{r["ratio"]:.2f}</text>')
        if r["target"]:
            tx = left + r["target"] * scale
            out.append(f'<line x1="{tx:.1f}" y1="{y - 3}" x2="{tx:.1f}" y2="{y + bar_h + 3}" stroke="black" stroke-width="2"/>')
    one = left + scale
    bottom = top + len(rows) * (bar_h + gap)
    out.append(f'<line x1="{one:.1f}" y1="{top - 5}" x2="{one:.1f}" y2="{bottom}" stroke="#999" stroke-dasharray="4"/>')
    out.append(f'<text x="{one - 30:.1f}" y="{bottom + 18}" fill="#555">Redis = 1.0</text>')
    out.append("</svg>")
    return "\n".join(out)


if __name__ == "__main__":
    main()
