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


# ACL management at run time, compared with Redis 7.0's replies.

@pytest.fixture
def admin(fresh_server):
    srv = fresh_server()
    c = srv.client()
    yield srv, c
    c.close()


def user_client(srv, name, password="pw", protocol=2):
    return srv.client(username=name, password=password, protocol=protocol, retry=Retry(NoBackoff(), 0))


@pytest.mark.parametrize("protocol", [2, 3])
def test_setuser_getuser_list(fresh_server, protocol):
    srv = fresh_server()
    c = srv.client(protocol=protocol)
    assert c.execute_command("ACL", "SETUSER", "u2", "on", ">pw", "~app:*", "+@read", "-get", "+set") == b"OK"
    u = raw(c, "ACL", "GETUSER", "u2")
    if protocol == 2:
        u = dict(zip(u[::2], u[1::2]))
    assert list(u[b"flags"]) == [b"on"]
    assert u[b"passwords"] == [hashlib.sha256(b"pw").hexdigest().encode()]
    assert u[b"commands"] == b"-@all +@read -get +set"
    assert u[b"keys"] == b"~app:*" and u[b"channels"] == b"" and u[b"selectors"] == []
    assert raw(c, "ACL", "GETUSER", "nobody") is None
    if protocol == 3:
        # Redis 7.0's RESP3 shape: a map whose flags are a set.
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"HELLO 3\r\nACL GETUSER default\r\n")
        time.sleep(0.3)
        reply = s.recv(65536)
        s.close()
        assert b"%6\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$6\r\nnopass\r\n$9\r\npasswords\r\n*0\r\n" in reply
    c.execute_command("ACL", "SETUSER", "rw", "on", "nopass", "%R~r:*", "%W~w:*", "%RW~b:*", "~c:*", "&ch*", "+@all")
    c.execute_command("ACL", "SETUSER", "fresh")
    rules = [r.decode() for r in raw(c, "ACL", "LIST")]
    assert rules == [
        "user default on nopass ~* &* +@all",
        "user fresh off resetchannels -@all",
        "user rw on nopass %R~r:* %W~w:* ~b:* ~c:* resetchannels &ch* +@all",
        f"user u2 on #{hashlib.sha256(b'pw').hexdigest()} ~app:* resetchannels -@all +@read -get +set",
    ]
    assert raw(c, "ACL", "USERS") == [b"default", b"fresh", b"rw", b"u2"]
    # Rules apply to an existing user in order; a repeated command rule replaces the earlier.
    c.execute_command("ACL", "SETUSER", "u2", "+get", "<pw", ">new", "resetkeys", "~k")
    u = raw(c, "ACL", "GETUSER", "u2")
    u = dict(zip(u[::2], u[1::2])) if protocol == 2 else u
    assert u[b"commands"] == b"-@all +@read +set +get" and u[b"keys"] == b"~k"
    assert u[b"passwords"] == [hashlib.sha256(b"new").hexdigest().encode()]
    c.close()


def test_setuser_errors_match_redis(admin):
    _, c = admin
    cases = {
        "bogus": "Syntax error",
        "+nosuch": "Unknown command or category name in ACL",
        "+@nosuch": "Unknown command or category name in ACL",
        "#abc": "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
        "%X~k": "Syntax error",
        "<notthere": "The password you are trying to remove from the user does not exist",
    }
    for rule, reason in cases.items():
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("ACL", "SETUSER", "u4", rule)
        assert str(e.value) == f"Error in ACL SETUSER modifier '{rule}': {reason}"
    with pytest.raises(redis.ResponseError, match="^Error in ACL SETUSER modifier '~x': Adding a pattern after the"):
        c.execute_command("ACL", "SETUSER", "u4", "allkeys", "~x")
    assert raw(c, "ACL", "GETUSER", "u4") is None, "a refused SETUSER changes nothing"
    with pytest.raises(redis.ResponseError, match="^The 'default' user cannot be removed$"):
        c.execute_command("ACL", "DELUSER", "default")
    with pytest.raises(redis.ResponseError, match="^Unknown category 'bogus'$"):
        c.execute_command("ACL", "CAT", "bogus")
    with pytest.raises(redis.ResponseError, match="^ACL GENPASS argument must be the number of bits"):
        c.execute_command("ACL", "GENPASS", 0)
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        c.execute_command("ACL", "LOG", "x")
    for sub in ("SAVE", "LOAD"):
        with pytest.raises(redis.ResponseError, match="^This Redis instance is not configured to use an ACL file"):
            c.execute_command("ACL", sub)
    with pytest.raises(redis.ResponseError, match="^unknown subcommand 'BOGUS'. Try ACL HELP.$"):
        c.execute_command("ACL", "BOGUS")


