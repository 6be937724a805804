"""Lua scripting through redis-py, RESP2 and RESP3, against the real cairnd: EVAL, EVALSHA,
EVAL_RO, EVALSHA_RO, SCRIPT, Redis's conversions and error texts (as redis-server 7.0 gives
them), the sandbox, atomicity (one write batch per script), redis-py's Lock, a rate limiter,
BUSY and SCRIPT KILL."""
import hashlib
import signal
import threading
import time

import pytest
import redis
from redis.exceptions import LockError, LockNotOwnedError, NoScriptError, ResponseError


def sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


def error_of(fn, *args):
    with pytest.raises(ResponseError) as e:
        fn(*args)
    return str(e.value)


def script_error(r, script, *args, numkeys=0):
    return error_of(r.eval, script, numkeys, *args)


def suffix(script, line=1):
    return f" script: {sha1(script)}, on @user_script:{line}."


# ---------------------------------------------------------------- conversions

def test_keys_argv_and_lua_to_reply(r):
    assert r.eval("return {KEYS[1], KEYS[2], ARGV[1], #KEYS, #ARGV}", 2, "a", "b", "x") == [b"a", b"b", b"x", 2, 1]
    assert r.eval("return {1, 2, {3, 'x'}, nil, 5}", 0) == [1, 2, [3, b"x"]], "an array stops at the first nil"
    assert r.eval("return 3.99", 0) == 3, "numbers are truncated to integers"
    assert r.eval("return -3.5", 0) == -3
    assert r.eval("return 'text'", 0) == b"text"
    assert r.eval("return true", 0) == 1
    assert r.eval("return false", 0) is None
    assert r.eval("return nil", 0) is None
    assert r.eval("return redis.status_reply('FINE')", 0) in (b"FINE", "FINE", True)
    assert r.eval("return {ok='a\\r\\nb'}", 0) in (b"a  b", "a  b")
    assert r.eval("return {double=3.5}", 0) in (b"3.5", 3.5)
    assert r.eval("return {map={a=1}}", 0) in ([b"a", 1], {b"a": 1})
    assert r.eval("return {set={a=true}}", 0) in ([b"a"], {b"a"})
    assert r.eval("return {verbatim_string={format='txt', string='hello'}}", 0) in (b"hello", "hello")


def test_booleans_follow_setresp(r):
    resp3 = r.get_connection_kwargs().get("protocol") == 3
    got_true = r.eval("redis.setresp(3); return true", 0)
    got_false = r.eval("redis.setresp(3); return false", 0)
    if resp3:
        assert got_true is True and got_false is False
    else:
        assert got_true == 1 and got_false == 0


def test_replies_to_lua(r):
    r.set("s", "v")
    assert r.eval("return type(redis.call('get', 'nokey'))", 0) == b"boolean", "RESP2 null is false"
    assert r.eval("redis.setresp(3); return type(redis.call('get', 'nokey'))", 0) == b"nil", "RESP3 null is nil"
    assert r.eval("return redis.call('set', 'k', 'v')['ok']", 0) == b"OK", "a status is {ok=...}"
    assert r.eval("return redis.pcall('incr', 's')['err']", 0) == b"ERR value is not an integer or out of range"
    assert r.eval("return redis.call('incr', 'n') + 1", 0) == 2, "integers are numbers"
    r.mset({"m1": "1", "m2": "2"})
    assert r.eval("local t = redis.call('mget', 'm1', 'm2', 'm3'); return {#t, t[1], t[2], type(t[3])}", 0) == [
        3, b"1", b"2", b"boolean"]
    assert r.eval("return redis.call('set', 'n', 3.5)", 0) in (b"OK", "OK", True)
    assert r.get("n") == b"3.5", "numbers pass as Lua prints them"
    assert r.eval("return redis.call('set', 'n', 12345678901234)", 0) in (b"OK", "OK", True)
    assert r.get("n") == b"12345678901234"


def test_redis_library(r):
    assert r.eval("return redis.sha1hex('')", 0) == b"da39a3ee5e6b4b0d3255bfef95601890afd80709"
    assert r.eval("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", 0) == [0, 1, 2, 3]
    assert r.eval("return redis.log(redis.LOG_WARNING, 'from a script')", 0) is None
    assert r.eval("return cjson.encode({a=1})", 0) == b'{"a":1}'
    assert r.eval("return cjson.decode('[1,2]')", 0) == [1, 2]
    assert r.eval("return bit.band(7, 3)", 0) == 3
    assert r.eval("return loadstring('return 1')()", 0) == 1


