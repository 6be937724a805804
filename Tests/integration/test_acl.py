"""Access control against the real cairnd: users from cairn.conf, AUTH / HELLO AUTH, permissions
by category (read, write, admin), ACL WHOAMI / LIST / USERS / CAT, failed-AUTH rate limiting."""
import hashlib
import os
import socket
import tempfile
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import Cairnd

ADMIN_HASH = hashlib.sha256(b"adminpw").hexdigest()
CONF = f"""
requirepass defaultpw
user reader on >readerpw ~* +@read +@connection +acl|whoami
user writer on >writerpw allkeys +@read +@write +@connection +acl|whoami
user root on #{ADMIN_HASH} ~* &* +@all
user sleeper off >sleeperpw +@all
user twokeys on >one >two +@read +@connection
auth-max-failures 100
"""


@pytest.fixture(scope="module")
def acl_server():
    directory = tempfile.mkdtemp(prefix="cairnd-acl-")
    path = os.path.join(directory, "cairn.conf")
    with open(path, "w") as f:
        f.write(CONF)
    s = Cairnd([path], directory=directory)
    yield s
    s.cleanup()


def login(server, user, password, protocol=2):
    # No retries: redis-py retries a refused login with backoff, which only slows the test.
    return server.client(username=user, password=password, protocol=protocol,
                         retry=Retry(NoBackoff(), 0))


