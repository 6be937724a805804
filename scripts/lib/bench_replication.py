"""scripts/bench-replication: SET -P 16 with and without a replica, replica lag, full sync time."""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

import redis


def start(binary, directory, *args, nice=0):
    os.makedirs(directory, exist_ok=True)
    port_file = os.path.join(directory, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    log = open(os.path.join(directory, "cairnd.log"), "ab")
    process = subprocess.Popen((["nice", "-n", str(nice)] if nice else []) + [binary, "--port", "0", "--dir", os.path.join(directory, "data"), "--port-file", port_file,
                                "--log-level", "warning", *args], stdout=log, stderr=log)
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


def stop(process):
    process.terminate()
    process.wait(30)


def benchmark(port, requests):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-n", str(requests), "-c", "50", "-P", "16",
                          "-d", "100", "-r", "1000000", "-q"], capture_output=True, text=True).stdout
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--sync-mb", type=int, default=2048)
    ap.add_argument("--replica-nice", type=int, default=0,
                    help="run the replica at this nice level, so on a small machine it takes less of the primary's CPU")
    a = ap.parse_args()
    binary = os.path.join(a.bin, "cairnd")
    root = tempfile.mkdtemp(prefix="bench-replication-")
    try:
        alone, replicated, lags_ms, lags_seq = [], [], [], []
        cpu_alone, cpu_replicated = [], []
        for rnd in range(a.rounds):
            d = os.path.join(root, f"alone{rnd}")
            p, port = start(binary, d)
            before = cpu_seconds(p.pid)
            alone.append(benchmark(port, a.requests))
            cpu_alone.append((cpu_seconds(p.pid) - before) / a.requests * 1e6)
            stop(p)
            shutil.rmtree(d)
            d = os.path.join(root, f"primary{rnd}")
            p, port = start(binary, d)
            r, rport = start(binary, os.path.join(root, f"replica{rnd}"), nice=a.replica_nice)
            pc, rc = redis.Redis(port=port), redis.Redis(port=rport)
            rc.execute_command("REPLICAOF", "127.0.0.1", port)
            wait_synced(pc, rc)
            stop_event = threading.Event()
            probe = threading.Thread(target=lag_probe, args=(redis.Redis(port=port), redis.Redis(port=rport), stop_event, lags_ms, lags_seq))
            probe.start()
            before = cpu_seconds(p.pid)
            replicated.append(benchmark(port, a.requests))
            cpu_replicated.append((cpu_seconds(p.pid) - before) / a.requests * 1e6)
            stop_event.set()
            probe.join()
            wait_synced(pc, rc)
            same = pc.execute_command("DEBUG", "DIGEST") == rc.execute_command("DEBUG", "DIGEST")
            stop(r)
            stop(p)
            shutil.rmtree(d)
            shutil.rmtree(os.path.join(root, f"replica{rnd}"))
            print(f"round {rnd + 1}: SET -P16 alone {alone[-1]:,.0f}/s, with a replica {replicated[-1]:,.0f}/s, digests equal: {same}", flush=True)
            if not same:
                raise SystemExit("the replica's digest differs from the primary's")
        ma, mr = statistics.median(alone), statistics.median(replicated)
        print(f"\nSET -P 16 (-c 50 -d 100 -r 1000000, {a.requests:,} requests), medians of {a.rounds} rounds:")
        print(f"  no replica  {ma:12,.0f} ops/s")
        print(f"  one replica {mr:12,.0f} ops/s   ratio {mr / ma:.2f} (target >= 0.90)")
        ca, cr = statistics.median(cpu_alone), statistics.median(cpu_replicated)
        print(f"  the primary's CPU per SET: {ca:.2f} us alone, {cr:.2f} us with a replica ({(cr / ca - 1) * 100:+.0f}%: its feeder)")
        print(f"replica lag under that load ({len(lags_ms)} probes): p50 {pct(lags_ms, 0.5):.1f} ms, p99 {pct(lags_ms, 0.99):.1f} ms; "
              f"in sequence numbers p50 {pct(lags_seq, 0.5)}, p99 {pct(lags_seq, 0.99)}")

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
