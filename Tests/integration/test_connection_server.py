"""Connection and server commands: HELLO, AUTH, CLIENT, INFO, CONFIG, COMMAND, TIME."""
import signal
import socket
import time

import pytest
import redis


def test_ping_echo_select(r):
    assert r.ping() is True
    assert r.echo("hi") == b"hi"
    assert r.execute_command("SELECT", 0) in (b"OK", "OK", True)
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r.execute_command("SELECT", 1)


def test_hello_reply(server):
    c = server.client(protocol=3)
    reply = c.execute_command("HELLO", 3)
    assert reply[b"proto"] == 3
    assert reply[b"server"] == b"redis"
    c2 = server.client(protocol=2)
    flat = c2.execute_command("HELLO", 2)
    assert b"proto" in flat
    with pytest.raises(redis.ResponseError, match="NOPROTO"):
        c2.execute_command("HELLO", 4)


def test_client_commands(server):
    c = server.client()
    c.client_setname("worker-1")
    assert c.client_getname() in ("worker-1", b"worker-1")
    cid = c.client_id()
    listing = c.client_list()
    me = [x for x in listing if int(x["id"]) == cid]
    assert me and me[0]["name"] == "worker-1" and ":" in me[0]["addr"]
    with pytest.raises(redis.ResponseError, match="Client names cannot contain spaces"):
        c.client_setname("a b")
    victim = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    victim.sendall(b"CLIENT ID\r\n")
    vid = int(victim.recv(100).strip()[1:])
    assert c.client_kill_filter(_id=vid) == 1
    assert victim.recv(100) == b"", "a killed client's socket is closed"
    assert c.ping() is True


def test_info_and_config(r):
    info = r.info()
    assert "redis_version" in info and "connected_clients" in info
    assert "cairn_version" in info
    rocks = r.info("rocksdb")
    assert "estimate_num_keys" in rocks
    assert r.config_get("save") == {"save": ""} or r.config_get("save") == {b"save": b""}
    appendonly = r.config_get("appendonly")
    assert list(appendonly.values())[0] in ("yes", b"yes")
    assert r.config_set("timeout", 0) is True
    # Started with --port 0: CONFIG GET answers the port it really listens on.
    port = r.connection_pool.connection_kwargs["port"]
    assert list(r.config_get("port").values())[0] in (str(port), str(port).encode())
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        r.config_set("port", 1)


def test_row_cache_serves_reads_from_table_files(fresh_server):
    s = fresh_server("--set", "row-cache-size=8mb")
    c = s.client(decode_responses=True)
    assert c.config_get("row-cache-size") == {"row-cache-size": "8388608"}
    c.mset({f"row:{i}": f"value-{i}" for i in range(2000)})
    c.execute_command("COMPACT")  # flushes the memtables: reads now come from table files
    assert c.info("memory")["rocksdb_row_cache_usage"] == 0
    assert c.mget([f"row:{i}" for i in range(0, 2000, 7)]) == [f"value-{i}" for i in range(0, 2000, 7)]
    memory = c.info("memory")
    assert memory["rocksdb_row_cache_capacity"] == 8388608
    assert memory["rocksdb_row_cache_usage"] > 0
    c.set("row:7", "changed")
    assert c.get("row:7") == "changed"
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        c.config_set("row-cache-size", 0)


def test_command_table(r):
    assert r.command_count() > 60
    info = r.execute_command("COMMAND", "INFO", "get")
    assert info
    # redis-py parses every COMMAND reply as COMMAND INFO, so read DOCS raw.
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command("COMMAND", "DOCS", "get")
        docs = conn.read_response()
    finally:
        r.connection_pool.release(conn)
    flat = docs if isinstance(docs, list) else [x for kv in docs.items() for x in kv]
    assert flat[0] == b"get"
    assert b"summary" in (flat[1] if isinstance(flat[1], list) else list(flat[1].keys()))


