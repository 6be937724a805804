"""scripts/bench-flush: how long the first reads after FLUSHALL of many keys take."""
import argparse
import os
import shutil
import subprocess
import sys
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_watch import start_cairnd  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="directory holding cairnd")
    parser.add_argument("--keys", type=int, default=1_000_000)
    args = parser.parse_args()
    process, port, directory = start_cairnd(os.path.join(args.bin, "cairnd"))
    try:
        subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-n", str(args.keys),
                        "-r", str(args.keys * 100), "-P", "32", "-q"], check=True, capture_output=True)
        c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=300)
        keys = c.dbsize()
        time.sleep(3)  # let flushes settle, as on a server that has been running
        started = time.monotonic()
        c.flushall()
        print(f"FLUSHALL of {keys} keys: {(time.monotonic() - started) * 1000:.0f} ms")
        for argv in [("SCAN", 0), ("RANGE", "-", "+", "LIMIT", 1), ("RANDOMKEY",)]:
            started = time.monotonic()
            c.execute_command(*argv)
            print(f"{' '.join(map(str, argv))}: {(time.monotonic() - started) * 1000:.1f} ms")
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
