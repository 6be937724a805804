"""Redis 7 functions through redis-py, RESP2 and RESP3, against the real cairnd: FUNCTION LOAD /
DELETE / FLUSH / LIST / DUMP / RESTORE / STATS / KILL / HELP, FCALL and FCALL_RO, flags, the
library-load environment, Redis 7.0's reply shapes and error texts (as redis-server 7.0 gives
them), persistence across a restart and a kill -9, and MONITOR's `[0 lua]` lines."""
import re
import signal
import socket
import threading
import time

import pytest
import redis
from redis.exceptions import ResponseError

from conftest import resp_command

LIB = """#!lua name=mylib
redis.register_function('echo_all', function(keys, args) return {keys, args} end)
redis.register_function{function_name='getter', callback=function(keys, args) return redis.call('get', keys[1]) end,
  flags={'no-writes'}, description='reads a key'}
redis.register_function('setter', function(keys, args) return redis.call('set', keys[1], args[1]) end)
"""


def lib(name, *functions):
    body = "\n".join(f"redis.register_function('{f}', function(keys, args) return '{name}.{f}' end)" for f in functions)
    return f"#!lua name={name}\n{body}"


def error_of(fn, *args):
    with pytest.raises(ResponseError) as e:
        fn(*args)
    return str(e.value)


@pytest.fixture
def f(r):
    r.function_flush()
    yield r
    r.function_flush()


def as_dict(entry):
    """One FUNCTION LIST entry (a flat list under RESP2, a map under RESP3) as a dict."""
    if isinstance(entry, dict):
        return {k.decode() if isinstance(k, bytes) else k: v for k, v in entry.items()}
    return {entry[i].decode(): entry[i + 1] for i in range(0, len(entry), 2)}


def listing(r, **kwargs):
    out = []
    for e in r.function_list(**kwargs):
        d = as_dict(e)
        d["functions"] = [as_dict(x) for x in d["functions"]]
        for x in d["functions"]:
            x["flags"] = sorted(x["flags"])
        out.append(d)
    return out


# ---------------------------------------------------------------- load, call, list

def test_load_and_fcall(f):
    assert f.function_load(LIB) in (b"mylib", "mylib")
    assert f.fcall("echo_all", 2, "a", "b", "c", "d") == [[b"a", b"b"], [b"c", b"d"]]
    assert f.fcall("setter", 1, "k", "v") in (b"OK", "OK", True)
    assert f.fcall("getter", 1, "k") == b"v"
    assert f.fcall_ro("getter", 1, "k") == b"v"
    assert f.fcall("GETTER", 1, "k") == b"v", "function names are found regardless of case"


def test_list_shape_and_withcode(f):
    f.function_load(LIB)
    [entry] = listing(f)
    assert entry["library_name"] == b"mylib" and entry["engine"] == b"LUA"
    functions = {x["name"]: x for x in entry["functions"]}
    assert set(functions) == {b"echo_all", b"getter", b"setter"}
    assert functions[b"getter"]["description"] == b"reads a key"
    assert functions[b"getter"]["flags"] == [b"no-writes"]
    assert functions[b"setter"]["description"] is None
    assert functions[b"setter"]["flags"] == []
    assert "library_code" not in entry
    [coded] = listing(f, withcode=True)
    assert coded["library_code"] == LIB.encode()


def test_list_libraryname_pattern(f):
    f.function_load(lib("alpha", "a1"))
    f.function_load(lib("beta", "b1"))
    assert [e["library_name"] for e in listing(f)] == [b"alpha", b"beta"]
    assert [e["library_name"] for e in listing(f, library="al*")] == [b"alpha"]
    assert listing(f, library="zz*") == []


def test_list_errors(f):
    assert error_of(f.execute_command, "FUNCTION", "LIST", "LIBRARYNAME") == "library name argument was not given"
    assert error_of(f.execute_command, "FUNCTION", "LIST", "foo") == "Unknown argument foo"
    assert error_of(f.execute_command, "FUNCTION", "LIST", "WITHCODE", "withcode") == "Unknown argument withcode"
    assert error_of(f.execute_command, "FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b") == "Unknown argument LIBRARYNAME"