def test_deluser_genpass_cat_whoami_dryrun(admin):
    srv, c = admin
    c.execute_command("ACL", "SETUSER", "gone", "on", ">pw", "+@all", "~*")
    g = user_client(srv, "gone")
    assert g.ping() is True
    assert c.execute_command("ACL", "DELUSER", "gone", "nosuch") == 1
    with pytest.raises(redis.ConnectionError):
        g.ping()  # the deleted user's connections are closed
    assert len(c.execute_command("ACL", "GENPASS")) == 64
    assert len(c.execute_command("ACL", "GENPASS", 5)) == 2
    assert c.execute_command("ACL", "WHOAMI") == b"default"
    hashes = raw(c, "ACL", "CAT", "hash")
    assert b"hset" in hashes and b"hget" in hashes and b"get" not in hashes
    assert b"get" in raw(c, "ACL", "CAT", "read") and b"set" not in raw(c, "ACL", "CAT", "read")
    assert b"blpop" in raw(c, "ACL", "CAT", "blocking")
    c.execute_command("ACL", "SETUSER", "u2", "on", ">pw", "~app:*", "+@read", "-get", "+set", "&ch*")
    assert c.execute_command("ACL", "DRYRUN", "u2", "get", "app:x") == b"This user has no permissions to run the 'get' command"
    assert c.execute_command("ACL", "DRYRUN", "u2", "set", "other:x", "1") == b"This user has no permissions to access the 'other:x' key"
    assert c.execute_command("ACL", "DRYRUN", "u2", "set", "app:x", "1") == b"OK"
    with pytest.raises(redis.ResponseError, match="^User 'nobody' not found$"):
        c.execute_command("ACL", "DRYRUN", "nobody", "get", "x")
    with pytest.raises(redis.ResponseError, match="^Command 'nosuch' not found$"):
        c.execute_command("ACL", "DRYRUN", "u2", "nosuch")


def test_acl_help_matches_redis(admin):
    _, c = admin
    lines = raw(c, "ACL", "HELP")
    assert lines[0] == b"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[-2:] == [b"HELP", b"    Prints this help."]
    assert len(lines) == 29 and b"DRYRUN <username> <command> [<arg> ...]" in lines
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'acl\|help' command$"):
        c.execute_command("ACL", "HELP", "extra")


def test_acl_log(admin):
    srv, c = admin
    c.execute_command("ACL", "SETUSER", "u2", "on", ">pw", "~app:*", "+@read", "+set", "+@transaction", "+client|setinfo")
    u = user_client(srv, "u2")
    for _ in range(2):
        with pytest.raises(redis.ResponseError):
            u.set("other:x", 1)
    with pytest.raises(redis.ResponseError):
        u.execute_command("CONFIG", "GET", "x")
    with pytest.raises(redis.AuthenticationError):
        user_client(srv, "u2", "wrong").ping()
    with pytest.raises(redis.ResponseError):
        with u.pipeline() as tx:
            tx.set("other:y", 1)
            tx.execute()
    entries = raw(c, "ACL", "LOG")
    entries = [dict(zip(e[::2], e[1::2])) if isinstance(e, list) else e for e in entries]
    assert [(e[b"reason"], e[b"context"], e[b"object"], e[b"username"], e[b"count"]) for e in entries] == [
        (b"key", b"multi", b"other:y", b"u2", 1),
        (b"auth", b"toplevel", b"AUTH", b"u2", 1),
        (b"command", b"toplevel", b"config|get", b"u2", 1),
        (b"key", b"toplevel", b"other:x", b"u2", 2),
    ]
    assert b"user=u2" in entries[0][b"client-info"] and float(entries[0][b"age-seconds"]) < 10
    assert len(raw(c, "ACL", "LOG", 1)) == 1
    assert c.execute_command("ACL", "LOG", "RESET") == b"OK"
    assert raw(c, "ACL", "LOG") == []


