"""`redis-cli --stat` against cairnd: its rolling table, built from INFO (keyspace, stats, memory,
clients, persistence), shows keys and requests growing while another client writes."""
import re
import subprocess
import threading
import time

# One data row: keys, mem, clients, blocked, requests (+delta), connections.
ROW = re.compile(r"^(\d+)\s+([\d.]+[BKMGT]?)\s+(\d+)\s+(\d+)\s+(\d+) \(\+(\d+)\)\s+(\d+)\s*$")


def run_stat(server, seconds, during):
    """Runs `redis-cli --stat -i 0.2` for `seconds` while `during()` runs in a thread; its output."""
    # redis-cli writes through stdio; line buffering keeps what it printed when it is killed.
    cli = subprocess.Popen(["stdbuf", "-oL", "redis-cli", "-p", str(server.port), "--stat", "-i", "0.2"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    worker = threading.Thread(target=during)
    worker.start()
    try:
        out, _ = cli.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        cli.kill()
        out, _ = cli.communicate()
    worker.join()
    return out.decode(errors="replace")


def test_stat_shows_keys_and_requests_growing(server):
    writer = server.client()
    writer.flushall()
    stop = time.time() + 2.5

    def write():
        i = 0
        while time.time() < stop:
            writer.set(f"stat:{i}", "x" * 100)
            i += 1
            time.sleep(0.01)

    text = run_stat(server, 3.0, write)
    lines = text.splitlines()
    assert lines[0].startswith("------- data ------"), text
    assert lines[1].split() == ["keys", "mem", "clients", "blocked", "requests", "connections"], text
    assert "ERR" not in text and "error" not in text.lower(), text
    rows = [ROW.match(line) for line in lines[2:]]
    assert len(rows) >= 5 and all(rows), text
    keys = [int(m.group(1)) for m in rows]
    requests = [int(m.group(5)) for m in rows]
    deltas = [int(m.group(6)) for m in rows]
    clients = [int(m.group(3)) for m in rows]
    assert keys == sorted(keys) and keys[-1] > keys[0] + 20, text
    assert requests == sorted(requests) and requests[-1] > requests[0] + 20, text
    # Each row's "(+N)" is the requests since the row before, the writer's among them.
    assert all(requests[i] - requests[i - 1] == deltas[i] for i in range(1, len(rows))), text
    assert max(deltas[1:]) > 1, text
    # The writer and redis-cli itself are connected.
    assert min(clients) >= 2, text
    assert all(m.group(2)[-1] in "BKMGT" for m in rows), text
    writer.close()


def test_stat_counts_keys_of_every_column_family(fresh_server):
    """--stat sums the keys= of INFO keyspace's db lines; Cairn's db0 counts every family."""
    s = fresh_server()
    c = s.client()
    c.mset({"a": 1, "b": 2})
    c.execute_command("CF.CREATE", "statfam")
    c.execute_command("CF.USE", "statfam")
    c.set("c", 3)
    text = run_stat(s, 1.0, lambda: None)
    rows = [ROW.match(line) for line in text.splitlines()[2:]]
    assert rows and all(rows), text
    # The count is a background pass over the families, which the first INFO may start.
    assert int(rows[-1].group(1)) == 3, text
    c.close()