# ---------------------------------------------------------------- errors (Redis 7.0's texts)

def test_script_errors(r):
    r.set("s", "abc")
    s = "return x"
    assert script_error(r, s) == "user_script:1: Script attempted to access nonexistent global variable 'x'" + suffix(s)
    s = "x = 1"
    assert script_error(r, s) == "user_script:1: Attempt to modify a readonly table" + suffix(s)
    s = "return redis.call('incr','s')"
    assert script_error(r, s) == "value is not an integer or out of range" + suffix(s)
    assert script_error(r, "return redis.pcall('incr','s')") == "value is not an integer or out of range"
    s = "return redis.call('nosuch')"
    assert script_error(r, s) == "Unknown Redis command called from script" + suffix(s)
    s = "return redis.call()"
    assert script_error(r, s) == "Please specify at least one argument for this redis lib call" + suffix(s)
    s = "return redis.call('get')"
    assert script_error(r, s) == "Wrong number of args calling Redis command from script" + suffix(s)
    s = "return redis.call('get', {})"
    assert script_error(r, s) == "Lua redis lib command arguments must be strings or integers" + suffix(s)
    s = "error('boom')"
    assert script_error(r, s) == "user_script:1: boom" + suffix(s)
    s = "local a = 1\nlocal f = function() error('deep') end\nf()"
    assert script_error(r, s) == "user_script:2: deep" + suffix(s, 2)
    s = "error({err='MY thing'})"
    assert script_error(r, s) == "MY thing" + suffix(s)
    assert script_error(r, "return redis.error_reply('MY err')") == "MY err"
    assert script_error(r, "return redis.error_reply('noprefix')") == "noprefix"
    assert script_error(r, "return {err='noprefix'}") == "noprefix"
    s = "redis.setresp(4)"
    assert script_error(r, s) == "RESP version must be 2 or 3." + suffix(s)
    s = "return redis.log()"
    assert script_error(r, s) == "redis.log() requires two arguments or more." + suffix(s)
    s = "return redis.sha1hex()"
    assert script_error(r, s) == "wrong number of arguments" + suffix(s)
    assert script_error(r, "syntax error here") == \
        "Error compiling script (new function): user_script:1: '=' expected near 'error'"


def test_eval_argument_errors(r):
    assert error_of(r.execute_command, "EVAL", "return 1", "-1") == "Number of keys can't be negative"
    assert error_of(r.execute_command, "EVAL", "return 1", "2", "a") == "Number of keys can't be greater than number of args"
    assert error_of(r.execute_command, "EVAL", "return 1", "x") == "value is not an integer or out of range"
    assert error_of(r.execute_command, "EVAL", "return 1") == "wrong number of arguments for 'eval' command"


def test_commands_refused_in_scripts(r):
    for call in ("'multi'", "'exec'", "'watch', 'x'", "'eval', 'return 1', '0'", "'script', 'flush'",
                 "'cf.create', 'x'", "'backup.create'"):
        s = f"return redis.call({call})"
        assert script_error(r, s) == "This Redis command is not allowed from script" + suffix(s), call


def test_sandbox(r):
    for name in ("os", "io", "loadfile", "dofile", "load", "debug", "require", "package", "print"):
        s = f"return {name}"
        assert script_error(r, s) == \
            f"user_script:1: Script attempted to access nonexistent global variable '{name}'" + suffix(s), name
    s = "string.foo = 1"
    assert script_error(r, s) == "user_script:1: Attempt to modify a readonly table" + suffix(s)
    s = "rawset(_G, 'x', 1)"
    assert script_error(r, s) == "Attempt to modify a readonly table" + suffix(s)
    s = "setmetatable(_G, nil)"
    assert script_error(r, s) == "Attempt to modify a readonly table" + suffix(s)
    s = "redis.call = nil"
    assert script_error(r, s) == "user_script:1: Attempt to modify a readonly table" + suffix(s)
    assert r.eval("return loadstring(string.dump(function() return 1 end)) == nil", 0) == 1, "no bytecode"
    # Nothing leaks between scripts: a local stays local, and globals cannot be made.
    assert r.eval("local x = 5 return x", 0) == 5
    s = "return x"
    assert script_error(r, s).startswith("user_script:1: Script attempted to access nonexistent global variable 'x'")


