"""Disk full: cairnd's data directory on a small tmpfs. Writes fail with a clear error, reads keep
working, nothing acknowledged is lost or damaged, and writes resume once space returns."""
import hashlib
import os
import random
import signal
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from conftest import Cairnd


def value_for(key):
    """A 64 KiB value that can be checked later without keeping it (incompressible)."""
    seed = hashlib.sha256(key.encode()).digest()
    return b"".join(hashlib.sha256(seed + i.to_bytes(4, "big")).digest() for i in range(2048))


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_disk_full_then_space_returns(tmpfs_dir):
    # The log and port file go elsewhere, so they cannot be what fails.
    srv = Cairnd(["--dir", os.path.join(tmpfs_dir, "data"), "--set", "write-buffer-size=4mb"])
    try:
        c = srv.client()
        acknowledged = []
        for i in range(50):
            key = f"before:{i}"
            assert c.set(key, value_for(key)) is True
            acknowledged.append(key)
        # Leave about 22 MiB, 6 MiB above min-free-disk's default here (2 x 4 MiB + 8 MiB): a
        # filler file takes the rest of the tmpfs.
        filler = os.path.join(tmpfs_dir, "filler")
        subprocess.run(["fallocate", "-l", str(free_bytes(tmpfs_dir) - 22 * 1024 * 1024), filler], check=True)

        error = None
        for i in range(2000):
            key = f"fill:{i}"
            try:
                c.set(key, value_for(key))
                acknowledged.append(key)
            except redis.ResponseError as e:
                error = str(e)
                break
        assert error == "write failed: no space left on the data disk; reads still work", error
        assert len(acknowledged) > 50, "some writes succeeded before the disk filled"

        # While full: writes keep failing with the same clear error, reads keep working.
        with pytest.raises(redis.ResponseError, match="no space left on the data disk"):
            c.set("while-full", "x")
        for key in acknowledged[::7]:
            assert c.get(key) == value_for(key), key
        assert c.dbsize() >= len(acknowledged)
        other = srv.client()
        assert other.ping() is True and other.get("before:0") == value_for("before:0")
        # Every path refuses alike (the one admission step): grouped SETs, batched collection
        # writes, and a write queued in MULTI, refused when queued so that EXEC aborts.
        p = c.pipeline(transaction=False)
        p.set("g1", "x").set("g2", "x").hset("h", "f", "v").hset("h", "g", "v").get("before:0")
        out = p.execute(raise_on_error=False)
        assert [str(e) for e in out[:4]] == [DISK_FULL] * 4, out
        assert out[4] == value_for("before:0")
        assert c.execute_command("MULTI") == b"OK"
        assert c.execute_command("GET", "before:0") == b"QUEUED"
        with pytest.raises(redis.ResponseError, match="no space left on the data disk"):
            c.execute_command("SET", "in-multi", "x")
        with pytest.raises(redis.exceptions.ExecAbortError):
            c.execute_command("EXEC")

        # Space returns: writes resume on their own.
        os.remove(filler)
        deadline = time.time() + 60
        while True:
            try:
                assert c.set("after", "space returned") is True
                break
            except redis.ResponseError as e:
                assert "no space left" in str(e), str(e)
                assert time.time() < deadline, "writes did not resume within 60 s of space returning"
                time.sleep(0.5)
        for i in range(20):
            key = f"after:{i}"
            assert c.set(key, value_for(key)) is True
            acknowledged.append(key)

        # Restart: every acknowledged write is there, intact.
        assert srv.stop() == 0
        srv.start()
        c = srv.client()
        for key in acknowledged:
            assert c.get(key) == value_for(key), key
        assert c.get("after") == b"space returned"
        log = open(os.path.join(srv.directory, "cairnd.log")).read()
        assert "disk-full mode" in log, "the log says why writes were refused"
    finally:
        srv.cleanup()


DISK_FULL = "write failed: no space left on the data disk; reads still work"