def raw(client, *args):
    """Sends a command without redis-py's reply callbacks (COMMAND INFO, ACL LIST)."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def test_unauthenticated_is_refused(acl_server):
    c = acl_server.client(retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.AuthenticationError):
        c.get("k")


def test_requirepass_is_default_users_password(acl_server):
    c = acl_server.client(password="defaultpw")
    assert c.set("dk", "v") is True
    assert c.execute_command("ACL", "WHOAMI") == b"default"


def test_wrong_password_unknown_user_and_disabled_user_are_refused(acl_server):
    for user, password in [("reader", "nope"), ("nobody", "readerpw"), ("sleeper", "sleeperpw"),
                           ("default", "readerpw")]:
        c = login(acl_server, user, password)
        with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
            c.ping()
        c.close()
    # The refused attempts are in the log with the client's address.
    time.sleep(0.2)
    log = open(os.path.join(acl_server.directory, "cairnd.log")).read()
    assert "failed AUTH from 127.0.0.1:" in log and "as 'sleeper'" in log


def test_hashed_password_and_several_passwords(acl_server):
    assert login(acl_server, "root", "adminpw").execute_command("ACL", "WHOAMI") == b"root"
    assert login(acl_server, "twokeys", "one").ping() is True
    assert login(acl_server, "twokeys", "two").ping() is True


def test_hello_3_auth(acl_server):
    s = socket.create_connection(("127.0.0.1", acl_server.port), timeout=10)
    s.sendall(b"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$6\r\nwriter\r\n$8\r\nwriterpw\r\n")
    reply = s.recv(4096)
    assert reply.startswith(b"%7"), reply
    s.sendall(b"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$6\r\nwriter\r\n$5\r\nwrong\r\n")
    assert s.recv(4096).startswith(b"-WRONGPASS")
    s.sendall(b"ACL WHOAMI\r\n")
    assert s.recv(4096) == b"$6\r\nwriter\r\n", "a failed AUTH keeps the previous login"
    s.close()


def test_read_only_user_cannot_write(acl_server):
    root = login(acl_server, "root", "adminpw")
    root.set("shared", "value")
    c = login(acl_server, "reader", "readerpw")
    assert c.get("shared") == b"value"
    assert c.exists("shared") == 1
    assert c.execute_command("CF.LIST")
    for args in [("SET", "shared", "x"), ("DEL", "shared"), ("INCR", "n"), ("MSET", "a", "1"),
                 ("APPEND", "shared", "x"), ("EXPIRE", "shared", "10"), ("MERGE", "m", "1"),
                 ("DELRANGE", "-", "+")]:
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command(*args)
        assert str(e.value) == f"this user has no permissions to run the '{args[0].lower()}' command"
    # A pipeline of plain SETs (the grouped fast path) is refused too.
    p = c.pipeline(transaction=False)
    for i in range(10):
        p.set(f"p{i}", i)
    results = p.execute(raise_on_error=False)
    assert all(isinstance(x, redis.ResponseError) for x in results)
    # Inside MULTI, the refused command aborts the transaction.
    with pytest.raises(redis.ResponseError):
        with c.pipeline() as tx:
            tx.get("shared").set("shared", "y")
            tx.execute()
    assert root.get("shared") == b"value"
    assert root.exists("p0") == 0


def test_read_only_user_cannot_back_up(acl_server):
    c = login(acl_server, "reader", "readerpw")
    root = login(acl_server, "root", "adminpw")
    names = {row[0] for row in raw(root, "COMMAND", "INFO")}
    backup_commands = [n for n in (b"backup.create", b"bgsave", b"checkpoint", b"compact") if n in names]
    assert b"compact" in backup_commands
    for name in backup_commands:
        with pytest.raises(redis.ResponseError, match="NOPERM|no permissions"):
            c.execute_command(name.decode(), *(["/tmp/x"] if name == b"checkpoint" else []))


def test_write_user_cannot_run_admin_commands(acl_server):
    c = login(acl_server, "writer", "writerpw")
    assert c.set("w", "1") is True and c.get("w") == b"1"
    for args in [("FLUSHALL",), ("FLUSHDB",), ("CONFIG", "SET", "timeout", "5"), ("CONFIG", "GET", "*"),
                 ("SHUTDOWN",), ("CF.DROP", "x"), ("CF.CREATE", "x"), ("COMPACT",), ("CLIENT", "LIST"),
                 ("ACL", "LIST")]:
        with pytest.raises(redis.ResponseError, match="no permissions"):
            c.execute_command(*args)
    assert c.get("w") == b"1", "FLUSHALL was refused"


def admin_commands(root):
    """Every command and subcommand flagged admin in the command table (COMMAND INFO)."""
    found = []

    def walk(rows):
        for row in rows:
            name, arity, flags = row[0].decode(), row[1], {f.decode() if isinstance(f, bytes) else f for f in row[2]}
            if "admin" in flags:
                found.append((name, arity))
            if len(row) > 9 and row[9]:
                walk(row[9])

    walk(raw(root, "COMMAND", "INFO"))
    return found


def test_every_admin_command_refuses_a_non_admin_user(acl_server):
    root = login(acl_server, "root", "adminpw")
    commands = admin_commands(root)
    names = {n for n, _ in commands}
    assert {"shutdown", "flushall", "flushdb", "config|set", "config|get", "cf.drop", "compact"} <= names
    for user, password in [("reader", "readerpw"), ("writer", "writerpw")]:
        c = login(acl_server, user, password)
        for name, arity in commands:
            argv = name.split("|")
            argv += ["x"] * (abs(arity) - len(argv))
            with pytest.raises(redis.ResponseError) as e:
                c.execute_command(*argv)
            assert str(e.value) == f"this user has no permissions to run the '{name}' command", (name, str(e.value))
    assert root.ping() is True, "the server is still up (SHUTDOWN was refused)"


def test_admin_user_may_run_admin_commands(acl_server):
    root = login(acl_server, "root", "adminpw")
    assert root.config_get("timeout")
    assert root.execute_command("CF.CREATE", "aclcf") in (b"OK", "OK", True)
    assert root.execute_command("CF.DROP", "aclcf") in (b"OK", "OK", True)


def test_acl_whoami_list_users_cat(acl_server):
    root = login(acl_server, "root", "adminpw")
    assert root.execute_command("ACL", "WHOAMI") == b"root"
    users = raw(root, "ACL", "USERS")
    assert users == [b"default", b"reader", b"root", b"sleeper", b"twokeys", b"writer"]
    rules = [r.decode() for r in raw(root, "ACL", "LIST")]
    joined = "\n".join(rules)
    for secret in ("adminpw", "readerpw", "writerpw", "defaultpw", "sleeperpw"):
        assert secret not in joined
    assert f"user root on #{ADMIN_HASH} ~* &* +@all" in rules
    reader_hash = hashlib.sha256(b"readerpw").hexdigest()
    assert f"user reader on #{reader_hash} ~* resetchannels -@all +@read +@connection +acl|whoami" in rules
    assert any(r.startswith("user sleeper off #") for r in rules)
    assert f"user default on #{hashlib.sha256(b'defaultpw').hexdigest()} ~* &* +@all" in rules
    assert raw(root, "ACL", "CAT") == [c.encode() for c in (
        "keyspace read write set sortedset list hash string bitmap hyperloglog geo stream pubsub admin fast slow "
        "blocking dangerous connection transaction scripting").split()]
    write_cmds = raw(root, "ACL", "CAT", "write")
    assert b"set" in write_cmds and b"get" not in write_cmds and b"flushall" not in write_cmds
    assert b"flushall" in raw(root, "ACL", "CAT", "admin")
    reader = login(acl_server, "reader", "readerpw")
    assert reader.execute_command("ACL", "WHOAMI") == b"reader"
    assert reader.ping() is True and reader.echo("x") == b"x"


def test_failed_auth_is_rate_limited_per_address(fresh_server):
    srv = fresh_server("--requirepass", "pw", "--set", "auth-max-failures=3")
    logged_in = srv.client(password="pw")
    assert logged_in.ping() is True
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    f = s.makefile("rb")
    replies = []
    for _ in range(5):
        s.sendall(b"AUTH wrong\r\n")
        replies.append(f.readline())
    assert replies[:3] == [b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"] * 3
    assert all(r.startswith(b"-WRONGPASS too many failed AUTH attempts") for r in replies[3:]), replies
    # Now even the right password is refused from this address until the minute is over...
    s.sendall(b"AUTH pw\r\n")
    assert f.readline().startswith(b"-WRONGPASS too many failed AUTH attempts")
    s.sendall(b"GET k\r\n")
    assert f.readline().startswith(b"-NOAUTH")
    # ... while a client that logged in before keeps working.
    assert logged_in.set("k", "v") is True
    time.sleep(0.2)
    log = open(os.path.join(srv.directory, "cairnd.log")).read()
    assert log.count("failed AUTH from 127.0.0.1:") == 3
    assert "over auth-max-failures" in log
    s.close()


def test_binding_beyond_loopback_without_password_warns(fresh_server):
    def warned(srv):
        # The warning is logged before the port file is written, so it is there by now.
        return "WARNING: listening on 0.0.0.0 with no password" in open(
            os.path.join(srv.directory, "cairnd.log")).read()

    assert warned(fresh_server("--bind", "0.0.0.0"))
    assert not warned(fresh_server("--bind", "0.0.0.0", "--requirepass", "pw"))
    assert not warned(fresh_server())
