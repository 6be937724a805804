"""Pub/sub against the real cairnd: redis-py's PubSub over RESP2 and RESP3, Redis's replies and
errors, patterns, PUBSUB introspection, and a subscriber that stops reading."""
import socket
import time

import pytest
import redis

from conftest import resp_command


def messages(p, n, timeout=5):
    out = []
    deadline = time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = p.get_message(timeout=0.2)
        if m and m["type"] in ("message", "pmessage"):
            out.append(m)
    return out


def test_publish_reaches_channel_and_pattern_subscribers(r, server):
    p = r.pubsub()
    p.subscribe("news", "sport")
    p.psubscribe("n*")
    for _ in range(3):
        p.get_message(timeout=1)  # the three confirmations
    publisher = server.client()
    assert publisher.publish("news", "hello") == 2, "one channel subscriber and one pattern"
    assert publisher.publish("sport", "goal") == 1
    assert publisher.publish("nothing-here", "x") == 1, "the pattern n* matches"
    assert publisher.publish("weather", "rain") == 0
    got = messages(p, 4)
    assert [(m["type"], m["channel"], m["data"]) for m in got if m["type"] == "message"] == [
        ("message", b"news", b"hello"), ("message", b"sport", b"goal")]
    assert sorted((m["pattern"], m["channel"], m["data"]) for m in got if m["type"] == "pmessage") == [
        (b"n*", b"news", b"hello"), (b"n*", b"nothing-here", b"x")]
    assert publisher.pubsub_numsub("news", "weather") == [(b"news", 1), (b"weather", 0)]
    assert publisher.pubsub_numpat() == 1
    assert sorted(publisher.pubsub_channels()) == [b"news", b"sport"]
    assert publisher.pubsub_channels("s*") == [b"sport"]
    p.unsubscribe()
    p.punsubscribe()
    time.sleep(0.1)
    assert publisher.publish("news", "gone") == 0
    p.close()