@pytest.mark.parametrize("appendfsync", ["everysec", "no", "always"])
def test_disk_full_with_four_writers(tmpfs_dir, appendfsync):
    """Four clients write 64 KiB values until the disk is full, while a fifth reads back what
    was acknowledged. The server must not abort (RocksDB's assertion builds abort on a WAL sync
    after a failed append), writes must fail with the clear error, then resume on their own once
    a filler file is removed, and a restart must find every acknowledged write."""
    args = ["--dir", os.path.join(tmpfs_dir, "data"), "--set", "write-buffer-size=4mb"]
    if appendfsync != "everysec":
        args += ["--appendfsync", appendfsync]
    srv = Cairnd(args)
    try:
        filler = os.path.join(tmpfs_dir, "filler")
        subprocess.run(["fallocate", "-l", str(free_bytes(tmpfs_dir) - 40 * 1024 * 1024), filler], check=True)

        lock = threading.Lock()
        acknowledged = []
        problems = []
        refused_at = [None] * 4  # when each writer last got the disk-full error
        written_at = [None] * 4  # when each writer last had a write acknowledged
        stop = threading.Event()

        def writer(n):
            c = srv.client()
            i = 0
            while not stop.is_set():
                key = f"w{n}:{i}"
                i += 1
                try:
                    assert c.set(key, value_for(key)) is True
                    with lock:
                        acknowledged.append(key)
                    written_at[n] = time.time()
                except redis.ResponseError as e:
                    if str(e) != DISK_FULL:
                        problems.append(f"writer {n}: {e}")
                        return
                    refused_at[n] = time.time()
                    time.sleep(0.02)
                except Exception as e:  # the server went away
                    problems.append(f"writer {n}: {e!r}")
                    return

        def reader():
            c = srv.client()
            reads = 0
            while not stop.is_set():
                with lock:
                    key = random.choice(acknowledged) if acknowledged else None
                if key is None:
                    time.sleep(0.01)
                    continue
                try:
                    assert c.get(key) == value_for(key), f"acknowledged {key} reads back wrong"
                    reads += 1
                except Exception as e:
                    problems.append(f"reader: {e!r}")
                    return
            reader.reads = reads

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)] + [threading.Thread(target=reader)]
        for t in threads:
            t.start()

        def wait_for(condition, what, seconds=90):
            deadline = time.time() + seconds
            while not condition():
                assert not problems, problems
                assert srv.process.poll() is None, f"cairnd exited with {srv.process.returncode} ({what})"
                assert time.time() < deadline, f"timed out: {what}"
                time.sleep(0.1)

        wait_for(lambda: all(refused_at), "every writer refused once the disk fills")
        assert len(acknowledged) > 20, "writes succeeded before the disk filled"
        # Stay full a while: WAL syncs (every second under everysec, at once under always) and
        # reads go on.
        full_since = time.time()
        wait_for(lambda: time.time() - full_since > 3, "staying full")
        with lock:
            before_free = len(acknowledged)

        os.remove(filler)
        freed = time.time()
        wait_for(lambda: all(w and w > freed for w in written_at), "every writer writing again after space returned", 60)
        wait_for(lambda: time.time() - freed > 1, "writing a little more")
        stop.set()
        for t in threads:
            t.join(30)
        assert not problems, problems
        assert srv.process.poll() is None, "cairnd is still running"
        assert len(acknowledged) > before_free
        assert getattr(reader, "reads", 0) > 0

        assert srv.stop(signal.SIGTERM, timeout=30) == 0, "a clean exit on SIGTERM"
        srv.start()
        c = srv.client()
        for key in acknowledged:
            assert c.get(key) == value_for(key), f"acknowledged {key} lost or damaged after restart"
    finally:
        srv.cleanup()


def test_stop_and_start_on_a_full_disk(tmpfs_dir):
    """SIGTERM in disk-full mode exits 0; a start (also after kill -9) on a disk with no room
    left opens read-only and serves reads instead of refusing to start, and switches to writing
    by itself once space returns."""
    srv = Cairnd(["--dir", os.path.join(tmpfs_dir, "data"), "--set", "write-buffer-size=4mb"])
    try:
        filler = os.path.join(tmpfs_dir, "filler")
        subprocess.run(["fallocate", "-l", str(free_bytes(tmpfs_dir) - 24 * 1024 * 1024), filler], check=True)
        c = srv.client()
        acknowledged = []
        for i in range(2000):
            key = f"k{i}"
            try:
                assert c.set(key, value_for(key)) is True
                acknowledged.append(key)
            except redis.ResponseError as e:
                assert str(e) == DISK_FULL, str(e)
                break
        else:
            pytest.fail("the disk never filled")
        assert acknowledged

        assert srv.stop(signal.SIGTERM, timeout=30) == 0, "SIGTERM in disk-full mode exits cleanly"
        srv.start()
        c = srv.client()
        assert c.get(acknowledged[-1]) == value_for(acknowledged[-1])

        # A crash, then nothing at all left on the disk: the start still serves the data.
        srv.stop(signal.SIGKILL)
        subprocess.run(["fallocate", "-l", str(free_bytes(tmpfs_dir)), os.path.join(tmpfs_dir, "filler2")], check=True)
        srv.start()
        c = srv.client()
        for key in acknowledged:
            assert c.get(key) == value_for(key), key
        with pytest.raises(redis.ResponseError, match="no space left on the data disk"):
            c.set("while-full", "x")
        assert c.info("persistence")["disk_full"] == 1

        os.remove(filler)
        os.remove(os.path.join(tmpfs_dir, "filler2"))
        deadline = time.time() + 60
        while True:
            try:
                assert c.set("after", "space returned") is True
                break
            except redis.ResponseError as e:
                assert "no space left" in str(e), str(e)
                assert time.time() < deadline, "writes did not resume within 60 s of space returning"
                time.sleep(0.2)
        assert srv.stop(signal.SIGTERM, timeout=30) == 0
        srv.start()
        c = srv.client()
        for key in acknowledged:
            assert c.get(key) == value_for(key), key
        assert c.get("after") == b"space returned"
        log = open(os.path.join(srv.directory, "cairnd.log")).read()
        assert "opening the database read-only" in log
    finally:
        srv.cleanup()


