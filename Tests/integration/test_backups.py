"""Backups, online restore, checkpoints and the offline tools, against the real cairnd."""
import os
import signal
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from conftest import BINARY, Cairnd


def backup_dir(server):
    return os.path.join(server.directory, "data", "backups")


def keys_and_values(c):
    return {k: c.get(k) for k in c.keys("*")}


def write(c, prefix, n, size=10):
    values = {f"{prefix}:{i:05d}".encode(): os.urandom(size).hex().encode() for i in range(n)}
    c.mset(values)
    return values


def backups(c):
    """BACKUP.LIST as dicts (a map in RESP3, a flat list in RESP2)."""
    out = []
    for e in c.execute_command("BACKUP.LIST"):
        out.append(e if isinstance(e, dict) else dict(zip(e[::2], e[1::2])))
    return out


def offline(*args, check=True):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=60, check=check)


def test_restore_online_gives_exactly_each_backup(fresh_server):
    s = fresh_server()
    c = s.client()
    a = write(c, "a", 300)
    id1 = c.execute_command("BACKUP.CREATE")
    b = write(c, "b", 300)
    c.set("a:00000", "changed after backup 1")
    id2 = c.execute_command("BACKUP.CREATE")
    assert id2 > id1
    c.flushall()
    assert c.dbsize() == 0

    # A second client stays connected across the restores and keeps working.
    other = s.client()
    assert other.ping()

    assert c.execute_command("BACKUP.RESTORE", id1) == b"OK"
    assert keys_and_values(c) == a
    assert keys_and_values(other) == a

    assert c.execute_command("BACKUP.RESTORE", id2) == b"OK"
    expected = {**a, **b, b"a:00000": b"changed after backup 1"}
    assert keys_and_values(other) == expected

    # LATEST is the newest backup; a write after the restore is served normally.
    c.flushall()
    assert c.execute_command("BACKUP.RESTORE", "LATEST") == b"OK"
    assert c.dbsize() == len(expected)
    c.set("after", "restore")
    assert other.get("after") == b"restore"
    info = c.info("persistence")
    assert info["last_restored_backup_id"] == id2
    assert info["restore_in_progress"] == 0


def test_restore_keeps_families_and_closes_snapshots_iterators_and_watch(fresh_server):
    s = fresh_server()
    c = s.client()
    c.execute_command("CF.CREATE", "counters", "MERGE", "add")
    c.set("plain", "1")
    bid = c.execute_command("BACKUP.CREATE")

    holder = s.client(single_connection_client=True)
    holder.execute_command("CF.USE", "counters")
    holder.execute_command("MERGE", "hits", "5")
    snap = holder.execute_command("SNAPSHOT.CREATE")
    it = holder.execute_command("ITER.OPEN")
    holder.execute_command("SNAPSHOT.USE", snap)

    watcher = s.client(single_connection_client=True)
    watcher.execute_command("WATCH", "plain")

    assert c.execute_command("BACKUP.RESTORE", bid) == b"OK"

    for command in (("ITER.NEXT", it), ("SNAPSHOT.USE", snap), ("SNAPSHOT.RELEASE", snap)):
        with pytest.raises(redis.ResponseError, match="closed by BACKUP.RESTORE"):
            holder.execute_command(*command)
    # The holder is still in its family (the reopened one) and reads the latest data again.
    assert holder.execute_command("MERGE", "hits", "2") == b"OK"
    assert holder.get("hits") == b"2"  # the backup had no "hits"
    assert holder.info("rocksdb")["current_family"] == "counters"
    # The WATCHed transaction aborts: the database changed under it.
    watcher.execute_command("MULTI")
    watcher.execute_command("SET", "plain", "2")
    assert watcher.execute_command("EXEC") is None
    assert c.get("plain") == b"1"