def test_memory_is_bounded(r):
    s = "local t = {} local s = string.rep('x', 1024 * 1024) for i = 1, 1000 do t[i] = s .. i end return #t"
    message = script_error(r, s)
    assert "not enough memory" in message
    assert r.eval("return 1", 0) == 1, "the next script runs"


# ---------------------------------------------------------------- EVALSHA, EVAL_RO, SCRIPT

def test_evalsha_and_script_cache(r):
    r.script_flush()
    body = "return ARGV[1] .. '!'"
    digest = sha1(body)
    assert error_of(r.evalsha, digest, 0, "x") == "No matching script. Please use EVAL."
    assert error_of(r.evalsha, "abc", 0) == "No matching script. Please use EVAL."
    assert r.script_exists(digest, "nope") == [False, False]
    assert r.script_load(body) == digest
    assert r.script_exists(digest, "nope") == [True, False]
    assert r.evalsha(digest, 0, "hi") == b"hi!"
    assert r.evalsha(digest.upper(), 0, "up") == b"up!", "a SHA1 in any case"
    other = "return 2"
    assert r.eval(other, 0) == 2
    assert r.script_exists(sha1(other)) == [True], "EVAL caches what it ran"
    assert r.script_flush() is True
    assert r.script_exists(digest, sha1(other)) == [False, False]
    assert r.execute_command("SCRIPT", "FLUSH", "ASYNC") in (b"OK", True)
    assert error_of(r.execute_command, "SCRIPT", "FLUSH", "bogus") == "SCRIPT FLUSH only support SYNC|ASYNC option"
    assert error_of(r.execute_command, "SCRIPT", "LOAD", "bad bad") == \
        "Error compiling script (new function): user_script:1: '=' expected near 'bad'"
    assert error_of(r.execute_command, "SCRIPT", "KILL") == "NOTBUSY No scripts in execution right now."
    assert error_of(r.execute_command, "SCRIPT", "foo") == "unknown subcommand 'foo'. Try SCRIPT HELP."
    assert error_of(r.execute_command, "SCRIPT", "EXISTS") == "wrong number of arguments for 'script|exists' command"


def test_read_only_scripts(r):
    s = "return redis.call('set', 'a', 'b')"
    assert error_of(r.eval_ro, s, 0) == "Write commands are not allowed from read-only scripts." + suffix(s)
    r.set("a", "1")
    assert r.eval_ro("return redis.call('get', KEYS[1])", 1, "a") == b"1"
    r.script_load(s)
    assert error_of(r.evalsha_ro, sha1(s), 0).startswith("Write commands are not allowed from read-only scripts.")
    flagged = "#!lua flags=no-writes\nreturn redis.call('set', 'a', 'b')"
    assert error_of(r.eval, flagged, 0).startswith("Write commands are not allowed from read-only scripts.")
    assert r.eval("#!lua\nreturn 7", 0) == 7
    assert error_of(r.eval, "#!lua flags=bogus\nreturn 1", 0) == "Unexpected flag in script shebang: bogus"
    assert r.get("a") == b"1"


# ---------------------------------------------------------------- atomicity and locks

def test_script_reads_its_own_writes(r):
    s = """
    redis.call('set', KEYS[1], 'one')
    local first = redis.call('get', KEYS[1])
    redis.call('append', KEYS[1], '+two')
    redis.call('del', KEYS[2])
    return {first, redis.call('get', KEYS[1]), redis.call('exists', KEYS[2])}
    """
    r.set("gone", "x")
    assert r.eval(s, 2, "k", "gone") == [b"one", b"one+two", 0]
    assert r.get("k") == b"one+two" and r.exists("gone") == 0


def test_writes_before_an_error_stay(r):
    s = "redis.call('set', KEYS[1], 'kept') error('late')"
    assert script_error(r, s, "k", numkeys=1).startswith("user_script:1: late")
    assert r.get("k") == b"kept", "as in Redis, a script error does not undo earlier writes"


