"""Restores are atomic: after kill -9 at any point of an online or offline restore, or a restore
that runs out of disk, cairnd serves exactly the old data or exactly the backup, never a mix
and never an empty database."""
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from conftest import BINARY, Cairnd

KEYS = 12_000
VALUE = 2048


def backup_dir(server):
    return os.path.join(server.directory, "data", "backups")


def data_dir(server):
    return os.path.join(server.directory, "data")


def contents(c):
    """Every key and value, read in batches."""
    keys = sorted(c.keys("*"))
    out = {}
    for i in range(0, len(keys), 1000):
        chunk = keys[i:i + 1000]
        out.update(zip(chunk, c.mget(chunk)))
    return out


def load(c, prefix, n, seed):
    rnd = os.urandom  # incompressible, so the files are as large as the data
    values = {}
    for start in range(0, n, 1000):
        batch = {f"{prefix}:{i:06d}".encode(): seed + rnd(VALUE) for i in range(start, min(n, start + 1000))}
        c.mset(batch)
        values.update(batch)
    return values


def make_old_and_backup(c):
    """Backup 1 holds A; the live data is then A with half its keys overwritten, plus B."""
    a = load(c, "a", KEYS, b"A")
    backup_id = c.execute_command("BACKUP.CREATE")
    changed = load(c, "a", KEYS // 2, b"C")
    b = load(c, "b", KEYS // 2, b"B")
    old = dict(a)
    old.update(changed)
    old.update(b)
    return backup_id, a, old


def outcome(state, old, backup):
    if state == old:
        return "old"
    if state == backup:
        return "backup"
    keys = len(state)
    mixed = sum(1 for k, v in state.items() if old.get(k) != v and backup.get(k) != v)
    return f"neither: {keys} keys ({mixed} match neither side; old has {len(old)}, backup {len(backup)})"


def back_to_old(c, old):
    """Writes the old state again after a restore that completed (the backup is A, a subset)."""
    for k in list(c.keys("*")):
        if k not in old:
            c.delete(k)
    items = list(old.items())
    for i in range(0, len(items), 1000):
        c.mset(dict(items[i:i + 1000]))


def test_kill_9_during_online_restore_leaves_old_data_or_the_backup(fresh_server):
    s = fresh_server()
    c = s.client()
    backup_id, backup, old = make_old_and_backup(c)

    # How long one restore takes here, so the kills spread over all of it.
    started = time.time()
    assert c.execute_command("BACKUP.RESTORE", backup_id) == b"OK"
    full = time.time() - started
    assert contents(c) == backup
    back_to_old(c, old)

    seen = []
    for fraction in (0.0, 0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0, 2.0, 4.0):
        restorer = s.client()
        t = threading.Thread(target=lambda: _ignore(lambda: restorer.execute_command("BACKUP.RESTORE", backup_id)))
        t.start()
        time.sleep(full * fraction)
        s.stop(signal.SIGKILL)
        t.join(30)
        s.start()
        c = s.client()
        state = contents(c)
        result = outcome(state, old, backup)
        seen.append((fraction, result))
        assert result in ("old", "backup"), f"kill at {fraction:.2f} of a restore: {result}"
        if result == "backup":
            back_to_old(c, old)
        assert not os.path.exists(os.path.join(data_dir(s), "restore-staging"))
        assert not os.path.exists(os.path.join(data_dir(s), "RESTORE-IN-PROGRESS"))
    print(f"online restore of {full * 1000:.0f} ms, killed at fractions: {seen}")
    assert {r for _, r in seen} == {"old", "backup"}, seen


def _ignore(f):
    try:
        f()
    except (redis.ConnectionError, redis.ResponseError, redis.TimeoutError):
        pass


def test_kill_9_during_offline_restore_leaves_old_data_or_the_backup(fresh_server):
    s = fresh_server()
    c = s.client()
    backup_id, backup, old = make_old_and_backup(c)
    s.stop()
    command = [BINARY, "restore", "--dir", data_dir(s), "--backup-dir", backup_dir(s), "--id", str(backup_id)]

    started = time.time()
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    full = time.time() - started
    s.start()
    assert contents(s.client()) == backup
    back_to_old(s.client(), old)
    s.stop()

    seen = []
    # Most of an offline run is the process starting and verifying: the copy is near the end.
    for fraction in (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.5):
        p = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(full * fraction)
        p.kill()
        p.wait()
        s.start()
        c = s.client()
        result = outcome(contents(c), old, backup)
        seen.append((fraction, result))
        assert result in ("old", "backup"), f"kill at {fraction:.2f} of an offline restore: {result}"
        if result == "backup":
            back_to_old(c, old)
        s.stop()
    print(f"offline restore of {full * 1000:.0f} ms (process start included), killed at fractions: {seen}")
    assert {r for _, r in seen} == {"old", "backup"}, seen


def crashed_with_a_backup(fresh_server, tmp_path):
    """A server killed after `make_old_and_backup`, and a restored copy of its backup made
    offline elsewhere (what staging would hold): (server, backup id, backup, old, data dir,
    copy dir, staging dir)."""
    s = fresh_server()
    backup_id, backup, old = make_old_and_backup(s.client())
    s.stop(signal.SIGKILL)
    data = data_dir(s)
    copy = staged_copy(s, backup_id, str(tmp_path))
    return s, backup_id, backup, old, data, copy, os.path.join(data, "restore-staging")


def staged_copy(s, backup_id, tmp):
    """A restored copy of the backup, made offline elsewhere: what staging would hold."""
    target = os.path.join(tmp, "copy")
    subprocess.run([BINARY, "restore", "--dir", target, "--backup-dir", backup_dir(s), "--id", str(backup_id)],
                   check=True, capture_output=True, timeout=120)
    return target


def write_journal(data, phase, backup_id, backup_directory, files=()):
    with open(os.path.join(data, "RESTORE-IN-PROGRESS"), "w") as f:
        f.write("\n".join([phase, str(backup_id), backup_directory, *files]) + "\n")


def test_startup_drops_a_restore_cut_short_while_copying(fresh_server, tmp_path):
    s, backup_id, backup, old, data, copy, staging = crashed_with_a_backup(fresh_server, tmp_path)
    os.makedirs(staging)
    for name in sorted(os.listdir(copy))[:3]:  # part of the files, as a crash mid-copy leaves
        shutil.copy(os.path.join(copy, name), staging)
    write_journal(data, "copying", backup_id, backup_dir(s))

    s.start()
    assert contents(s.client()) == old
    assert not os.path.exists(staging)
    assert not os.path.exists(os.path.join(data, "RESTORE-IN-PROGRESS"))
    assert "interrupted while copying" in open(os.path.join(s.directory, "cairnd.log")).read()


@pytest.mark.parametrize("moved", [0, 2, "all but CURRENT"])
def test_startup_finishes_a_restore_cut_short_while_switching_files(fresh_server, tmp_path, moved):
    s, backup_id, backup, old, data, copy, staging = crashed_with_a_backup(fresh_server, tmp_path)
    shutil.copytree(copy, staging)
    files = sorted(os.listdir(staging))
    write_journal(data, "swapping", backup_id, backup_dir(s), files)
    # What a crash part-way through the switch leaves: some old files gone, some staged ones
    # already moved into place.
    if moved:
        old_files = [n for n in os.listdir(data) if n.endswith(".sst") and n not in files]
        for n in old_files[: len(old_files) // 2]:
            os.remove(os.path.join(data, n))
        to_move = [n for n in files if n != "CURRENT"] if moved == "all but CURRENT" else [n for n in files if n != "CURRENT"][:moved]
        for n in to_move:
            os.replace(os.path.join(staging, n), os.path.join(data, n))

    s.start()
    assert contents(s.client()) == backup
    assert not os.path.exists(staging)
    assert not os.path.exists(os.path.join(data, "RESTORE-IN-PROGRESS"))


def test_a_directory_that_lost_its_current_file_is_not_opened_empty(fresh_server):
    s = fresh_server()
    c = s.client()
    load(c, "k", 2000, b"x")
    c.execute_command("COMPACT")
    s.stop()
    os.remove(os.path.join(data_dir(s), "CURRENT"))
    r = subprocess.run([BINARY, "--port", "0", "--dir", data_dir(s)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "no CURRENT file" in r.stdout + r.stderr and "cairnd restore" in r.stdout + r.stderr
    assert any(n.endswith(".sst") for n in os.listdir(data_dir(s))), "nothing was deleted"


def test_a_session_whose_family_is_not_in_the_backup_does_not_write_elsewhere(fresh_server):
    s = fresh_server()
    c = s.client()
    c.set("k", "in default")
    backup_id = c.execute_command("BACKUP.CREATE")
    c.execute_command("CF.CREATE", "later")
    user = s.client(single_connection_client=True)
    assert user.execute_command("CF.USE", "later") == b"OK"
    user.set("x", "1")
    assert c.execute_command("BACKUP.RESTORE", backup_id) == b"OK"

    with pytest.raises(redis.ResponseError, match="CF.USE"):
        user.set("y", "2")
    with pytest.raises(redis.ResponseError, match="CF.USE"):
        user.get("x")
    assert c.exists("y") == 0 and c.get("k") == b"in default"
    assert user.execute_command("CF.USE", "default") == b"OK"
    assert user.get("k") == b"in default"


# Full disk: the data directory on a small tmpfs, the backups on the ordinary disk.

@pytest.fixture
def small_disk(tmpfs_dir):
    """The data disk: a 96 MiB tmpfs (conftest's `tmpfs_dir`)."""
    return tmpfs_dir


def server_with_a_backup(small_disk, tmp_path, keys):
    """cairnd with its data on the small disk and its backups elsewhere, holding one backup of
    `keys` keys (~2 KB each) and otherwise empty (flushed and compacted)."""
    srv = Cairnd(["--dir", os.path.join(small_disk, "data"), "--set", f"backup-dir={tmp_path / 'backups'}",
                  "--set", "write-buffer-size=4mb"])
    c = srv.client()
    backup = load(c, "a", keys, b"A")
    backup_id = c.execute_command("BACKUP.CREATE")
    c.flushall()
    c.execute_command("COMPACT")
    return srv, c, backup, backup_id


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def until_writable(c, timeout=30):
    """Waits until cairnd has seen the space come back (its disk check runs every 100 ms)."""
    deadline = time.time() + timeout
    while c.info("persistence").get("disk_full", 0) and time.time() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("tmpfs_dir", ["96m"], indirect=True)
def test_restore_without_room_is_refused_and_changes_nothing(small_disk, tmp_path):
    srv, c, backup, backup_id = server_with_a_backup(small_disk, tmp_path, 8000)  # ~16 MB
    try:
        old = load(c, "n", 200, b"N")
        filler = os.path.join(small_disk, "filler")
        subprocess.run(["fallocate", "-l", str(free_bytes(small_disk) - 10 * 1024 * 1024), filler], check=True)

        with pytest.raises(redis.ResponseError) as refused:
            c.execute_command("BACKUP.RESTORE", backup_id)
        assert "not enough free space on the data disk to restore backup" in str(refused.value)
        assert "the data is unchanged" in str(refused.value)
        assert contents(c) == old
        assert not os.path.exists(os.path.join(small_disk, "data", "restore-staging"))

        os.remove(filler)
        until_writable(c)
        assert c.execute_command("BACKUP.RESTORE", backup_id) == b"OK"
        assert contents(c) == backup
        assert srv.stop() == 0
    finally:
        srv.cleanup()


@pytest.mark.parametrize("tmpfs_dir", ["96m"], indirect=True)
def test_a_disk_filling_up_during_a_restore_leaves_old_data_or_the_backup(small_disk, tmp_path):
    """Another writer takes the space while the backup is copied: the copy fails part-way or
    wins the race; either way nothing is lost and the server keeps serving."""
    srv, c, backup, backup_id = server_with_a_backup(small_disk, tmp_path, 8000)  # ~16 MB
    try:
        old = load(c, "n", 200, b"N")
        outcomes = []
        for attempt in range(4):
            filler = os.path.join(small_disk, "filler")
            # Leave room for the backup by the up-front check, then race the copy for it.
            room = free_bytes(small_disk) - 40 * 1024 * 1024
            subprocess.run(["fallocate", "-l", str(room), filler], check=True)
            done = threading.Event()

            def grab():
                # Starts when the copy does (after the up-front space check and verification).
                staging = os.path.join(small_disk, "data", "restore-staging")
                while not os.path.exists(staging) and not done.is_set():
                    time.sleep(0.0005)
                chunk = b"\0" * (1 << 20)
                try:
                    with open(os.path.join(small_disk, "grab"), "wb", buffering=0) as f:
                        while not done.is_set():
                            f.write(chunk)
                except OSError:
                    pass  # the disk is full: the point

            grabber = threading.Thread(target=grab)
            restorer = srv.client()
            grabber.start()
            try:
                restorer.execute_command("BACKUP.RESTORE", backup_id)
                result = "restored"
            except redis.ResponseError as e:
                result = str(e)
            done.set()
            grabber.join()
            assert srv.process.poll() is None, "cairnd is alive"
            state = contents(c)
            if result == "restored":
                assert state == backup
                outcomes.append("backup")
            else:
                assert "the data is unchanged" in result, result
                assert state == old
                outcomes.append(result)
            os.remove(os.path.join(small_disk, "grab"))
            os.remove(filler)
            until_writable(c)
            if state == backup:
                c.flushall()
                c.execute_command("COMPACT")
                c.mset(old)
        print(f"restores racing a writer for the disk: {outcomes}")
        assert not os.path.exists(os.path.join(small_disk, "data", "restore-staging"))
        assert srv.stop() == 0
        srv.start()
        assert contents(srv.client()) in (old, backup)
    finally:
        srv.cleanup()


@pytest.mark.parametrize("tmpfs_dir", ["96m"], indirect=True)
def test_a_restore_during_a_write_load_on_a_filling_disk(small_disk, tmp_path):
    """Four clients write until the data disk is full while a restore is asked for: the restore
    is refused for lack of room and changes nothing, reads keep working, writes resume once
    space returns, nothing acknowledged is lost across a restart; with room, the restore then
    gives exactly the backup."""
    from test_disk_full import DISK_FULL, value_for
    srv, c, backup, backup_id = server_with_a_backup(small_disk, tmp_path, 6000)  # ~12 MB
    try:
        filler = os.path.join(small_disk, "filler")
        subprocess.run(["fallocate", "-l", str(free_bytes(small_disk) - 40 * 1024 * 1024), filler], check=True)

        lock = threading.Lock()
        acknowledged, problems = [], []
        refused = [False] * 4
        stop = threading.Event()

        def writer(n):
            w = srv.client()
            i = 0
            while not stop.is_set():
                key = f"w{n}:{i}"
                i += 1
                try:
                    assert w.set(key, value_for(key)) is True
                    with lock:
                        acknowledged.append(key)
                except redis.ResponseError as e:
                    if str(e) != DISK_FULL:
                        problems.append(f"writer {n}: {e}")
                        return
                    refused[n] = True
                    time.sleep(0.02)
                except Exception as e:  # noqa: BLE001 - the server went away
                    problems.append(f"writer {n}: {e!r}")
                    return

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        deadline = time.time() + 90
        while not all(refused) and time.time() < deadline and not problems:
            time.sleep(0.1)
        assert all(refused) and not problems, problems

        # Refused whole: by the disk-full mode, or by the restore's own check for room.
        with pytest.raises(redis.ResponseError, match="no space left on the data disk|not enough free space"):
            c.execute_command("BACKUP.RESTORE", backup_id)
        assert srv.process.poll() is None
        with lock:
            sample = acknowledged[::10]
        for key in sample:
            assert c.get(key) == value_for(key), key

        os.remove(filler)
        with lock:
            before = len(acknowledged)
        deadline = time.time() + 60
        while time.time() < deadline:
            with lock:
                if len(acknowledged) > before + 8:
                    break
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(30)
        assert not problems, problems
        assert len(acknowledged) > before + 8, "writes resumed after space returned"

        assert srv.stop() == 0
        srv.start()
        c = srv.client()
        for key in acknowledged:
            assert c.get(key) == value_for(key), f"acknowledged {key} lost"
        # With room, the restore replaces everything with exactly the backup.
        c.flushall()
        c.execute_command("COMPACT")
        until_writable(c)
        assert c.execute_command("BACKUP.RESTORE", backup_id) == b"OK"
        assert contents(c) == backup
    finally:
        srv.cleanup()