def test_flags_in_redis_order(f):
    f.function_load("#!lua name=flagged\nredis.register_function{function_name='y', callback=function() return 1 end, "
                    "flags={'allow-cross-slot-keys', 'no-cluster', 'allow-stale', 'allow-oom', 'no-writes'}}")
    raw = f.execute_command("FUNCTION", "LIST")
    entry = as_dict(raw[0])
    flags = as_dict(entry["functions"][0])["flags"]
    expected = [b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster", b"allow-cross-slot-keys"]
    assert (sorted(flags) == sorted(expected)) if isinstance(flags, set) else flags == expected


def test_replace(f):
    f.function_load(lib("one", "first"))
    assert error_of(f.function_load, lib("one", "second")) == "Library 'one' already exists"
    f.function_load(lib("one", "second"), replace=True)
    assert f.fcall("second", 0) == b"one.second"
    assert error_of(f.fcall, "first", 0) == "Function not found"
    f.function_load(lib("two", "other"))
    assert error_of(f.function_load, lib("three", "other")) == "Function other already exists"
    assert error_of(f.function_load, lib("one", "other"), True) == "Function other already exists"
    assert f.fcall("second", 0) == b"one.second", "a refused REPLACE keeps the old library"
    assert error_of(f.execute_command, "FUNCTION", "LOAD", "foo", lib("x", "y")) == "Unknown option given: foo"
    assert f.execute_command("FUNCTION", "LOAD", "replace", "REPLACE", lib("one", "third")) in (b"one", "one")


LOAD_ERRORS = [
    ("return 1", "Missing library metadata"),
    ("#!lua name=t8", "Invalid library metadata"),
    ("#!lua\nreturn 1", "Library name was not given"),
    ("#!python name=lib2\nreturn 1", "Engine 'python' not found"),
    ("#!lua name=lib2 foo=bar\nreturn 1", "Invalid metadata value given: foo=bar"),
    ("#!lua name=t6 name=t7\nreturn 1", "Invalid metadata value, name argument was given multiple times"),
    ("#!lua name=bad-name\nreturn 1",
     "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
    ("#!lua name=lib2\nreturn 1", "No functions registered"),
    ("#!lua name=lib2\nsyntax error here", "Error compiling function: user_function:2: '=' expected near 'error'"),
    ("#!lua name=lib2\nredis.call('set','x','y')",
     "Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
    ("#!lua name=lib2\nx = 5", "Error registering functions: ERR user_function:2: Attempt to modify a readonly table"),
    ("#!lua name=lib2\nlocal y = KEYS",
     "Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'KEYS'"),
    ("#!lua name=lib2\nlocal y = string.format",
     "Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'"),
    ("#!lua name=lib2\nlocal y = redis.setresp",
     "Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'setresp'"),
    ("#!lua name=lib2\nlocal x = nil + 1",
     "Error registering functions: ERR user_function:2: attempt to perform arithmetic on a nil value"),
    ("#!lua name=lib2\nwhile true do end", "Error registering functions: ERR FUNCTION LOAD timeout"),
    ("#!lua name=lib2\nredis.register_function('f9', function() return 1 end)\n"
     "redis.register_function('f9', function() return 1 end)",
     "Error registering functions: ERR Function already exists in the library"),
    ("#!lua name=lib2\nredis.register_function('f-9', function() return 1 end)",
     "Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
    ("#!lua name=lib2\nredis.register_function{function_name='f9', callback=function() return 1 end, flags={'bad'}}",
     "Error registering functions: ERR unknown flag given"),
    ("#!lua name=lib2\nredis.register_function{function_name='f9', callback=function() return 1 end, flags='no-writes'}",
     "Error registering functions: ERR flags argument to redis.register_function must be a table representing function flags"),
    ("#!lua name=lib2\nredis.register_function{function_name='f9', callback=function() return 1 end, foo=1}",
     "Error registering functions: ERR unknown argument given to redis.register_function"),
    ("#!lua name=lib2\nredis.register_function{function_name='f9'}",
     "Error registering functions: ERR redis.register_function must get a callback argument"),
    ("#!lua name=lib2\nredis.register_function{function_name={}, callback=function() return 1 end}",
     "Error registering functions: ERR function_name argument given to redis.register_function must be a string"),
    ("#!lua name=lib2\nredis.register_function{function_name='y', callback=function() return 1 end, description={}}",
     "Error registering functions: ERR description argument given to redis.register_function must be a string"),
    ("#!lua name=lib2\nredis.register_function{function_name='y', callback=5}",
     "Error registering functions: ERR callback argument given to redis.register_function must be a function"),
    ("#!lua name=lib2\nredis.register_function('f9')",
     "Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
    ("#!lua name=lib2\nredis.register_function('f9', 5)",
     "Error registering functions: ERR second argument to redis.register_function must be a function"),
    ("#!lua name=lib2\nredis.register_function({}, function() return 1 end)",
     "Error registering functions: ERR first argument to redis.register_function must be a string"),
    ("#!lua name=lib2\nredis.register_function()", "Error registering functions: ERR wrong number of arguments to redis.register_function"),
    ("#!lua name=lib2\nlocal r = redis; r.x = 1", "Error registering functions: ERR user_function:2: Attempt to modify a readonly table"),
]


@pytest.mark.parametrize("code,expected", LOAD_ERRORS)
def test_load_errors(f, code, expected):
    assert error_of(f.function_load, code) == expected
    assert f.function_list() == []


def test_load_environment_has_log_and_constants(f):
    f.function_load("#!lua name=env\nredis.log(redis.LOG_NOTICE, 'loading ' .. redis.REDIS_VERSION)\n"
                    "local n = redis.REDIS_VERSION_NUM + redis.LOG_WARNING\n"
                    "redis.register_function('ok', function() return n > 0 end)")
    assert f.fcall("ok", 0) in (1, True)


def test_register_forms(f):
    f.function_load("#!lua name=forms\nredis.register_function(5, function() return 'numbered' end)\n"
                    "redis.register_function{FUNCTION_NAME='Named', CALLBACK=function() return 'named' end, DESCRIPTION=''}\n"
                    "redis.register_function('q', function() return 'lower' end)\n"
                    "redis.register_function('Q', function() return 'upper' end)")
    assert f.fcall("5", 0) == b"numbered"
    assert f.fcall("Named", 0) == b"named"
    assert f.fcall("q", 0) == b"lower" and f.fcall("Q", 0) == b"upper"
    functions = {x["name"]: x for x in listing(f)[0]["functions"]}
    assert functions[b"Named"]["description"] == b""


# ---------------------------------------------------------------- FCALL

RUNTIME = """#!lua name=rt
local function helper() return 'h' end
redis.register_function('keysg', function(keys, args) return KEYS end)
redis.register_function('boom', function(keys, args) return error('boom') end)
redis.register_function('unknown', function(keys, args) return redis.call('nosuch') end)
redis.register_function('custom', function(keys, args) return redis.error_reply('MY bad') end)
redis.register_function('setg', function(keys, args) x = 1 end)
redis.register_function('libs', function(keys, args) return {helper(), type(keys), #args, string.format('%d', 5), cjson.encode({1})} end)
redis.register_function{function_name='ro', callback=function(keys, args) return redis.call('set', 'a', 'b') end, flags={'no-writes'}}
"""


def test_fcall_runtime_errors_and_environment(f):
    f.function_load(RUNTIME)
    assert error_of(f.fcall, "keysg", 0) == (
        "user_function:3: Script attempted to access nonexistent global variable 'KEYS' script: keysg, on @user_function:3.")
    assert error_of(f.fcall, "boom", 0) == "user_function:4: boom script: boom, on @user_function:4."
    assert error_of(f.fcall, "unknown", 0) == "Unknown Redis command called from script script: unknown, on @user_function:5."
    assert error_of(f.fcall, "custom", 0) == "MY bad"
    assert error_of(f.fcall, "setg", 0) == "user_function:7: Attempt to modify a readonly table script: setg, on @user_function:7."
    assert f.fcall("libs", 0, "x") == [b"h", b"table", 1, b"5", b"[1]"]
    assert error_of(f.fcall, "ro", 0) == "Write commands are not allowed from read-only scripts. script: ro, on @user_function:9."
    assert f.get("a") is None


def test_fcall_argument_errors(f):
    f.function_load(LIB)
    assert error_of(f.fcall, "nosuch", 0) == "Function not found"
    assert error_of(f.fcall, "nosuch", "x") == "Function not found"
    assert error_of(f.fcall, "setter", 2, "k") == "Number of keys can't be greater than number of args"
    assert error_of(f.fcall, "setter", -1) == "Number of keys can't be negative"
    assert error_of(f.fcall, "setter", "x") == "Bad number of keys provided"
    assert error_of(f.fcall, "setter", "1.5") == "Bad number of keys provided"
    assert error_of(f.execute_command, "FCALL", "setter") == "wrong number of arguments for 'fcall' command"
    assert error_of(f.fcall_ro, "setter", 1, "k", "v") == "Can not execute a script with write flag using *_ro command."
    assert error_of(f.fcall_ro, "nosuch", 0) == "Function not found"
    assert f.get("k") is None


def test_fcall_inside_multi_commits_with_exec(f):
    f.function_load(LIB)
    with f.pipeline(transaction=True) as tx:
        tx.fcall("setter", 1, "k", "in-multi")
        tx.get("k")
        assert tx.execute()[1] == b"in-multi"


def test_fcall_writes_are_one_batch(f):
    f.function_load("#!lua name=two\nredis.register_function('both', function(keys, args)\n"
                    "redis.call('incr', keys[1]); redis.call('incr', keys[2]); return 1 end)")
    stop = threading.Event()
    torn = []

    def reader():
        c = redis.Redis(connection_pool=f.connection_pool)
        while not stop.is_set():
            a, b = c.mget("x", "y")
            if (a or b"0") != (b or b"0"):
                torn.append((a, b))

    t = threading.Thread(target=reader)
    t.start()
    for _ in range(200):
        f.fcall("both", 2, "x", "y")
    stop.set()
    t.join()
    assert torn == []
    assert f.mget("x", "y") == [b"200", b"200"]


# ---------------------------------------------------------------- DELETE, FLUSH, HELP

def test_delete_and_flush(f):
    f.function_load(lib("one", "a"))
    f.function_load(lib("two", "b"))
    assert f.function_delete("one") in (b"OK", "OK", True)
    assert error_of(f.fcall, "a", 0) == "Function not found"
    assert error_of(f.function_delete, "one") == "Library not found"
    assert error_of(f.execute_command, "FUNCTION", "DELETE") == "wrong number of arguments for 'function|delete' command"
    assert f.function_flush("SYNC")
    assert f.function_list() == []
    f.function_load(lib("three", "c"))
    assert f.function_flush("ASYNC")
    assert f.function_list() == []
    assert error_of(f.execute_command, "FUNCTION", "FLUSH", "foo") == "FUNCTION FLUSH only supports SYNC|ASYNC option"
    assert error_of(f.execute_command, "FUNCTION", "flush", "async", "x") == (
        "unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")


def test_flushall_keeps_functions(f):
    f.function_load(lib("kept", "k1"))
    f.flushall()
    assert f.fcall("k1", 0) == b"kept.k1"


def test_help(f):
    lines = f.execute_command("FUNCTION", "HELP")
    assert lines[0] in (b"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert len(lines) == 40


# ---------------------------------------------------------------- DUMP, RESTORE

# Made by redis-server 7.0.15: FUNCTION DUMP of one library, its code LZF-compressed.
REDIS_PAYLOAD = (b"\xf5\xc3@f@\x86\x13#!lua name=redislib\n`\x08\x18.register_function('from_`\x1d\x02', "
                 b"\xe0\x00\x16\x1akeys, args) return 'made by \x0f S\x00 \xe0\x12\r\x05' end)\n\x00\xdc\xa7\xf3\xc6\xde\xc4Lv")


def test_dump_restore_round_trip_and_policies(f):
    f.function_load(lib("a", "fa"))
    f.function_load(lib("b", "fb"))
    payload = f.function_dump()
    assert payload.startswith(b"\xf5") and payload[-10:-8] == b"\x0a\x00"
    assert error_of(f.function_restore, payload) == "Library a already exists"
    assert f.function_restore(payload, "REPLACE")
    f.function_flush()
    assert f.function_restore(payload)
    assert f.fcall("fa", 0) == b"a.fa" and f.fcall("fb", 0) == b"b.fb"
    f.function_load(lib("c", "fc"))
    assert f.function_restore(payload, "FLUSH")
    assert [e["library_name"] for e in listing(f)] == [b"a", b"b"]
    assert error_of(f.fcall, "fc", 0) == "Function not found"
    f.function_delete("a")
    f.function_load(lib("z", "fa"))
    assert error_of(f.function_restore, payload) == "Library b already exists"
    assert error_of(f.function_restore, payload, "REPLACE") == "Function fa already exists"
    f.function_delete("b")
    assert error_of(f.function_restore, payload) == "Function fa already exists"
    f.function_load(lib("b", "fb"))
    assert [e["library_name"] for e in listing(f)] == [b"b", b"z"], "a refused restore changes nothing"


def test_restore_errors(f):
    payload = f.function_dump()
    assert payload == b"\n\x00]\x9b\\@\x0f\x7f\xa2\xda", "the empty payload is Redis's, byte for byte"
    assert error_of(f.function_restore, b"garbage") == "DUMP payload version or checksum are wrong"
    assert error_of(f.function_restore, payload[:-1] + b"x") == "DUMP payload version or checksum are wrong"
    assert error_of(f.function_restore, payload, "foo") == (
        "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    assert error_of(f.execute_command, "FUNCTION", "RESTORE", payload, "append", "y") == (
        "unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.")


def test_restore_accepts_redis_payload(f):
    assert f.function_restore(REDIS_PAYLOAD)
    assert f.fcall("from_redis", 0) == b"made by redis made by redis made by redis"


def test_redis_server_accepts_cairn_payload(f):
    f.function_load(lib("fromcairn", "made_in_cairn"))
    payload = f.function_dump()
    import shutil
    import subprocess
    import tempfile
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    directory = tempfile.mkdtemp()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--dir", directory],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        other = redis.Redis(port=port)
        for _ in range(100):
            try:
                other.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        assert other.function_restore(payload)
        assert other.fcall("made_in_cairn", 0) == b"fromcairn.made_in_cairn"
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(directory, ignore_errors=True)


# ---------------------------------------------------------------- STATS, KILL, BUSY

def test_stats_idle(f):
    f.function_load(LIB)
    stats = f.function_stats()
    if isinstance(stats, list):
        assert stats == [b"running_script", None, b"engines", [b"LUA", [b"libraries_count", 1, b"functions_count", 3]]]
    else:
        assert stats[b"running_script"] is None
        assert stats[b"engines"] == {b"LUA": {b"libraries_count": 1, b"functions_count": 3}}


def test_kill_a_running_function(fresh_server):
    srv = fresh_server("--set", "busy-reply-threshold=200")
    runner, other = srv.client(), srv.client()
    runner.function_load("#!lua name=loops\n"
                         "redis.register_function{function_name='spin', callback=function() while true do end end, flags={'no-writes'}}\n"
                         "redis.register_function('spinw', function(keys) redis.call('set', keys[1], '1') while true do end end)")
    outcome = {}
    t = threading.Thread(target=lambda: outcome.setdefault("e", error_of(runner.fcall, "spin", 0)))
    t.start()
    time.sleep(0.5)
    assert error_of(other.get, "x") == "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    stats = other.function_stats()
    running = stats[b"running_script"] if isinstance(stats, dict) else stats[1]
    if isinstance(running, list):
        running = dict(zip(running[0::2], running[1::2]))
    assert list(running) == [b"name", b"command", b"duration_ms"]
    assert running[b"name"] == b"spin" and running[b"command"] == [b"FCALL", b"spin", b"0"]
    assert running[b"duration_ms"] >= 200
    assert error_of(other.script_kill) == "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    assert other.function_kill() in (b"OK", "OK", True)
    t.join(10)
    assert outcome["e"] == "Script killed by user with SCRIPT KILL... script: spin, on @user_function:2."
    assert other.ping()
    assert error_of(other.function_kill) == "NOTBUSY No scripts in execution right now."

    # An EVAL is ended by SCRIPT KILL only, and FUNCTION STATS answers BUSY meanwhile.
    outcome.clear()
    t = threading.Thread(target=lambda: outcome.setdefault("e", error_of(runner.eval, "while true do end", 0)))
    t.start()
    time.sleep(0.5)
    assert error_of(other.function_stats) == "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    assert error_of(other.function_kill) == "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    assert other.script_kill()
    t.join(10)
    assert outcome["e"].startswith("Script killed by user with SCRIPT KILL...")

    # A function that wrote cannot be killed.
    t = threading.Thread(target=lambda: outcome.setdefault("w", error_of(runner.fcall, "spinw", 1, "w")))
    t.daemon = True
    t.start()
    time.sleep(0.5)
    assert error_of(other.function_kill).startswith("UNKILLABLE Sorry the script already executed write commands")
    srv.stop(signal.SIGKILL)


# ---------------------------------------------------------------- persistence

def test_libraries_survive_restart_and_kill_9(fresh_server):
    srv = fresh_server()
    c = srv.client()
    c.function_load(LIB)
    c.function_load(lib("second", "s1"))
    srv.restart()
    c = srv.client()
    assert c.fcall("setter", 1, "k", "v") in (b"OK", "OK", True)
    assert c.fcall("s1", 0) == b"second.s1"
    assert [e["library_name"] for e in listing(c, withcode=True)] == [b"mylib", b"second"]
    c.function_delete("second")
    c.function_load(lib("third", "t1"))
    srv.stop(signal.SIGKILL)
    srv.start()
    c = srv.client()
    assert [e["library_name"] for e in listing(c)] == [b"mylib", b"third"]
    assert c.fcall("t1", 0) == b"third.t1"
    c.function_flush()
    srv.stop(signal.SIGKILL)
    srv.start()
    c = srv.client()
    assert c.function_list() == []
    c.function_restore(REDIS_PAYLOAD)
    srv.stop(signal.SIGKILL)
    srv.start()
    assert srv.client().fcall("from_redis", 0) == b"made by redis made by redis made by redis"


# ---------------------------------------------------------------- MONITOR

MONITOR_LINE = re.compile(rb"^\+(\d+)\.(\d{6}) \[0 ([^\]]+)\] (.*)$")


def monitor_lines(port, count, action):
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(resp_command("MONITOR"))
        buffer = b""
        while b"\r\n" not in buffer:
            buffer += sock.recv(65536)
        assert buffer.startswith(b"+OK\r\n")
        buffer = buffer[5:]
        action()
        sock.settimeout(5)
        while buffer.count(b"\r\n") < count:
            buffer += sock.recv(65536)
    lines = buffer.split(b"\r\n")[:count]
    out = []
    for line in lines:
        m = MONITOR_LINE.match(line)
        assert m, line
        out.append((m.group(3), m.group(4)))
    return out


def test_monitor_shows_script_commands_as_lua(server, f):
    f.function_load("#!lua name=mon\nredis.register_function('mf', function(k) return redis.call('get', k[1]) end)")

    def act():
        f.eval("redis.call('set', KEYS[1], 'v'); return redis.call('get', KEYS[1])", 1, "k")
        f.fcall("mf", 1, "k")
        f.echo("after")

    seen = monitor_lines(server.port, 6, act)
    assert [line for _, line in seen] == [
        b'"EVAL" "redis.call(\'set\', KEYS[1], \'v\'); return redis.call(\'get\', KEYS[1])" "1" "k"',
        b'"set" "k" "v"',
        b'"get" "k"',
        b'"FCALL" "mf" "1" "k"',
        b'"get" "k"',
        b'"ECHO" "after"',
    ]
    addresses = [a for a, _ in seen]
    assert addresses[1] == addresses[2] == addresses[4] == b"lua"
    assert addresses[0] != b"lua" and addresses[0] == addresses[3] == addresses[5]
