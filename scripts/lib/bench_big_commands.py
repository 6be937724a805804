"""Victim latency while another client sends one huge command (the reliability issue's
"nobody stalled" figures): a victim client does GET and SET round trips in a thread and records
its worst round trip while another connection sends a 500,000-key MSET, MGET, EXISTS, DEL,
then DBSIZE, KEYS and COMPACT over a million keys. Prints one line per command.

    python3 scripts/lib/bench_big_commands.py [--bin .build/release] [--keys 500000]
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "integration"))




def read_reply(f):
    line = f.readline()
    kind = line[:1]
    if kind == b"*":
        return [read_reply(f) for _ in range(int(line[1:]))]
    if kind == b"$":
        n = int(line[1:])
        return None if n < 0 else f.read(n + 2)[:-2]
    return line.strip()


class Victim(threading.Thread):
    def __init__(self, port, op):
        super().__init__(daemon=True)
        self.client = redis.Redis(port=port, socket_timeout=60)
        self.op = op
        self.worst = 0.0
        self.stop = threading.Event()

    def run(self):
        i = 0
        while not self.stop.is_set():
            t = time.monotonic()
            if self.op == "get":
                self.client.get(f"victim:{i % 100}")
            else:
                self.client.set(f"victim:{i % 100}", i)
            self.worst = max(self.worst, time.monotonic() - t)
            i += 1


def measure(port, name, command, expect_array=False):
    victims = [Victim(port, "get"), Victim(port, "set")]
    for v in victims:
        v.start()
    time.sleep(0.2)
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    t = time.monotonic()
    s.sendall(command)
    reply = read_reply(f)
    elapsed = time.monotonic() - t
    time.sleep(0.2)
    for v in victims:
        v.stop.set()
    for v in victims:
        v.join()
    s.close()
    shown = f"{len(reply)} items" if isinstance(reply, list) else reply[:40]
    print(f"{name:<22} {elapsed * 1000:9.0f} ms   victim GET worst {victims[0].worst * 1000:7.1f} ms   "
          f"victim SET worst {victims[1].worst * 1000:7.1f} ms   ({shown})", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=".build/release")
    p.add_argument("--keys", type=int, default=500_000)
    a = p.parse_args()
    os.environ["CAIRND"] = os.path.abspath(os.path.join(a.bin, "cairnd"))
    import conftest
    resp_command = conftest.resp_command
    srv = conftest.Cairnd([])
    try:
        port = srv.port
        n = a.keys
        keys = [f"big:{i:07d}".encode() for i in range(n)]
        pairs = []
        for k in keys:
            pairs += [k, b"v" * 20]
        print(f"cairnd {os.environ['CAIRND']}, {n:,} keys per command")
        measure(port, f"MSET {n:,} pairs", resp_command("MSET", *pairs))
        measure(port, f"MGET {n:,} keys", resp_command("MGET", *keys))
        measure(port, f"EXISTS {n:,} keys", resp_command("EXISTS", *keys))
        measure(port, f"DEL {n:,} keys", resp_command("DEL", *keys))
        c = redis.Redis(port=port)
        for start in range(0, 2 * n, 10_000):
            c.mset({f"k:{i:08d}": "x" * 20 for i in range(start, start + 10_000)})
        measure(port, f"DBSIZE ({2 * n:,} keys)", resp_command("DBSIZE"))
        measure(port, "KEYS k:0000000*", resp_command("KEYS", "k:0000000*"))
        measure(port, "COMPACT", resp_command("COMPACT"))
    finally:
        srv.cleanup()


if __name__ == "__main__":
    main()
