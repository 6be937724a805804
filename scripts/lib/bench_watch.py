"""scripts/bench-watch: WATCH/MULTI/EXEC commits under contention, cairnd against redis-server."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import watch_contention  # noqa: E402


def start_cairnd(binary):
    directory = tempfile.mkdtemp(prefix="cairnd-watch-")
    port_file = os.path.join(directory, "port")
    log = open(os.path.join(directory, "cairnd.log"), "wb")
    process = subprocess.Popen([binary, "--port", "0", "--dir", os.path.join(directory, "data"),
                                "--port-file", port_file, "--log-level", "warning"], stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline and process.poll() is None:
        if os.path.exists(port_file) and open(port_file).read().strip():
            return process, int(open(port_file).read()), directory
        time.sleep(0.05)
    raise SystemExit("cairnd did not start:\n" + open(os.path.join(directory, "cairnd.log")).read())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="directory holding cairnd")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--min-ratio", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per server (medians)")
    args = parser.parse_args()

    redis_process, redis_port, redis_dir = watch_contention.start_redis_server()
    process, port, directory = start_cairnd(os.path.join(args.bin, "cairnd"))
    runs = {"redis": [], "cairn": []}
    try:
        # Alternating rounds, medians: the machine's load drifts between runs.
        for _ in range(args.rounds):
            runs["redis"].append(watch_contention.contend(redis_port, args.clients, args.seconds))
            runs["cairn"].append(watch_contention.contend(port, args.clients, args.seconds))
    finally:
        watch_contention.stop_redis_server(redis_process, redis_dir)
        process.terminate()
        process.wait(30)
        shutil.rmtree(directory, ignore_errors=True)

    def median(name):
        ordered = sorted(runs[name])
        return ordered[len(ordered) // 2]

    r_commits, r_aborts, _ = median("redis")
    c_commits, c_aborts, _ = median("cairn")
    exact = all(final == commits for name in runs for commits, _, final in runs[name])
    ratio = c_commits / max(1, r_commits)
    print(f"{args.clients} clients x {args.seconds:g} s of WATCH k / GET k / MULTI / SET k v+1 / EXEC, "
          f"median of {args.rounds} alternating rounds")
    for name, label in (("redis", "redis-server"), ("cairn", "cairnd")):
        print(f"{label + ':':14}" + ", ".join(f"{c} commits / {a} aborts" for c, a, _ in runs[name]))
    print(f"medians: redis-server {r_commits} commits ({r_aborts} aborts), cairnd {c_commits} commits ({c_aborts} aborts)")
    print(f"ratio: {ratio:.2f}")
    ok = True
    if not exact:
        print("FAIL: each run's counter must equal its number of commits")
        ok = False
    if ratio < args.min_ratio:
        print(f"FAIL: ratio below {args.min_ratio}")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
