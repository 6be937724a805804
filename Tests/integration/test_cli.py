"""cairn-cli, the built binary (CAIRN_CLI), against the real cairnd: one-shot commands, standard
input, --raw, --json, --pipe, the admin subcommands, a server that is down, and the interactive
prompt driven through tmux."""
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import CLI


def cli(server_or_port, *args, stdin=None, env=None, timeout=60):
    port = server_or_port if isinstance(server_or_port, int) else server_or_port.port
    return subprocess.run([CLI, "-p", str(port), *args], input=stdin, capture_output=True,
                          timeout=timeout, env=env)


@pytest.fixture
def r(server):
    c = server.client()
    c.flushall()
    yield c
    c.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- one-shot and output formats -----------------------------------------------------------

def test_one_shot_prints_as_redis_cli(server, r):
    assert cli(server, "SET", "greeting", "hello world").returncode == 0
    assert r.get("greeting") == b"hello world"
    r.set("bin", b"a\x00\xff\"\n")
    run = cli(server, "--no-raw", "MGET", "greeting", "missing", "bin")
    assert run.returncode == 0
    assert run.stdout == b'1) "hello world"\n2) (nil)\n3) "a\\x00\\xff\\"\\n"\n'
    assert cli(server, "--no-raw", "INCR", "n").stdout == b"(integer) 1\n"
    assert cli(server, "--no-raw", "GET", "missing").stdout == b"(nil)\n"
    # Options after the command name are the command's arguments.
    assert cli(server, "SET", "dash", "--raw").returncode == 0
    assert r.get("dash") == b"--raw"


def test_error_reply_exits_one(server, r):
    run = cli(server, "--no-raw", "NOSUCH", "x")
    assert run.returncode == 1
    assert run.stdout.startswith(b"(error) ERR unknown command")
    r.set("s", "text")
    run = cli(server, "INCR", "s")
    assert run.returncode == 1
    assert run.stdout == b""  # raw mode: errors go to stderr, so stdout holds only data
    assert b"ERR value is not an integer" in run.stderr


def test_raw_is_the_default_off_a_terminal(server, r):
    r.set("a", "1")
    r.set("b", "two words")
    expected = b"1\n\ntwo words\n"
    assert cli(server, "MGET", "a", "missing", "b").stdout == expected
    assert cli(server, "--raw", "MGET", "a", "missing", "b").stdout == expected
    assert cli(server, "--raw", "INCR", "a").stdout == b"2\n"


def test_json(server, r):
    r.set("a", "1")
    r.set("u", "h\u00e9\"llo")
    run = cli(server, "--json", "MGET", "a", "missing", "u")
    assert run.returncode == 0
    assert json.loads(run.stdout) == ["1", None, "h\u00e9\"llo"]
    assert json.loads(cli(server, "--json", "INCR", "a").stdout) == 2
    assert json.loads(cli(server, "--json", "SET", "k", "v").stdout) == "OK"
    err = cli(server, "--json", "INCR", "u")
    assert err.returncode == 1
    assert json.loads(err.stdout)["error"].startswith("ERR value is not an integer")
    # A CONFIG GET reply is a flat array in RESP2.
    assert json.loads(cli(server, "--json", "CONFIG", "GET", "appendonly").stdout) == ["appendonly", "yes"]


def test_cf_option_runs_in_that_family(server, r):
    r.execute_command("CF.CREATE", "users")
    assert cli(server, "--cf", "users", "SET", "alice", "1").returncode == 0
    assert r.get("alice") is None
    assert cli(server, "--cf", "users", "GET", "alice").stdout == b"1\n"
    run = cli(server, "--cf", "nosuch", "GET", "x")
    assert run.returncode == 2, run
    assert b"nosuch" in run.stderr, run.stderr
    r.execute_command("CF.DROP", "users")


def test_help_documents_subcommands_and_exit_codes():
    out = subprocess.run([CLI, "--help"], capture_output=True, timeout=30).stdout.decode()
    for text in ["backup create", "backup list", "backup verify", "backup restore", "backup purge",
                 "info [section]", "scan [--match", "range <start> <end>", "cairn-cli INFO",
                 "EXIT STATUS", "--pipe", "--json", "-h <h>", "-p <p>"]:
        assert text in out, text
    sub = subprocess.run([CLI, "backup", "--help"], capture_output=True, timeout=30)
    assert sub.returncode == 0 and b"USAGE: cairn-cli backup <action>" in sub.stdout, sub