@pytest.mark.parametrize("tmpfs_dir", ["128m"], indirect=True)
def test_disk_filled_by_another_process(tmpfs_dir):
    """Another process takes all the space at once while four clients write: RocksDB itself
    meets ENOSPC (in its WAL or table files). The server must not abort and must refuse writes
    with the clear error. Once the space is given back it writes again: by itself after a
    failed table file (RocksDB recovers, or the engine reopens the database); after a failed
    WAL append, which RocksDB 7.8 cannot safely recover from in-process, once restarted."""
    srv = Cairnd(["--dir", os.path.join(tmpfs_dir, "data"), "--set", "write-buffer-size=4mb"])
    try:
        problems = []
        written_at = [0.0] * 4
        refused = [0] * 4
        stop = threading.Event()

        def writer(n):
            c = srv.client()
            i = 0
            while not stop.is_set():
                key = f"w{n}:{i}"
                i += 1
                try:
                    assert c.set(key, value_for(key)) is True
                    written_at[n] = time.time()
                except redis.ResponseError as e:
                    if str(e) != DISK_FULL:
                        problems.append(f"writer {n}: {e}")
                        return
                    refused[n] += 1
                    time.sleep(0.02)
                except Exception as e:
                    problems.append(f"writer {n}: {e!r}")
                    return

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        filler = os.path.join(tmpfs_dir, "filler")
        # The writers keep taking space while this measures, so retry a little smaller.
        for attempt in range(20):
            size = free_bytes(tmpfs_dir) - (256 + attempt * 512) * 1024
            if subprocess.run(["fallocate", "-l", str(size), filler]).returncode == 0:
                break
            os.remove(filler) if os.path.exists(filler) else None
        else:
            pytest.fail("could not fill the disk")
        time.sleep(3)
        assert srv.process.poll() is None, f"cairnd exited with {srv.process.returncode} once the disk filled"
        assert not problems, problems
        assert sum(refused) > 0
        os.remove(filler)
        freed = time.time()
        deadline = freed + 60
        log_path = os.path.join(srv.directory, "cairnd.log")
        needs_restart = False
        while not all(w > freed for w in written_at):
            assert not problems, problems
            assert srv.process.poll() is None, f"cairnd exited with {srv.process.returncode}"
            if "writes stay refused until cairnd restarts" in open(log_path).read():
                needs_restart = True
                break
            assert time.time() < deadline, "writes did not resume within 60 s of space returning"
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(30)
        assert not problems, problems
        assert srv.stop(signal.SIGTERM, timeout=30) == 0
        if needs_restart:
            srv.start()
            assert srv.client().set("after-restart", "x") is True
            assert srv.stop(signal.SIGTERM, timeout=30) == 0
    finally:
        srv.cleanup()


def test_a_reserve_larger_than_the_disk_is_capped_and_said(tmpfs_dir):
    # The default reserve (twice the 64 MiB write buffer plus 8 MiB) is more than this 64 MiB
    # disk: the server keeps a quarter of it free instead, says so, and takes writes.
    srv = Cairnd(["--dir", os.path.join(tmpfs_dir, "data")])
    try:
        r = srv.client()
        info = r.info("persistence") | r.info("all")
        assert info["disk_reserve_capped"] == 1
        assert info["disk_reserve_bytes"] <= 16 * 1024 * 1024
        assert info["disk_full"] == 0
        assert r.set("k", "v") and r.get("k") == b"v"
        log = open(os.path.join(srv.directory, "cairnd.log")).read()
        assert "more than a quarter of the data disk" in log
    finally:
        srv.cleanup()
