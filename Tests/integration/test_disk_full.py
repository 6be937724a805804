"""Disk full: cairnd's data directory on a small tmpfs. Writes fail with a clear error, reads keep
working, nothing acknowledged is lost or damaged, and writes resume once space returns."""
import hashlib
import os
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import Cairnd


def value_for(key):
    """A 64 KiB value that can be checked later without keeping it (incompressible)."""
    seed = hashlib.sha256(key.encode()).digest()
    return b"".join(hashlib.sha256(seed + i.to_bytes(4, "big")).digest() for i in range(2048))


@pytest.fixture
def tmpfs_dir():
    directory = tempfile.mkdtemp(prefix="cairnd-diskfull-")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", directory],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        os.rmdir(directory)
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mount.stderr.strip()}")
    yield directory
    subprocess.run(["umount", "-l", directory])
    os.rmdir(directory)


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
        # Leave about 6 MiB: a filler file takes the rest of the tmpfs.
        filler = os.path.join(tmpfs_dir, "filler")
        subprocess.run(["fallocate", "-l", str(free_bytes(tmpfs_dir) - 6 * 1024 * 1024), filler], check=True)

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

        # Space returns: writes resume (RocksDB retries the failed flush by itself).
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
        assert "No space left on device" in log, "the detail went to the log"
    finally:
        srv.cleanup()