def test_clients_wait_during_restore_and_continue(fresh_server):
    s = fresh_server()
    c = s.client()
    write(c, "base", 2000, size=200)
    bid = c.execute_command("BACKUP.CREATE")
    errors, done = [], []
    stop = threading.Event()

    def load(n):
        w = s.client()
        i = 0
        try:
            while not stop.is_set():
                # A restore may land between the two: the key is then gone, which is fine.
                w.set(f"load{n}:{i}", i)
                w.get(f"load{n}:{i}")
                i += 1
        except Exception as e:  # noqa: BLE001 - any failure is reported below
            errors.append(repr(e))
        done.append(i)

    threads = [threading.Thread(target=load, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    assert c.execute_command("BACKUP.RESTORE", bid) == b"OK"
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(done) == 8 and min(done) > 0
    assert len(c.keys("base:*")) == 2000


def test_list_reports_id_time_size_and_files(fresh_server):
    s = fresh_server()
    c = s.client()
    assert c.execute_command("BACKUP.LIST") == []
    write(c, "k", 100)
    before = int(time.time())
    bid = c.execute_command("BACKUP.CREATE")
    [fields] = backups(c)
    assert fields[b"id"] == bid
    assert before - 1 <= fields[b"time"] <= time.time() + 1
    assert fields[b"size"] > 0 and fields[b"files"] > 0
    assert c.lastsave().timestamp() >= before - 1
    with pytest.raises(redis.ResponseError, match="no such backup"):
        c.execute_command("BACKUP.RESTORE", 99)
    with pytest.raises(redis.ResponseError, match="invalid backup id"):
        c.execute_command("BACKUP.VERIFY", "x")


def test_verify_passes_and_detects_a_corrupted_file(fresh_server):
    s = fresh_server()
    c = s.client()
    write(c, "k", 2000, size=100)
    bid = c.execute_command("BACKUP.CREATE")
    assert c.execute_command("BACKUP.VERIFY", bid) == b"OK"
    tables = []
    for root, _, files in os.walk(backup_dir(s)):
        tables += [os.path.join(root, f) for f in files if f.endswith(".sst")]
    assert tables
    # Flip one byte in the middle: same size, so only the checksum can tell.
    with open(tables[0], "r+b") as f:
        f.seek(os.path.getsize(tables[0]) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(redis.ResponseError, match="failed verification"):
        c.execute_command("BACKUP.VERIFY", bid)
    assert c.execute_command("BACKUP.VERIFY", bid, "QUICK") == b"OK"  # sizes still match
    # A damaged backup is never restored.
    with pytest.raises(redis.ResponseError, match="failed verification"):
        c.execute_command("BACKUP.RESTORE", bid)
    assert c.dbsize() == 2000
    os.truncate(tables[0], 10)
    with pytest.raises(redis.ResponseError, match="failed verification"):
        c.execute_command("BACKUP.VERIFY", bid, "QUICK")


def test_purge_keeps_the_newest(fresh_server):
    s = fresh_server()
    c = s.client()
    ids = []
    for i in range(5):
        c.set(f"k{i}", i)
        ids.append(c.execute_command("BACKUP.CREATE"))
    assert c.execute_command("BACKUP.PURGE", 2) == 3
    listed = [b[b"id"] for b in backups(c)]
    assert listed == ids[-2:]
    assert c.execute_command("BACKUP.PURGE", 2) == 0
    assert c.execute_command("BACKUP.VERIFY", ids[-2]) == b"OK"


def test_retention_keep_and_max_age_from_the_configuration(fresh_server):
    s = fresh_server("--set", "backup-keep=2")
    c = s.client()
    for i in range(4):
        c.set("k", i)
        c.execute_command("BACKUP.CREATE")
    assert len(c.execute_command("BACKUP.LIST")) == 2
    # max-age: everything older than a second goes, except the newest.
    c.config_set("backup-keep", 0)
    c.config_set("backup-max-age", 1)
    time.sleep(2.1)
    last = c.execute_command("BACKUP.CREATE")
    listed = [b[b"id"] for b in backups(c)]
    assert listed == [last]


def test_bgsave_lastsave_and_info(fresh_server):
    s = fresh_server()
    c = s.client()
    c.set("k", "v")
    start = c.lastsave()
    time.sleep(1.1)
    assert c.bgsave() is True
    deadline = time.time() + 20
    while c.lastsave() == start and time.time() < deadline:
        time.sleep(0.05)
    assert c.lastsave() > start
    info = c.info("persistence")
    assert info["rdb_last_bgsave_status"] == "ok"
    assert info["backups"] == 1 and info["last_backup_id"] == 1
    assert info["backup_dir"].endswith("/data/backups")
    # Every backup command carries the admin flag (access control builds on it).
    for name in ("backup.create", "backup.list", "backup.verify", "backup.purge", "backup.restore", "bgsave", "checkpoint"):
        assert "admin" in str(c.execute_command("COMMAND", "INFO", name)), name


def test_schedule_takes_backups(fresh_server):
    s = fresh_server("--set", "backup-interval=1", "--set", "backup-keep=3")
    c = s.client()
    c.set("k", "v")
    deadline = time.time() + 15
    while len(c.execute_command("BACKUP.LIST")) < 2 and time.time() < deadline:
        time.sleep(0.2)
    assert len(c.execute_command("BACKUP.LIST")) >= 2


def test_offline_restore_into_a_new_directory_serves_the_data(fresh_server, tmp_path):
    s = fresh_server()
    c = s.client()
    a = write(c, "a", 500)
    id1 = c.execute_command("BACKUP.CREATE")
    write(c, "b", 10)
    c.execute_command("BACKUP.CREATE")

    # A data directory in use is refused, with a message saying why.
    live = os.path.join(s.directory, "data")
    r = offline("backup", "--dir", live, check=False)
    assert r.returncode == 1 and "in use" in r.stderr
    r = offline("restore", "--dir", live, check=False)
    assert r.returncode == 1 and "in use" in r.stderr

    target = tmp_path / "restored"
    r = offline("restore", "--dir", str(target / "data"), "--backup-dir", backup_dir(s), "--id", str(id1))
    assert f"restored backup {id1}" in r.stdout
    r = offline("check", "--dir", str(target / "data"))
    assert "default: 500 keys" in r.stdout

    restored = Cairnd(directory=str(target))
    try:
        rc = restored.client()
        assert keys_and_values(rc) == a
    finally:
        restored.stop()

    # An offline backup of the (now stopped) restored directory, then check it restores.
    r = offline("backup", "--dir", str(target / "data"), "--backup-dir", str(tmp_path / "b2"))
    assert r.stdout.startswith("backup 1:")
    offline("restore", "--dir", str(tmp_path / "again"), "--backup-dir", str(tmp_path / "b2"))
    assert "default: 500 keys" in offline("check", "--dir", str(tmp_path / "again")).stdout
    r = offline("check", "--dir", str(tmp_path / "nothing"), check=False)
    assert r.returncode == 1 and "no Cairn database" in r.stderr


def test_a_restore_cut_short_by_a_crash_is_finished_at_startup(fresh_server):
    s = fresh_server()
    c = s.client()
    a = write(c, "a", 300)
    id1 = c.execute_command("BACKUP.CREATE")
    write(c, "b", 300)
    c.execute_command("BACKUP.CREATE")
    s.stop(signal.SIGKILL)

    # What a crash in the middle of restoring backup 1 leaves: the journal written before any
    # file was touched, the old database's files partly deleted (CURRENT and MANIFEST first).
    data = os.path.join(s.directory, "data")
    with open(os.path.join(data, "RESTORE-IN-PROGRESS"), "w") as f:
        f.write(f"{id1}\n{backup_dir(s)}\n")
    for name in os.listdir(data):
        if name == "CURRENT" or name.startswith("MANIFEST") or name.endswith(".sst"):
            os.remove(os.path.join(data, name))

    # The offline tools will not treat the directory as a database.
    r = offline("check", "--dir", data, check=False)
    assert r.returncode == 1 and f"restore of backup {id1}" in r.stderr and "did not finish" in r.stderr
    r = offline("backup", "--dir", data, check=False)
    assert r.returncode == 1 and "did not finish" in r.stderr

    # Startup finishes the restore from the same backup: exactly A, and the journal is gone.
    s.start()
    c = s.client()
    assert keys_and_values(c) == a
    assert not os.path.exists(os.path.join(data, "RESTORE-IN-PROGRESS"))
    assert "did not finish; finishing it" in open(os.path.join(s.directory, "cairnd.log")).read()


def test_startup_refuses_a_journal_whose_backup_is_gone(fresh_server, tmp_path):
    s = fresh_server()
    c = s.client()
    write(c, "a", 10)
    s.stop()
    data = os.path.join(s.directory, "data")
    with open(os.path.join(data, "RESTORE-IN-PROGRESS"), "w") as f:
        f.write(f"7\n{tmp_path / 'no-such-backups'}\n")
    r = subprocess.run([BINARY, "--port", "0", "--dir", data], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "interrupted restore of backup 7" in r.stdout + r.stderr and "cairnd restore" in r.stdout + r.stderr


def test_checkpoint_is_an_openable_copy(fresh_server, tmp_path):
    s = fresh_server()
    c = s.client()
    c.execute_command("CF.CREATE", "other")
    write(c, "k", 100)
    target = tmp_path / "cp" / "data"
    os.makedirs(target.parent)
    assert c.execute_command("CHECKPOINT", str(target)) == b"OK"
    c.set("after", "checkpoint")
    with pytest.raises(redis.ResponseError, match="already exists"):
        c.execute_command("CHECKPOINT", str(target))
    r = offline("check", "--dir", str(target))
    assert "default: 100 keys" in r.stdout and "other: 0 keys" in r.stdout
    copy = Cairnd(directory=str(tmp_path / "cp"))
    try:
        cc = copy.client()
        assert cc.dbsize() == 100 and cc.get("after") is None
        assert b"other" in cc.execute_command("CF.LIST")
    finally:
        copy.stop()


def du(path):
    """Bytes on disk, counting each hard-linked file once."""
    seen, total = set(), 0
    for root, _, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(root, f))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def test_n_backups_of_a_mostly_unchanged_database_take_about_one_copy(fresh_server):
    s = fresh_server()
    c = s.client()
    for chunk in range(8):
        write(c, f"big{chunk}", 1000, size=500)  # about 8 MB of incompressible values
    c.execute_command("BACKUP.CREATE")
    one = du(backup_dir(s))
    n = 10
    for i in range(n - 1):
        write(c, f"small{i}", 20)
        c.execute_command("BACKUP.CREATE")
    total = du(backup_dir(s))
    sizes = [b[b"size"] for b in backups(c)]
    print(f"\n{n} backups: {total / 1e6:.1f} MB on disk; one backup: {one / 1e6:.1f} MB; "
          f"sum of the backups' own sizes: {sum(sizes) / 1e6:.1f} MB; ratio {total / one:.2f}")
    assert len(sizes) == n
    assert sum(sizes) > 5 * one  # each backup alone is the whole database...
    assert total < 1.5 * one  # ...but they share their table files


def test_backup_work_does_not_block_other_clients_on_the_same_worker(fresh_server):
    # One worker queue: every client shares it, so a backup run on it would stall them all.
    s = fresh_server("--set", "io-threads=1")
    c = s.client()
    for chunk in range(6):
        write(c, f"big{chunk}", 1000, size=1000)
    bid = c.execute_command("BACKUP.CREATE")
    finished = {}

    def verify():
        s.client().execute_command("BACKUP.VERIFY", bid)  # re-reads and checksums every file
        finished["verify"] = time.monotonic()

    t = threading.Thread(target=verify)
    other = s.client()
    t.start()
    time.sleep(0.05)
    assert other.ping()
    finished["ping"] = time.monotonic()
    t.join(60)
    assert finished["ping"] < finished["verify"]


def test_ttls_survive_backup_and_restore_and_restored_keys_expire_unread(fresh_server):
    s = fresh_server()
    c = s.client()
    c.set("forever", "v")
    c.set("long", "v", ex=1000)
    for i in range(500):
        c.set(f"short:{i}", "v", px=1500)
    backup = c.execute_command("BACKUP.CREATE")
    c.flushall()
    # Past the short TTL, the pass it triggered found an empty database: the sweep rests, and
    # only the restore can tell it that expired keys are back.
    time.sleep(3.5)

    def removed():
        # The sweep deletes expired keys (expired_keys); a compaction of the restored files that
        # comes first (a full scan right after the restore, by INFO keyspace's count or the sweep,
        # can make RocksDB compact them) drops them in its filter (expired_values_compacted).
        stats = c.info("stats")
        return stats["expired_keys"] - keys_before, stats["expired_values_compacted"] - values_before

    keys_before, values_before = 0, 0
    keys_before, values_before = removed()
    assert c.execute_command("BACKUP.RESTORE", backup) == b"OK"
    assert c.ttl("forever") == -1
    assert 990 <= c.ttl("long") <= 1000, "the expiry is an absolute time kept in the value, not reset"
    assert c.dbsize() == 2, "the short keys came back already expired: never visible"
    assert c.get("short:1") is None
    # All 500 go without any read of them but short:1's: by the sweep, or by that compaction.
    def all_gone():
        keys, values = removed()
        return keys >= 500 or values >= 499

    deadline = time.time() + 15
    while time.time() < deadline and not all_gone():
        time.sleep(0.2)
    assert all_gone(), removed()
    assert c.dbsize() == 2


def test_a_failed_bgsave_is_reported_as_failed(fresh_server, tmp_path):
    # The backup directory cannot be created: a plain file stands where a folder would be.
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    s = fresh_server("--set", f"backup-dir={blocker / 'backups'}")
    c = s.client()
    c.set("k", "v")
    info = c.info("persistence")
    assert info["last_backup_status"] == "ok" and info["rdb_last_bgsave_status"] == "ok"
    assert c.bgsave() is True
    deadline = time.time() + 20
    while c.info("persistence")["backup_in_progress"] == 1 and time.time() < deadline:
        time.sleep(0.05)
    info = c.info("persistence")
    assert info["last_backup_status"] == "err"
    assert info["rdb_last_bgsave_status"] == "err"
    with pytest.raises(redis.ResponseError):
        c.execute_command("BACKUP.CREATE")


def test_a_full_backup_disk_is_named_as_the_backup_disk(fresh_server):
    directory = tempfile.mkdtemp(prefix="cairnd-backup-full-")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", directory], capture_output=True, text=True)
    if mount.returncode != 0:
        os.rmdir(directory)
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mount.stderr.strip()}")
    try:
        s = fresh_server("--set", f"backup-dir={directory}/backups")
        c = s.client()
        write(c, "k", 4000, size=1000)  # ~8 MB of incompressible text, twice the backup disk
        with pytest.raises(redis.ResponseError) as failed:
            c.execute_command("BACKUP.CREATE")
        assert str(failed.value) == f"backup failed: no space left on the backup disk ({directory}/backups); the data is unchanged"
        assert c.info("persistence")["last_backup_status"] == "err"
        # The data disk is fine: writes go on.
        assert c.set("after", "x") is True and c.dbsize() == 4001
    finally:
        subprocess.run(["umount", "-l", directory])
        os.rmdir(directory)
