"""WATCH under contention: N clients each loop WATCH k / GET k / MULTI / SET k v+1 / EXEC.

Shared by scripts/bench-watch and Tests/integration/test_watch_and_quotas.py. Starts
redis-server beside the server under test when asked, so both are measured in the same run.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import redis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis_server():
    """Starts redis-server on a free port (no RDB, no AOF); returns (process, port, workdir)."""
    workdir = tempfile.mkdtemp(prefix="redis-watch-")
    port = free_port()
    log = open(os.path.join(workdir, "redis.log"), "wb")
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline:
        if process.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process, port, workdir
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("redis-server did not start:\n" + open(os.path.join(workdir, "redis.log")).read())


def stop_redis_server(process, workdir):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    shutil.rmtree(workdir, ignore_errors=True)


def contend(port, clients=10, seconds=5.0, key="watch:counter"):
    """Runs the loop on `clients` threads for `seconds`; returns (commits, aborts, final value)."""
    setup = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
    setup.set(key, 0)
    commits = [0] * clients
    aborts = [0] * clients
    errors = []
    start = threading.Barrier(clients)

    def run(i):
        c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
        try:
            c.ping()
            start.wait()
            deadline = time.monotonic() + seconds
            with c.pipeline(transaction=True) as p:
                while time.monotonic() < deadline:
                    try:
                        p.watch(key)
                        value = int(p.get(key))
                        p.multi()
                        p.set(key, value + 1)
                        p.execute()
                        commits[i] += 1
                    except redis.WatchError:
                        aborts[i] += 1
                    finally:
                        p.reset()
        except Exception as e:  # reported by the caller
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    final = int(setup.get(key))
    setup.close()
    return sum(commits), sum(aborts), final