def test_config_and_command_help(r):
    """Their "Try CONFIG HELP." / "Try COMMAND HELP." errors point somewhere: Redis's texts."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command("CONFIG", "HELP")
        config = conn.read_response()
        conn.send_command("COMMAND", "HELP")
        command = conn.read_response()
    finally:
        r.connection_pool.release(conn)
    assert config == [b"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                      b"GET <pattern>",
                      b"    Return parameters matching the glob-like <pattern> and their values.",
                      b"SET <directive> <value>", b"    Set the configuration <directive> to <value>.",
                      b"RESETSTAT", b"    Reset statistics reported by the INFO command.",
                      b"REWRITE", b"    Rewrite the configuration file.",
                      b"HELP", b"    Prints this help."]
    # Redis's 21 lines, GETKEYSANDFLAGS included.
    assert len(command) == 21 and command[0].startswith(b"COMMAND <subcommand>")
    assert b"GETKEYSANDFLAGS <full-command>" in command
    assert b"GETKEYS <full-command>" in command and command[-2:] == [b"HELP", b"    Prints this help."]
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'config\|help' command$"):
        r.execute_command("CONFIG", "HELP", "x")
    with pytest.raises(redis.ResponseError, match=r"^unknown subcommand 'NOPE'. Try CONFIG HELP.$"):
        r.execute_command("CONFIG", "NOPE")


def test_time(r):
    seconds, micros = r.time()
    assert seconds > 1_600_000_000 and 0 <= micros < 1_000_000


def test_requirepass(fresh_server):
    s = fresh_server("--requirepass", "s3cret")
    c = s.client(protocol=2)
    with pytest.raises(redis.AuthenticationError):
        c.get("a")
    bad = s.client(protocol=2, password="wrong")
    with pytest.raises(redis.AuthenticationError):
        bad.ping()
    good = s.client(password="s3cret")
    assert good.ping() is True
    good3 = s.client(password="s3cret", protocol=3)
    assert good3.set("a", 1) is True


def test_transactions(r):
    with r.pipeline() as p:
        p.set("a", 1).incr("a").get("a")
        assert p.execute() == [True, 2, b"2"]
    r.set("w", 1)
    with r.pipeline() as p:
        p.watch("w")
        r.set("w", 2)
        p.multi()
        p.set("w", 3)
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("w") == b"2"


def test_sighup_does_not_stop_the_server(fresh_server):
    # As redis-server: a hang-up (a closed terminal, an ended ssh session) leaves it serving.
    s = fresh_server()
    c = s.client()
    c.set("k", "v")
    s.process.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    assert s.process.poll() is None
    assert c.get("k") == b"v"


def test_collection_writes_of_many_clients_batched_together_stay_exact(server):
    """Forty clients pipeline HINCRBY, LPUSH, SADD and ZINCRBY on the same four keys at once: the
    server runs the collection writes of every client of a poller round as one transaction and
    one write batch. Every reply is its own client's, and the totals are exact. One client's
    WRONGTYPE leaves the others' writes alone."""
    import threading
    c = server.client()
    c.delete("hot:h", "hot:l", "hot:s", "hot:z", "hot:str")
    c.set("hot:str", "not a hash")
    clients, rounds, depth = 40, 10, 16
    errors = []

    def work(n):
        try:
            cl = server.client()
            for r in range(rounds):
                p = cl.pipeline(transaction=False)
                for i in range(depth):
                    p.hincrby("hot:h", "count", 1)
                    p.lpush("hot:l", f"{n}:{r}:{i}")
                    p.sadd("hot:s", f"{n}:{r}:{i}")
                    p.zincrby("hot:z", 1, f"member{n % 4}")
                if n == 0:
                    p.hset("hot:str", "f", "v")  # WRONGTYPE, in the same round as the others
                out = p.execute(raise_on_error=False)
                counts = out[0:4 * depth:4]
                # HINCRBY replies grow within one client's pipeline: its own writes run in order.
                assert all(b > a for a, b in zip(counts, counts[1:])), counts
                assert out[2:4 * depth:4] == [1] * depth  # each SADD member is new
                if n == 0:
                    assert isinstance(out[-1], redis.ResponseError) and "WRONGTYPE" in str(out[-1])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    total = clients * rounds * depth
    assert int(c.hget("hot:h", "count")) == total
    assert c.llen("hot:l") == total
    assert c.scard("hot:s") == total
    assert sum(score for _, score in c.zrange("hot:z", 0, -1, withscores=True)) == total
    assert c.get("hot:str") == b"not a hash"
