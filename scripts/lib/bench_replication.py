"""scripts/bench-replication: SET -P 16 with and without a replica, for cairnd and for redis-server
on the same machine with the same redis-benchmark line; the CPU each side spends per operation
(the primary per SET, its feeder thread, the replica per applied operation); replica lag; full
sync time."""
import argparse
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time

import redis


CAIRND_ARGS = []
# With --replica-own-core: CPU lists for the primary and redis-benchmark, and for the replica.
PRIMARY_CPUS = None
REPLICA_CPUS = None


def pinned(cpus):
    return ["taskset", "-c", cpus] if cpus else []


def start(binary, directory, *args, nice=0, idle=False, cpus=None):
    os.makedirs(directory, exist_ok=True)
    port_file = os.path.join(directory, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    log = open(os.path.join(directory, "cairnd.log"), "ab")
    prefix = pinned(cpus) + (["chrt", "--idle", "0"] if idle else []) + (["nice", "-n", str(nice)] if nice else [])
    process = subprocess.Popen(prefix + [binary, "--port", "0", "--dir", os.path.join(directory, "data"), "--port-file", port_file,
                                "--log-level", "warning", *CAIRND_ARGS, *args], stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline and process.poll() is None:
        if os.path.exists(port_file) and open(port_file).read().strip():
            return process, int(open(port_file).read())
        time.sleep(0.05)
    raise SystemExit("cairnd did not start: " + open(os.path.join(directory, "cairnd.log"), errors="replace").read()[-2000:])


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid, name):
    """CPU time so far of the threads of a process whose name (comm) starts with `name`."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        if comm.startswith(name):
            fields = text.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def start_redis(directory, *args, cpus=None):
    """A redis-server on a free port with no persistence (Redis's own default is RDB snapshots;
    here, as cairnd's only disk cost is its WAL, none at all unless `args` ask)."""
    os.makedirs(directory, exist_ok=True)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(os.path.join(directory, "redis.log"), "ab")
    process = subprocess.Popen(pinned(cpus) + ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, "--save", "",
                                "--appendonly", "no", *args], stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline and process.poll() is None:
        try:
            redis.Redis(port=port).ping()
            return process, port
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit("redis-server did not start: " + open(os.path.join(directory, "redis.log"), errors="replace").read()[-2000:])


def stop(process):
    process.terminate()
    process.wait(30)


BENCHMARK_CPU = []


def benchmark(port, requests):
    """SET -P 16 throughput; notes redis-benchmark's own CPU per request in BENCHMARK_CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(pinned(PRIMARY_CPUS) + ["redis-benchmark", "-p", str(port), "-t", "set", "-n", str(requests), "-c", "50", "-P", "16",
                          "-d", "100", "-r", "1000000", "-q"], capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    BENCHMARK_CPU.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / requests * 1e6)
    m = re.findall(r"([0-9.]+) requests per second", out)
    return float(m[-1]) if m else 0.0


def wait_synced(primary, replica, timeout=3600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        i = replica.info("replication")
        if i.get("master_link_status") == "up" and i.get("master_sync_in_progress") == 0 \
                and i["master_repl_offset"] >= primary.info("replication")["master_repl_offset"]:
            return
        time.sleep(0.02)
    raise SystemExit("the replica did not catch up")


def lag_probe(primary, replica, stop_event, lags_ms, lags_seq):
    """Every 20 ms: write a probe on the primary and time until the replica reads it; and the
    difference of the two offsets."""
    n = 0
    while not stop_event.is_set():
        n += 1
        value = str(n)
        primary.set("lag:probe", value)
        written = time.perf_counter()
        while replica.get("lag:probe") != value.encode():
            if time.perf_counter() - written > 30:
                break
            time.sleep(0.0005)
        lags_ms.append((time.perf_counter() - written) * 1000)
        lags_seq.append(primary.info("replication")["master_repl_offset"] - replica.info("replication")["master_repl_offset"])
        time.sleep(0.02)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else 0


def replica_offset(client):
    return client.info("replication")["master_repl_offset"]


def cairn_round(binary, root, rnd, a, lags_ms, lags_seq):
    """One round for cairnd: SET alone, then with one replica; CPU per operation of each side."""
    f = {}
    d = os.path.join(root, f"alone{rnd}")
    p, port = start(binary, d, cpus=PRIMARY_CPUS)
    before = cpu_seconds(p.pid)
    f["alone"] = benchmark(port, a.requests)
    f["cpu_alone"] = (cpu_seconds(p.pid) - before) / a.requests * 1e6
    stop(p)
    shutil.rmtree(d)
    d = os.path.join(root, f"primary{rnd}")
    p, port = start(binary, d, cpus=PRIMARY_CPUS)
    r, rport = start(binary, os.path.join(root, f"replica{rnd}"), nice=a.replica_nice, idle=a.replica_idle, cpus=REPLICA_CPUS)
    pc, rc = redis.Redis(port=port), redis.Redis(port=rport)
    rc.execute_command("REPLICAOF", "127.0.0.1", port)
    wait_synced(pc, rc)
    stop_event = threading.Event()
    probe = threading.Thread(target=lag_probe, args=(redis.Redis(port=port), redis.Redis(port=rport), stop_event, lags_ms, lags_seq))
    if a.lag:
        probe.start()
    before, feeder_before = cpu_seconds(p.pid), thread_cpu_seconds(p.pid, "cairn-feeder")
    replica_before, link_before, applied_before = cpu_seconds(r.pid), thread_cpu_seconds(r.pid, "cairn-link"), replica_offset(rc)
    recorders = []
    if a.perf and rnd == 0:
        # Samples of both processes' stacks while the replica applies: `perf report -i FILE`.
        for pid, name in ((p.pid, "primary"), (r.pid, "replica")):
            recorders.append(subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(pid), "-o", f"{a.perf}.{name}.data"],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    f["replicated"] = benchmark(port, a.requests)
    f["cpu_primary"] = (cpu_seconds(p.pid) - before) / a.requests * 1e6
    f["cpu_feeder"] = (thread_cpu_seconds(p.pid, "cairn-feeder") - feeder_before) / a.requests * 1e6
    stop_event.set()
    if a.lag:
        probe.join()
    # The replica's cost per operation it applied, until it caught up.
    wait_synced(pc, rc)
    for recorder in recorders:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(60)
    applied = replica_offset(rc) - applied_before
    f["cpu_replica"] = (cpu_seconds(r.pid) - replica_before) / applied * 1e6
    f["cpu_link"] = (thread_cpu_seconds(r.pid, "cairn-link") - link_before) / applied * 1e6
    f["same"] = pc.execute_command("DEBUG", "DIGEST") == rc.execute_command("DEBUG", "DIGEST")
    stop(r)
    stop(p)
    shutil.rmtree(d)
    shutil.rmtree(os.path.join(root, f"replica{rnd}"))
    return f


def redis_round(root, rnd, a):
    """The same for redis-server: SET alone, then with a redis-server replica."""
    f = {}
    d = os.path.join(root, f"redis-alone{rnd}")
    p, port = start_redis(d, cpus=PRIMARY_CPUS)
    before = cpu_seconds(p.pid)
    f["alone"] = benchmark(port, a.requests)
    f["cpu_alone"] = (cpu_seconds(p.pid) - before) / a.requests * 1e6
    stop(p)
    shutil.rmtree(d)
    d = os.path.join(root, f"redis-primary{rnd}")
    p, port = start_redis(d, cpus=PRIMARY_CPUS)
    r, rport = start_redis(os.path.join(root, f"redis-replica{rnd}"), "--replicaof", "127.0.0.1", str(port), cpus=REPLICA_CPUS)
    pc, rc = redis.Redis(port=port), redis.Redis(port=rport)
    wait_synced(pc, rc)
    before, replica_before = cpu_seconds(p.pid), cpu_seconds(r.pid)
    f["replicated"] = benchmark(port, a.requests)
    f["cpu_primary"] = (cpu_seconds(p.pid) - before) / a.requests * 1e6
    wait_synced(pc, rc)
    f["cpu_replica"] = (cpu_seconds(r.pid) - replica_before) / a.requests * 1e6
    f["same"] = pc.dbsize() == rc.dbsize()
    stop(r)
    stop(p)
    shutil.rmtree(d)
    shutil.rmtree(os.path.join(root, f"redis-replica{rnd}"))
    return f


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--sync-mb", type=int, default=2048, help="the full sync's data set; 0 skips that part")
    ap.add_argument("--replica-nice", type=int, default=0,
                    help="run the replica at this nice level, so on a small machine it takes less of the primary's CPU")
    ap.add_argument("--replica-idle", action="store_true",
                    help="run the replica under SCHED_IDLE (chrt --idle): it gets only CPU time nothing else wants")
    ap.add_argument("--replica-own-core", action="store_true",
                    help="the replica on the last CPU, the primary and redis-benchmark on the others (as when the "
                         "replica runs on another host: the primary's cores are not shared with it)")
    ap.add_argument("--no-redis", dest="redis", action="store_false", help="skip the same comparison for redis-server")
    ap.add_argument("--no-lag", dest="lag", action="store_false",
                    help="no lag probe (its reads on the replica cost the replica CPU too)")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="a cairnd option for every cairnd started (e.g. write-buffer-size=16mb); repeatable")
    ap.add_argument("--perf", metavar="PREFIX",
                    help="record the primary's and the replica's CPU samples (perf record -g) in the first round's replicated "
                         "run into PREFIX.primary.data and PREFIX.replica.data")
    a = ap.parse_args()
    if a.perf and not shutil.which("perf"):
        raise SystemExit("--perf needs perf (apt-get install linux-perf)")
    for option in a.option:
        CAIRND_ARGS.extend(["--set", option])
    if a.replica_own_core:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise SystemExit("--replica-own-core needs two CPUs or more")
        global PRIMARY_CPUS, REPLICA_CPUS
        PRIMARY_CPUS = ",".join(map(str, cpus[:-1]))
        REPLICA_CPUS = str(cpus[-1])
        print(f"primary and redis-benchmark on CPU {PRIMARY_CPUS}, the replica on CPU {REPLICA_CPUS}", flush=True)
    binary = os.path.join(a.bin, "cairnd")
    root = tempfile.mkdtemp(prefix="bench-replication-")
    try:
        print(f"load average at the start: {loadavg()} ({os.cpu_count()} cores)", flush=True)
        rounds, redis_rounds, lags_ms, lags_seq = [], [], [], []
        for rnd in range(a.rounds):
            f = cairn_round(binary, root, rnd, a, lags_ms, lags_seq)
            rounds.append(f)
            print(f"round {rnd + 1}: cairnd SET -P16 alone {f['alone']:,.0f}/s, with a replica {f['replicated']:,.0f}/s "
                  f"({f['replicated'] / f['alone']:.2f}), digests equal: {f['same']}; load {loadavg()}", flush=True)
            if not f["same"]:
                raise SystemExit("the replica's digest differs from the primary's")
            if a.redis:
                g = redis_round(root, rnd, a)
                redis_rounds.append(g)
                print(f"round {rnd + 1}: redis-server SET -P16 alone {g['alone']:,.0f}/s, with a replica {g['replicated']:,.0f}/s "
                      f"({g['replicated'] / g['alone']:.2f}), same key count: {g['same']}; load {loadavg()}", flush=True)

        def median(rs, key):
            return statistics.median(x[key] for x in rs)

        ma, mr = median(rounds, "alone"), median(rounds, "replicated")
        print(f"\nSET -P 16 (-c 50 -d 100 -r 1000000, {a.requests:,} requests), medians of {a.rounds} rounds:")
        print(f"  cairnd, no replica  {ma:12,.0f} ops/s")
        print(f"  cairnd, one replica {mr:12,.0f} ops/s   ratio {mr / ma:.2f} (target >= 0.90); "
              "per round " + ", ".join(f"{x['replicated'] / x['alone']:.2f}" for x in rounds))
        ca, cp = median(rounds, "cpu_alone"), median(rounds, "cpu_primary")
        print(f"  the primary's CPU per SET: {ca:.2f} us alone, {cp:.2f} us with a replica ({(cp / ca - 1) * 100:+.0f}%), "
              f"of which its feeder thread {median(rounds, 'cpu_feeder'):.2f} us")
        print(f"  redis-benchmark's own CPU per request: {statistics.median(BENCHMARK_CPU):.2f} us (all runs)")
        print(f"  the replica's CPU per applied operation: {median(rounds, 'cpu_replica'):.2f} us, "
              f"of which its link thread (receive, parse, write) {median(rounds, 'cpu_link'):.2f} us")
        if a.redis:
            ra, rr = median(redis_rounds, "alone"), median(redis_rounds, "replicated")
            print(f"  redis-server, no replica  {ra:12,.0f} ops/s")
            print(f"  redis-server, one replica {rr:12,.0f} ops/s   ratio {rr / ra:.2f}; "
                  "per round " + ", ".join(f"{x['replicated'] / x['alone']:.2f}" for x in redis_rounds))
            rca, rcp = median(redis_rounds, "cpu_alone"), median(redis_rounds, "cpu_primary")
            print(f"  redis-server's CPU per SET: {rca:.2f} us alone, {rcp:.2f} us with a replica ({(rcp / rca - 1) * 100:+.0f}%); "
                  f"its replica's per SET: {median(redis_rounds, 'cpu_replica'):.2f} us")
        if a.lag:
            print(f"replica lag under that load ({len(lags_ms)} probes): p50 {pct(lags_ms, 0.5):.1f} ms, p99 {pct(lags_ms, 0.99):.1f} ms; "
                  f"in sequence numbers p50 {pct(lags_seq, 0.5)}, p99 {pct(lags_seq, 0.99)}")
        print(f"load average at the end: {loadavg()}", flush=True)
        if a.sync_mb <= 0:
            return

        # Full sync of a data set of --sync-mb MB (incompressible 100 KB values).
        d = os.path.join(root, "big")
        p, port = start(binary, d)
        pc = redis.Redis(port=port)
        value_count = a.sync_mb * 10
        started = time.perf_counter()
        for base in range(0, value_count, 100):
            pc.mset({f"big:{i}": os.urandom(100_000) for i in range(base, min(value_count, base + 100))})
        pc.execute_command("COMPACT")
        load_s = time.perf_counter() - started
        data = os.path.join(d, "data")
        size = sum(os.path.getsize(os.path.join(x, f)) for x, _, fs in os.walk(data) for f in fs)
        copy = os.path.join(root, "copy")
        subprocess.run(["sync"])
        started = time.perf_counter()
        subprocess.run(["cp", "-r", data, copy], check=True)
        subprocess.run(["sync"])
        cp_s = time.perf_counter() - started
        shutil.rmtree(copy)
        r, rport = start(binary, os.path.join(root, "big-replica"))
        rc = redis.Redis(port=rport)
        started = time.perf_counter()
        rc.execute_command("REPLICAOF", "127.0.0.1", port)
        wait_synced(pc, rc)
        sync_s = time.perf_counter() - started
        same = pc.execute_command("DEBUG", "DIGEST") == rc.execute_command("DEBUG", "DIGEST")
        stop(r)
        stop(p)
        print(f"full sync of {size / (1 << 20):,.0f} MB (loaded in {load_s:.0f} s): {sync_s:.1f} s; cp -r of the same files + sync: {cp_s:.1f} s; "
              f"ratio {sync_s / cp_s:.2f}; digests equal: {same}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