def test_acl_save_load_with_aclfile(fresh_server):
    directory = tempfile.mkdtemp(prefix="cairnd-aclfile-")
    path = os.path.join(directory, "users.acl")
    with open(path, "w") as f:
        f.write("user alice on >alicepw ~a:* +@all\n")
    srv = fresh_server("--set", f"aclfile={path}")
    c = srv.client()
    assert user_client(srv, "alice", "alicepw").set("a:1", "v") is True
    c.execute_command("ACL", "SETUSER", "bob", "on", ">bobpw", "~b:*", "+@read")
    assert c.execute_command("ACL", "SAVE") == b"OK"
    saved = open(path).read().splitlines()
    assert f"user bob on #{hashlib.sha256(b'bobpw').hexdigest()} ~b:* resetchannels -@all +@read" in saved
    assert "bobpw" not in "".join(saved)
    c.execute_command("ACL", "DELUSER", "bob")
    assert c.execute_command("ACL", "LOAD") == b"OK"
    assert b"bob" in raw(c, "ACL", "USERS")
    with open(path, "a") as f:
        f.write("user carol on +@nosuch\n")
    with pytest.raises(redis.ResponseError, match=r"users.acl:\d+: .*WARNING: ACL errors detected, no change"):
        c.execute_command("ACL", "LOAD")
    assert b"carol" not in raw(c, "ACL", "USERS")
    # After a restart the users come from the file.
    c.execute_command("ACL", "SAVE")
    srv.restart()
    assert user_client(srv, "bob", "bobpw").get("b:1") is None
    assert b"bob" in raw(srv.client(), "ACL", "USERS")


@pytest.fixture
def limited(fresh_server):
    srv = fresh_server()
    root = srv.client()
    root.execute_command("ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+@all")
    root.set("other:x", "secret")
    root.set("app:a", "mine")
    u = user_client(srv, "app")
    yield srv, root, u
    u.close()
    root.close()


KEY_ERROR = "this user has no permissions to access one of the keys used as arguments"