# --- standard input --------------------------------------------------------------------------

def test_commands_from_standard_input(server, r):
    lines = b"\n".join([
        b'SET "a key" "line1\\nline2\\x41"',
        b"SET quote 'it\\'s'",
        b"",
        b'GET "a key"',
        b"CF.CREATE piped",
        b"CF.USE piped",
        b"SET infamily yes",
        b"DBSIZE",
    ]) + b"\n"
    run = cli(server, "--no-raw", stdin=lines)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b'OK\nOK\n"line1\\nline2A"\nOK\nOK\nOK\n(integer) 1\n'
    assert r.get("a key") == b"line1\nline2A"
    assert r.get("quote") == b"it's"
    assert r.get("infamily") is None  # it went to the family chosen on the way
    r.execute_command("CF.DROP", "piped")


def test_standard_input_errors_give_status_one(server, r):
    run = cli(server, stdin=b'SET ok 1\nGET "unbalanced\nNOSUCH\nGET ok\n')
    assert run.returncode == 1
    assert run.stdout == b"OK\n1\n"
    assert b"unbalanced quotes" in run.stderr
    assert b"ERR unknown command" in run.stderr


# --- --pipe ----------------------------------------------------------------------------------

def test_pipe_loads_a_million_sets(fresh_server, tmp_path):
    s = fresh_server()
    n = 1_000_000
    path = tmp_path / "mass.resp"
    with open(path, "wb") as f:
        f.write(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nkey:%d\r\n$%d\r\nvalue:%d\r\n"
                         % (len(b"key:%d" % i), i, len(b"value:%d" % i), i) for i in range(n)))
    started = time.time()
    with open(path, "rb") as f:
        run = subprocess.run([CLI, "-p", str(s.port), "--pipe"], stdin=f, capture_output=True, timeout=300)
    elapsed = time.time() - started
    assert run.returncode == 0, run.stderr
    assert b"sent 1000000 commands" in run.stderr and b" 0 errors" in run.stderr, run.stderr
    assert b"commands/s" in run.stderr
    c = s.client()
    assert c.dbsize() == n
    sample = random.Random(7).sample(range(n), 2000) + [0, n - 1]
    assert c.mget([f"key:{i}" for i in sample]) == [b"value:%d" % i for i in sample]
    print(f"--pipe: {n} SETs in {elapsed:.1f} s")


def test_pipe_inline_commands_counts_errors(server, r):
    data = b"SET p1 a\r\nSET p2 b\nNOSUCH cmd\nINCR p1\nSET p3 c\n"
    run = cli(server, "--pipe", stdin=data)
    assert run.returncode == 1
    assert b"sent 5 commands" in run.stderr and b" 2 errors" in run.stderr, run.stderr
    assert b"ERR unknown command" in run.stderr
    assert r.mget("p1", "p2", "p3") == [b"a", b"b", b"c"]