def raw(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    f = s.makefile("rb")

    def send(*args):
        s.sendall(resp_command(*args))
    return s, f, send


def read_reply(f):
    line = f.readline()
    kind = line[:1]
    if kind in (b"*", b">"):
        return [read_reply(f) for _ in range(int(line[1:]))]
    if kind == b"$":
        n = int(line[1:])
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"_":
        return None
    if kind == b":":
        return int(line[1:])
    return line.strip()


def test_subscribed_resp2_client_may_only_subscribe_ping_quit_reset(server):
    s, f, send = raw(server.port)
    send("UNSUBSCRIBE")
    assert read_reply(f) == [b"unsubscribe", None, 0]
    send("SUBSCRIBE", "a", "b")
    assert read_reply(f) == [b"subscribe", b"a", 1]
    assert read_reply(f) == [b"subscribe", b"b", 2]
    send("GET", "x")
    assert read_reply(f) == b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    send("PING")
    assert read_reply(f) == [b"pong", b""]
    send("PING", "hi")
    assert read_reply(f) == [b"pong", b"hi"]
    send("UNSUBSCRIBE", "a")
    assert read_reply(f) == [b"unsubscribe", b"a", 1]
    send("RESET")
    assert read_reply(f) == b"+RESET"
    send("GET", "x")
    assert read_reply(f) is None, "RESET left subscribed mode"
    f.close()
    s.close()


def test_resp3_client_gets_pushes_and_may_run_commands(server):
    s, f, send = raw(server.port)
    send("HELLO", "3")
    f.readline()
    # Skip the HELLO map: read lines until the map's last value (the modules array).
    line = b""
    while not line.startswith(b"*0"):
        line = f.readline()
    send("SUBSCRIBE", "ch")
    assert f.readline() == b">3\r\n"
    assert read_reply(f) == b"subscribe" and read_reply(f) == b"ch" and read_reply(f) == 1
    send("SET", "k", "v")
    assert read_reply(f) == b"+OK", "RESP3 clients may run anything while subscribed"
    assert server.client().publish("ch", "m") == 1
    assert f.readline() == b">3\r\n"
    assert [read_reply(f), read_reply(f), read_reply(f)] == [b"message", b"ch", b"m"]
    f.close()
    s.close()


def test_closed_subscribers_are_forgotten(server):
    s, f, send = raw(server.port)
    send("SUBSCRIBE", "bye")
    read_reply(f)
    c = server.client()
    assert c.pubsub_numsub("bye") == [(b"bye", 1)]
    f.close()
    s.close()
    deadline = time.time() + 5
    while c.pubsub_numsub("bye") != [(b"bye", 0)] and time.time() < deadline:
        time.sleep(0.05)
    assert c.pubsub_numsub("bye") == [(b"bye", 0)]


def test_a_subscriber_that_stops_reading_is_dropped_and_publishers_go_on(server):
    s, f, send = raw(server.port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    send("SUBSCRIBE", "firehose")
    read_reply(f)
    c = server.client()
    payload = b"x" * (1 << 20)
    started = time.time()
    receivers = [c.publish("firehose", payload) for _ in range(80)]  # 80 MiB, past the 32 MiB limit
    took = time.time() - started
    assert took < 10, f"publishing took {took:.1f} s"
    deadline = time.time() + 5
    while c.pubsub_numsub("firehose") != [(b"firehose", 0)] and time.time() < deadline:
        time.sleep(0.05)
    assert c.pubsub_numsub("firehose") == [(b"firehose", 0)], "the slow subscriber was disconnected"
    assert receivers[0] == 1
    f.close()
    s.close()


def test_subscribe_is_refused_inside_multi(r):
    p = r.pipeline(transaction=True)
    p.execute_command("SUBSCRIBE", "x")
    with pytest.raises(redis.exceptions.ResponseError):
        p.execute()


@pytest.mark.skipif(__import__("conftest").REDIS_SERVER is None, reason="redis-server is not installed")
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_sharded_pubsub_answers_as_redis(servers, protocol):
    """SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH and PUBSUB SHARDCHANNELS/SHARDNUMSUB against a real
    redis-server: the same pushes, counts and messages. Shard channels are their own namespace:
    PUBLISH and patterns do not reach them, SPUBLISH reaches only them."""
    from test_geo import Raw

    def run(port):
        sub, pub = Raw(port, protocol), Raw(port, protocol)
        out = [sub.call("SSUBSCRIBE", "orders", "stock"), sub.read(), sub.call("SUBSCRIBE", "orders"),
               sub.call("PSUBSCRIBE", "ord*"), sub.call("SSUBSCRIBE", "orders")]
        if protocol == 2:
            out.append(sub.call("GET", "k"))  # refused in subscribed mode
        out += [pub.call("SPUBLISH", "orders", "o1"), sub.read(), pub.call("PUBLISH", "orders", "p1"), sub.read(), sub.read(),
                pub.call("SPUBLISH", "nobody", "x"), sorted(pub.call("PUBSUB", "SHARDCHANNELS")),  # Redis's order is its dict's
                pub.call("PUBSUB", "SHARDCHANNELS", "st*"), pub.call("PUBSUB", "SHARDNUMSUB", "orders", "stock", "nobody"),
                pub.call("PUBSUB", "NUMSUB", "orders"), sorted(pub.call("PUBSUB", "CHANNELS"))]
        clients = pub.call("CLIENT", "LIST").decode()
        # The subscriber's line (flags=P): its channel, pattern and shard channel counts.
        out.append([sorted(f for f in line.split() if f.startswith(("sub=", "psub=", "ssub=")))
                    for line in clients.splitlines() if " flags=P " in line])
        out += [sub.call("SUNSUBSCRIBE", "orders"), sub.call("SUNSUBSCRIBE"),
                sub.call("SUNSUBSCRIBE"), pub.call("PUBSUB", "SHARDNUMSUB", "orders")]
        sub.close()
        pub.close()
        return out

    cairn, reference = servers
    assert run(cairn.port) == run(reference.port)