def test_key_patterns_every_path(limited):
    srv, root, u = limited
    assert u.get("app:a") == b"mine"
    refused = [
        ("GET", "other:x"), ("SET", "other:x", "1"), ("MGET", "app:a", "other:x"), ("MSET", "app:b", "1", "other:x", "2"),
        ("DEL", "app:a", "other:x"), ("EXISTS", "other:x"), ("TYPE", "other:x"), ("TTL", "other:x"),
        ("EXPIRE", "other:x", "5"), ("APPEND", "other:x", "z"), ("INCR", "other:n"), ("GETDEL", "other:x"),
        ("HSET", "other:h", "f", "v"), ("HGETALL", "other:h"), ("SADD", "other:s", "m"), ("SMEMBERS", "other:s"),
        ("SUNIONSTORE", "app:dst", "other:s"), ("ZADD", "other:z", "1", "m"), ("ZRANGE", "other:z", "0", "-1"),
        ("LPUSH", "other:l", "e"), ("LRANGE", "other:l", "0", "-1"), ("LMOVE", "app:l", "other:l", "LEFT", "RIGHT"),
        ("RENAME", "app:a", "other:x"), ("RENAME", "other:x", "app:z"), ("COPY", "other:x", "app:c"),
        ("COPY", "app:a", "other:c"), ("DUMP", "other:x"), ("RESTORE", "other:r", "0", "x"),
        ("OBJECT", "ENCODING", "other:x"), ("MEMORY", "USAGE", "other:x"), ("GETBIT", "other:x", "1"),
        ("BLPOP", "other:l", "0.01"), ("EVAL", "return 1", "1", "other:x"),
    ]
    for args in refused:
        with pytest.raises(redis.ResponseError) as e:
            u.execute_command(*args)
        assert str(e.value) == KEY_ERROR, args
    # Pipelined (the grouped GET and SET paths included): each refused, the others run.
    p = u.pipeline(transaction=False)
    p.get("other:x").set("other:x", "p").get("app:a").set("app:p", "1").get("other:x")
    out = p.execute(raise_on_error=False)
    assert [isinstance(x, redis.ResponseError) for x in out] == [True, True, False, False, True]
    assert out[2] == b"mine"
    # MULTI/EXEC: refused at queue time, so EXEC aborts and nothing runs.
    with pytest.raises(redis.ResponseError):
        with u.pipeline() as tx:
            tx.set("app:t", "1").get("other:x")
            tx.execute()
    assert root.exists("app:t") == 0
    # A script's redis.call passes the same check.
    with pytest.raises(redis.ResponseError, match="no permissions"):
        u.eval("return redis.call('GET', 'other:x')", 0)
    with pytest.raises(redis.ResponseError, match="no permissions"):
        u.eval("return redis.call('SET', KEYS[1], 'x')", 1, "other:x")
    assert u.eval("return redis.call('GET', KEYS[1])", 1, "app:a") == b"mine"
    # SCAN and KEYS list every name, as in Redis (key patterns guard values, not names).
    assert b"other:x" in u.keys("*")
    assert root.get("other:x") == b"secret"


def test_read_only_and_write_only_patterns(fresh_server):
    srv = fresh_server()
    root = srv.client()
    root.execute_command("ACL", "SETUSER", "rw", "on", ">pw", "%R~r:*", "%W~w:*", "+@all")
    root.set("r:1", "v")
    u = user_client(srv, "rw")
    assert u.get("r:1") == b"v"
    with pytest.raises(redis.ResponseError, match=KEY_ERROR):
        u.set("r:1", "x")
    assert u.set("w:1", "x") is True
    with pytest.raises(redis.ResponseError, match=KEY_ERROR):
        u.get("w:1")
    # A source that is only read needs only read access, its destination only write.
    root.sadd("r:s", "m")
    assert u.copy("r:1", "w:copy") is True
    assert u.sunionstore("w:u", "r:s") == 1
    with pytest.raises(redis.ResponseError, match=KEY_ERROR):
        u.copy("w:1", "w:2")
    with pytest.raises(redis.ResponseError, match=KEY_ERROR):
        u.sunionstore("r:u", "r:s")


def test_changes_apply_to_connected_users(limited):
    srv, root, u = limited
    with pytest.raises(redis.ResponseError):
        u.get("other:x")
    root.execute_command("ACL", "SETUSER", "app", "~other:*")
    assert u.get("other:x") == b"secret"
    root.execute_command("ACL", "SETUSER", "app", "-get")
    with pytest.raises(redis.ResponseError, match="^this user has no permissions to run the 'get' command$"):
        u.get("app:a")


def test_channel_patterns(fresh_server):
    srv = fresh_server()
    root = srv.client()
    root.execute_command("ACL", "SETUSER", "pub", "on", ">pw", "&news.*", "+@all", "~*")
    u = user_client(srv, "pub")
    assert u.publish("news.today", "x") == 0
    with pytest.raises(redis.ResponseError, match="^this user has no permissions to access one of the channels used as arguments$"):
        u.publish("sport", "x")