def test_undeclared_keys_and_cf_use(r):
    r.set("elsewhere", "5")
    assert r.eval("return redis.call('incr', 'elsewhere')", 0) == 6
    assert r.eval("redis.call('set', KEYS[1], 'a') return redis.call('incr', 'elsewhere')", 1, "declared") == 7
    assert r.get("declared") == b"a", "a retried run leaves its first attempt's writes nowhere but once"
    r.set("k1", "1")
    assert r.eval("return #redis.call('keys', 'k*')", 0) >= 1
    assert r.eval("redis.call('flushdb') return redis.call('get', 'k1')", 0) is None
    assert r.dbsize() == 0


def test_script_inside_multi(r):
    r.set("c", "1")
    with r.pipeline(transaction=True) as p:
        p.incr("c")
        p.eval("return redis.call('incr', KEYS[1])", 1, "c")
        p.get("c")
        assert p.execute() == [2, 3, b"3"]


def test_script_write_fires_watch(server):
    a, b = server.client(), server.client()
    a.set("w", "0")
    with a.pipeline(transaction=True) as p:
        p.watch("w")
        b.eval("return redis.call('incr', KEYS[1])", 1, "w")
        p.multi()
        p.set("w", "mine")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert a.get("w") == b"1"


def test_two_keys_change_together_under_readers(server):
    writer = server.client()
    writer.mset({"pair:a": 0, "pair:b": 0})
    script = writer.register_script(
        "redis.call('incr', KEYS[1]) redis.call('incr', KEYS[2]) return 1")
    stop = threading.Event()
    torn = []

    def read():
        c = server.client()
        while not stop.is_set():
            a, b = c.mget("pair:a", "pair:b")
            if a != b:
                torn.append((a, b))
            a, b = int(c.get("pair:a")), int(c.get("pair:b"))
            if b < a:
                torn.append(("get", a, b))

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    for _ in range(300):
        script(keys=["pair:a", "pair:b"])
    stop.set()
    for t in readers:
        t.join()
    assert torn == [], "a reader saw one key incremented without the other"
    assert writer.mget("pair:a", "pair:b") == [b"300", b"300"]


def test_concurrent_scripts_exact_counts(server):
    def work(i):
        c = server.client()
        for _ in range(100):
            c.eval("local v = tonumber(redis.call('get', KEYS[1]) or '0') redis.call('set', KEYS[1], v + 1) "
                   "return redis.call('incr', 'undeclared:total')", 1, "counted")

    server.client().delete("counted", "undeclared:total")
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = server.client()
    assert c.get("counted") == b"800", "read-modify-write in a script is atomic"
    assert c.get("undeclared:total") == b"800"


def test_redis_py_lock(server):
    c = server.client()
    c.delete("lock:job", "lock:count")
    lock = c.lock("lock:job", timeout=10)
    assert lock.acquire(blocking=False)
    assert c.pttl("lock:job") > 9000
    assert lock.extend(20)
    assert c.pttl("lock:job") > 25000
    assert lock.reacquire()
    assert 9000 < c.pttl("lock:job") <= 10000, "reacquire resets the timeout"
    other = c.lock("lock:job", timeout=10)
    assert not other.acquire(blocking=False)
    started = time.time()
    assert not other.acquire(blocking=True, blocking_timeout=0.3)
    assert time.time() - started >= 0.15, "a blocking acquire polls until (about) its timeout"
    lock.release()
    assert c.exists("lock:job") == 0
    with pytest.raises(LockError):
        lock.release()
    # A lock whose key another client took: release and extend are refused by the scripts.
    stolen = c.lock("lock:job", timeout=10)
    assert stolen.acquire(blocking=False)
    c.set("lock:job", "someone else")
    with pytest.raises(LockNotOwnedError):
        stolen.extend(5)
    with pytest.raises(LockNotOwnedError):
        stolen.reacquire()
    with pytest.raises(LockNotOwnedError):
        stolen.release()
    assert c.get("lock:job") == b"someone else"
    c.delete("lock:job")

    counter = {"value": 0, "inside": 0, "overlap": 0}

    def worker():
        mine = server.client()
        for _ in range(25):
            with mine.lock("lock:job", timeout=5, blocking_timeout=30, sleep=0.001):
                counter["inside"] += 1
                if counter["inside"] > 1:
                    counter["overlap"] += 1
                v = counter["value"]
                time.sleep(0.0005)
                counter["value"] = v + 1
                mine.incr("lock:count")
                counter["inside"] -= 1

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter["overlap"] == 0, "two holders at once"
    assert counter["value"] == 200 and c.get("lock:count") == b"200"
    assert c.exists("lock:job") == 0


