"""Real Redis tools against cairnd: redis-cli and redis-benchmark; and shutdown behaviour."""
import os
import signal
import subprocess
import time


def cli(server, *args, stdin=None):
    return subprocess.run(["redis-cli", "-p", str(server.port), *args], input=stdin,
                          capture_output=True, timeout=60)


def test_redis_cli_one_shot_and_pipe(server):
    assert cli(server, "SET", "cli", "works").stdout.strip() == b"OK"
    assert cli(server, "GET", "cli").stdout.strip() == b"works"
    assert cli(server, "INCR", "cli:n").stdout.strip() == b"1"
    out = cli(server, stdin=b"SET p1 a\nSET p2 b\nMGET p1 p2\n").stdout
    assert out.split() == [b"OK", b"OK", b"a", b"b"]
    proto = b"".join(b"*3\r\n$3\r\nSET\r\n$6\r\nbulk%d\r\n$1\r\nx\r\n" % i for i in range(10, 100))
    piped = cli(server, "--pipe", stdin=proto)
    assert b"errors: 0, replies: 90" in piped.stdout
    assert cli(server, "DBSIZE").stdout.strip() != b"0"
    err = cli(server, "NOSUCH")
    assert b"ERR unknown command" in err.stdout


def test_redis_cli_command_docs(server):
    out = cli(server, "COMMAND", "DOCS", "set").stdout
    assert b"summary" in out


# Every test redis-benchmark 7.0 runs by default, by the name it prints.
DEFAULT_TESTS = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD",
                 "HSET", "SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)",
                 "LRANGE_100 (first 100 elements)", "LRANGE_300 (first 300 elements)",
                 "LRANGE_500 (first 500 elements)", "LRANGE_600 (first 600 elements)", "MSET (10 keys)"]


def run_benchmark(server, *extra, requests=100000, names=DEFAULT_TESTS):
    out = subprocess.run(
        ["redis-benchmark", "-p", str(server.port), "-n", str(requests), "-c", "50", "-q", *extra],
        capture_output=True, timeout=900)
    text = out.stdout.decode() + out.stderr.decode()
    assert out.returncode == 0, text
    finals = [line.split("\r")[-1] for line in text.splitlines() if "requests per second" in line]
    for name in names:
        assert any(line.strip().startswith(name + ":") for line in finals), (name, text[-2000:])
    assert "ERR" not in text and "error" not in text.lower(), text[-2000:]


def test_redis_benchmark_default_set(server):
    """redis-benchmark with no -t runs its whole default set, the data types included."""
    run_benchmark(server)


def test_redis_benchmark_pipelined(server):
    run_benchmark(server, "-P", "16", "-t", "ping,set,get,incr,mset,lpush,lpop,sadd,hset,zadd,zpopmin,lrange_100",
                  names=["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "LPOP", "SADD", "HSET", "ZADD",
                         "ZPOPMIN", "LRANGE_100 (first 100 elements)", "MSET (10 keys)"])


def test_sigterm_exits_zero_fast_and_data_survives(fresh_server):
    s = fresh_server()
    c = s.client()
    with c.pipeline(transaction=False) as p:
        for i in range(20000):
            p.set(f"k{i}", f"v{i}")
        p.execute()
    c.close()
    start = time.time()
    assert s.stop(signal.SIGTERM) == 0
    assert time.time() - start < 1.0
    s.start()
    c = s.client()
    assert c.dbsize() == 20000
    assert all(c.get(f"k{i}") == f"v{i}".encode() for i in range(0, 20000, 97))


def test_shutdown_command(fresh_server):
    s = fresh_server()
    c = s.client()
    c.set("x", 1)
    try:
        c.shutdown()
    except Exception:
        pass
    assert s.process.wait(10) == 0


def test_port_in_use_is_a_clear_error(server):
    out = subprocess.run([os.environ.get("CAIRND", "cairnd"), "--port", str(server.port), "--dir", "/tmp/cairn-port-test"],
                         capture_output=True, timeout=30)
    assert out.returncode != 0
    assert b"cannot listen" in out.stderr and b"Address already in use" in out.stderr