def test_pipe_into_a_family_with_a_password(fresh_server):
    s = fresh_server("--requirepass", "sesame")
    c = s.client(password="sesame")
    c.execute_command("CF.CREATE", "bulk")
    data = b"".join(b"SET k%d v%d\n" % (i, i) for i in range(1000))
    run = subprocess.run([CLI, "-p", str(s.port), "-a", "sesame", "--cf", "bulk", "--pipe"],
                         input=data, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert b"sent 1000 commands" in run.stderr
    assert c.dbsize() == 0
    c.execute_command("CF.USE", "bulk")
    assert c.dbsize() == 1000 and c.get("k999") == b"v999"
    bad = subprocess.run([CLI, "-p", str(s.port), "-a", "wrong", "--pipe"], input=data,
                         capture_output=True, timeout=60)
    assert bad.returncode == 2
    assert b"refused" in bad.stderr


def test_password_for_one_shot(fresh_server):
    s = fresh_server("--requirepass", "sesame")
    assert cli(s.port, "-a", "sesame", "SET", "k", "v").returncode == 0
    run = cli(s.port, "-a", "nope", "GET", "k")
    assert run.returncode == 2 and b"refused" in run.stderr
    env = dict(os.environ, CAIRNCLI_AUTH="sesame")
    assert cli(s.port, "GET", "k", env=env).stdout == b"v\n"


def test_user_option_logs_in_as_that_user(fresh_server, tmp_path):
    conf = tmp_path / "cairn.conf"
    conf.write_text("user reader on >read-secret ~* +@read +acl|whoami\n")
    try:
        s = fresh_server(str(conf))
    except RuntimeError as e:
        if "unknown option 'user'" in str(e):
            pytest.skip("this cairnd has no users (branch hardening not merged)")
        raise
    s.client().set("k", "v")
    as_reader = ["--user", "reader", "-a", "read-secret"]
    assert cli(s, *as_reader, "GET", "k").stdout == b"v\n"
    assert cli(s, *as_reader, "ACL", "WHOAMI").stdout == b"reader\n"
    denied = cli(s, *as_reader, "SET", "k", "x")
    assert denied.returncode == 1 and b"NOPERM" in denied.stderr
    bad = cli(s, "--user", "reader", "-a", "wrong", "GET", "k")
    assert bad.returncode == 2 and b"WRONGPASS" in bad.stderr


# --- admin subcommands -----------------------------------------------------------------------

def test_info_subcommand(server):
    out = cli(server, "info").stdout.decode()
    assert "# Server" in out and "\r" not in out
    only = cli(server, "info", "keyspace").stdout.decode()
    assert "# Keyspace" in only and "# Server" not in only
    data = json.loads(cli(server, "--json", "info").stdout)
    assert data["server"]["tcp_port"] == server.port
    assert "rocksdb" in data
    # In capitals it is the raw command, printed as text (as redis-cli prints INFO).
    assert b"# Server" in cli(server, "INFO").stdout


def test_scan_subcommand(server, r):
    for i in range(250):
        r.set(f"user:{i:03}", i)
    r.set("other", 1)
    keys = cli(server, "scan", "--match", "user:*", "--count", "40").stdout.split()
    assert keys == [b"user:%03d" % i for i in range(250)]
    assert len(cli(server, "scan").stdout.split()) == 251
    r.execute_command("CF.CREATE", "scanned")
    assert cli(server, "--cf", "scanned", "SET", "only-here", "1").returncode == 0
    assert cli(server, "scan", "--cf", "scanned").stdout == b"only-here\n"
    assert json.loads(cli(server, "--json", "scan", "--match", "user:00*").stdout) == [f"user:00{i}" for i in range(10)]
    r.execute_command("CF.DROP", "scanned")


def test_range_subcommand(server, r):
    for k in ["a", "b", "c", "d"]:
        r.set(k, k.upper())
    assert cli(server, "range", "-", "+").stdout == b"a\tA\nb\tB\nc\tC\nd\tD\n"
    assert cli(server, "range", "b", "(d", "--keys-only").stdout == b"b\nc\n"
    assert cli(server, "range", "-", "+", "REV", "LIMIT", "2").stdout == b"d\tD\nc\tC\n"
    assert cli(server, "--no-raw", "range", "[a", "[b").stdout == b'"a" => "A"\n"b" => "B"\n'
    assert json.loads(cli(server, "--json", "range", "c", "+").stdout) == [
        {"key": "c", "value": "C"}, {"key": "d", "value": "D"}]
    # Paged: more entries than one page of 1000.
    with r.pipeline(transaction=False) as p:
        for i in range(2500):
            p.set(f"p:{i:05}", "x")
        p.execute()
    assert len(cli(server, "range", "[p:", "(p;", "--keys-only").stdout.split()) == 2500
    bad = cli(server, "range", "a")
    assert bad.returncode == 64 and b"Usage: cairn-cli range" in bad.stderr


def backups_supported(server):
    return cli(server, "--json", "COMMAND", "INFO", "BACKUP.CREATE").stdout.strip() != b"[null]"


def test_backup_subcommands(fresh_server):
    s = fresh_server()
    if not backups_supported(s):
        pytest.skip("this cairnd has no BACKUP.* commands (branch backup not merged)")
    c = s.client()
    c.set("k", "before")
    created = cli(s, "--no-raw", "backup", "create")
    assert created.returncode == 0 and created.stdout.startswith(b"Backup 1 created"), created
    c.set("k", "after")
    assert cli(s, "backup", "create").stdout == b"2\n"
    table = cli(s, "--no-raw", "backup", "list").stdout.decode().splitlines()
    assert table[0].split() == ["ID", "CREATED", "(UTC)", "SIZE", "FILES"]
    assert [line.split()[0] for line in table[1:]] == ["1", "2"]
    listed = json.loads(cli(s, "--json", "backup", "list").stdout)
    assert [b["id"] for b in listed] == [1, 2] and all(b["size"] > 0 and b["files"] > 0 for b in listed)
    assert abs(listed[0]["time"] - time.time()) < 300
    assert cli(s, "backup", "verify", "1").returncode == 0
    assert cli(s, "--no-raw", "backup", "verify", "2", "--quick").stdout.startswith(b"Backup 2 verified")
    missing = cli(s, "--no-raw", "backup", "verify", "99")
    assert missing.returncode == 1 and b"(error)" in missing.stdout
    assert cli(s, "--no-raw", "backup", "restore", "1").stdout == b"Restored backup 1\n"
    assert c.get("k") == b"before"
    assert json.loads(cli(s, "--json", "backup", "restore", "latest").stdout) == {"restored": "latest"}
    assert c.get("k") == b"after"
    purged = cli(s, "--json", "backup", "purge", "--keep", "1")
    assert json.loads(purged.stdout) == {"deleted": 1, "kept": 1}
    assert [b["id"] for b in json.loads(cli(s, "--json", "backup", "list").stdout)] == [2]
    assert cli(s, "backup", "verify").returncode == 64


# --- server down -----------------------------------------------------------------------------

def test_server_down_is_a_clear_error():
    port = free_port()
    for args, stdin in [(["GET", "k"], None), (["backup", "list"], None), (["info"], None),
                        ([], b"PING\n"), (["--pipe"], b"PING\n")]:
        run = cli(port, *args, stdin=stdin, timeout=30)
        assert run.returncode == 2, (args, run)
        assert run.stderr.decode().strip() == f"Could not connect to Cairn at 127.0.0.1:{port}: Connection refused", args
        assert run.stdout == b""


# --- interactive prompt through a pseudo-terminal ---------------------------------------------

class Tmux:
    """cairn-cli in a detached tmux session: keys in, screen out."""

    def __init__(self, command, env):
        self.name = "cairn-cli-test-" + uuid.uuid4().hex[:8]
        env_args = [f"{k}={v}" for k, v in env.items()]
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", "150", "-y", "50",
                        "env", *env_args, *command], check=True)

    def keys(self, *keys):
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def line(self, text):
        self.keys("-l", text)
        self.keys("Enter")

    def screen(self):
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, check=True).stdout.decode()

    def wait_for(self, text, timeout=15):
        text = text.rstrip()  # capture-pane drops trailing spaces
        deadline = time.time() + timeout
        while time.time() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not on screen:\n{self.screen()}")

    def alive(self):
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode == 0

    def wait_exit(self, timeout=10):
        deadline = time.time() + timeout
        while self.alive() and time.time() < deadline:
            time.sleep(0.05)
        assert not self.alive(), "cairn-cli did not exit"

    def close(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_interactive_prompt_with_history(server, r, tmp_path):
    history = tmp_path / "history"
    env = {"CAIRNCLI_HISTFILE": str(history), "TERM": "xterm"}
    prompt = f"127.0.0.1:{server.port}> "
    t = Tmux([CLI, "-p", str(server.port)], env)
    try:
        t.wait_for(prompt)
        t.line("INCR visits")
        t.wait_for("(integer) 1")
        t.keys("Up")
        t.keys("Enter")  # the recalled INCR runs again
        t.wait_for("(integer) 2")
        assert r.get("visits") == b"2"
        t.line('SET "two words" "a\\nb"')
        t.line('GET "two words"')
        t.wait_for('"a\\nb"')
        t.line("MGET visits nokey")
        t.wait_for('1) "2"\n2) (nil)')
        t.line("CF.CREATE people")
        t.line("CF.USE people")
        screen = t.wait_for(f"127.0.0.1:{server.port}[people]> ")
        t.line("SET p 1")
        t.line("help GET")
        screen = t.wait_for("summary: Returns the string value of a key.")
        assert "  GET key\n" in screen and "group: string" in screen
        t.line("help @nosuchgroup")
        t.wait_for("No help for '@nosuchgroup'")
        t.line("NOSUCH")
        t.wait_for("(error) ERR unknown command")
        t.line("quit")
        t.wait_exit()
    finally:
        t.close()
    assert r.get("p") is None  # it went to the family
    assert b"INCR visits" in history.read_bytes().replace(b"\\040", b" ")
    r.execute_command("CF.DROP", "people")

    # History survives into the next session: Up recalls the last lines of the previous one.
    t = Tmux([CLI, "-p", str(server.port)], env)
    try:
        t.wait_for(prompt)
        t.keys("Up")
        t.wait_for(prompt + "quit")
        t.keys("Up")
        t.wait_for(prompt + "NOSUCH")
    finally:
        t.close()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tab_completes_command_names_in_the_case_typed(server, r, tmp_path):
    env = {"CAIRNCLI_HISTFILE": str(tmp_path / "history"), "TERM": "xterm"}
    prompt = f"127.0.0.1:{server.port}> "
    t = Tmux([CLI, "-p", str(server.port)], env)
    try:
        t.wait_for(prompt)
        t.keys("-l", "cf.cre")
        t.keys("Tab")
        t.wait_for(prompt + "cf.create")
        t.line("completed")
        t.wait_for("OK")
        t.keys("-l", "SETN")
        t.keys("Tab")
        t.wait_for(prompt + "SETNX")
        t.line("k v")
        t.wait_for("(integer) 1")
        # Arguments are not commands (nor file names): Tab leaves them alone.
        t.keys("-l", "GET SETN")
        t.keys("Tab")
        t.keys("Enter")
        t.wait_for(prompt + "GET SETN\n(nil)")
        t.line("quit")
        t.wait_exit()
    finally:
        t.close()
    assert b"completed" in r.execute_command("CF.LIST")
    assert r.get("k") == b"v"
    r.execute_command("CF.DROP", "completed")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_pipe_draws_a_progress_bar_on_a_terminal(server, r, tmp_path):
    path = tmp_path / "cmds.txt"
    path.write_bytes(b"".join(b"SET bar:%d %d\n" % (i, i) for i in range(20000)))
    t = Tmux(["sh", "-c", f"{CLI} -p {server.port} --pipe < {path}; sleep 30"], {"TERM": "xterm"})
    try:
        screen = t.wait_for("All data transferred", timeout=60)
        assert "[" + "=" * 30 + "] 100%" in screen and "20000 replies" in screen, screen
    finally:
        t.close()
    assert r.get("bar:19999") == b"19999"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_interactive_prompt_when_the_server_is_down(tmp_path):
    port = free_port()
    t = Tmux([CLI, "-p", str(port)], {"CAIRNCLI_HISTFILE": str(tmp_path / "h"), "TERM": "xterm"})
    try:
        screen = t.wait_for("not connected> ")
        assert f"Could not connect to Cairn at 127.0.0.1:{port}: Connection refused" in screen
        t.line("PING")
        t.wait_for("not connected> PING")
        deadline = time.time() + 10
        while t.screen().count("Could not connect") < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert t.screen().count("Could not connect") == 2  # it tried again for the command
        t.keys("C-d")
        t.wait_exit()
    finally:
        t.close()


def test_shutdown_one_shot_succeeds_quietly(fresh_server):
    s = fresh_server()
    result = cli(s, "SHUTDOWN")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"" and result.stderr == b""
    assert s.process.wait(10) == 0


def prompt_on_a_pty(server):
    """cairn-cli at its prompt on a fresh pseudo-terminal: (pid, terminal descriptor)."""
    import pty
    import select
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update({"CAIRNCLI_HISTFILE": "", "TERM": "xterm"})
        os.execv(CLI, [CLI, "-p", str(server.port)])
    seen, deadline = b"", time.time() + 15
    while b"> " not in seen and time.time() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            seen += os.read(fd, 4096)
    assert b"> " in seen, f"no prompt: {seen!r}"
    return pid, fd


def test_hangup_at_the_prompt_exits_cleanly(server):
    """A closed terminal (tmux kill-session, a dropped SSH session) hangs up the prompt: the
    signal and the closed terminal come together. cairn-cli must exit with 129, never crash
    (libedit's own handler used to dereference its cleared editor: SIGSEGV in about 1 of 7)."""
    import signal
    outcomes = []
    for _ in range(20):
        pid, fd = prompt_on_a_pty(server)
        os.killpg(pid, signal.SIGHUP)
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        outcomes.append(f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
    # 0: the closed terminal was read as end of input before the signal came.
    assert set(outcomes) <= {129, 0}, outcomes


def test_interrupt_at_the_prompt_exits_and_restores_the_terminal(server):
    import termios
    pid, fd = prompt_on_a_pty(server)
    os.write(fd, b"\x03")
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 130
    lflag = termios.tcgetattr(fd)[3]
    assert lflag & termios.ICANON and lflag & termios.ECHO, "the terminal is back in line mode"
    os.close(fd)