RATE_LIMITER = """
-- A sliding window over two fixed windows: the previous window's count, weighted by how much
-- of it still overlaps the sliding window, plus the current one.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local current = math.floor(now / window)
local elapsed = (now % window) / window
local here = KEYS[1] .. ':' .. current
local before = tonumber(redis.call('get', KEYS[1] .. ':' .. (current - 1)) or '0')
local count = tonumber(redis.call('get', here) or '0')
if before * (1 - elapsed) + count >= limit then
  return 0
end
redis.call('incr', here)
redis.call('pexpire', here, window * 2)
return 1
"""


def test_sliding_window_rate_limiter(server):
    c = server.client()
    limiter = c.register_script(RATE_LIMITER)
    window = 1_000_000  # ms: a window no test run crosses at its start
    now = (int(time.time() * 1000) // window) * window + 1
    allowed = []

    def clients():
        mine = server.client()
        limit = mine.register_script(RATE_LIMITER)
        for _ in range(40):
            allowed.append(limit(keys=["rl:user"], args=[now, window, 50]))

    threads = [threading.Thread(target=clients) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(allowed) == 50 and len(allowed) == 240, "exactly the limit is let through"
    assert c.get(f"rl:user:{now // window}") == b"50"
    # Half-way through the next window, half of the previous window's 50 still counts.
    later = now - 1 + window + window // 2
    got = [limiter(keys=["rl:user"], args=[later, window, 50]) for _ in range(40)]
    assert sum(got) == 25


# ---------------------------------------------------------------- BUSY, SCRIPT KILL, crashes

def test_runaway_script_busy_and_kill(fresh_server):
    srv = fresh_server("--set", "busy-reply-threshold=300")
    runner, other = srv.client(), srv.client()
    other.set("before", "1")
    outcome = {}

    def runaway():
        try:
            runner.eval("local i = 0 while true do i = i + 1 end", 0)
        except ResponseError as e:
            outcome["error"] = str(e)

    t = threading.Thread(target=runaway)
    t.start()
    time.sleep(0.1)
    assert other.get("before") == b"1", "before the threshold others are served"
    time.sleep(0.5)
    with pytest.raises(ResponseError) as e:
        other.get("before")
    assert "Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." in str(e.value)
    assert other.execute_command("SCRIPT", "KILL") in (b"OK", True)
    t.join(10)
    assert not t.is_alive()
    assert outcome["error"] == "Script killed by user with SCRIPT KILL..." + suffix("local i = 0 while true do i = i + 1 end")
    assert other.ping() is True
    assert other.get("before") == b"1"
    assert runner.eval("return 'alive'", 0) == b"alive"


def test_writing_script_is_unkillable_and_shutdown_drops_it(fresh_server):
    srv = fresh_server("--set", "lua-time-limit=200")
    runner, other = srv.client(), srv.client()

    def runaway():
        try:
            runner.eval("redis.call('set', 'half', 'done') while true do end", 0)
        except (ResponseError, redis.ConnectionError):
            pass

    t = threading.Thread(target=runaway)
    t.start()
    time.sleep(0.6)
    assert error_of(other.execute_command, "SCRIPT", "KILL").startswith(
        "UNKILLABLE Sorry the script already executed write commands against the dataset.")
    with pytest.raises(ResponseError):
        other.get("half")
    assert srv.stop(signal.SIGTERM) == 0, "SHUTDOWN-like stop ends the script"
    t.join(10)
    srv.start()
    assert srv.client().exists("half") == 0, "a script stopped by shutdown leaves nothing"


def test_kill_9_mid_script_leaves_none(fresh_server):
    srv = fresh_server()
    runner = srv.client()
    body = "for i = 1, 500 do redis.call('set', 'crash:' .. i, i) end while true do end"

    def run():
        try:
            runner.eval(body, 0)
        except redis.ConnectionError:
            pass

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.5)
    srv.stop(signal.SIGKILL)
    t.join(10)
    srv.start()
    assert srv.client().keys("crash:*") == [], "all or nothing: the batch never committed"
