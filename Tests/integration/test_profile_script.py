"""scripts/profile's smoke check: a short callgrind run of GET against the cairnd under test
(about 30 s) yields instructions per request that add up by layer, Cairn's modules by name, the
same run's count for redis-server (`--redis`), and system calls per request from the run without
valgrind."""
import json
import os
import subprocess
import sys

from conftest import BINARY, ROOT


def test_profile_get_splits_instructions_by_layer(tmp_path):
    out = tmp_path / "profile.json"
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "lib", "profile_requests.py"), "--bin", os.path.dirname(BINARY),
         "--tests", "get", "--pipelines", "1", "--requests", "500", "--keyspace", "1000",
         "--kernel-requests", "2000", "--top", "5", "--redis", "--json", str(out)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "| GET | 1 |" in result.stdout
    report = json.loads(out.read_text())
    [run] = report["runs"]
    assert (run["test"], run["pipeline"]) == ("GET", 1)
    layers = run["layers"]
    assert set(layers) == {"RocksDB", "Cairn", "Swift runtime", "libc/other"}
    assert abs(sum(layers.values()) - run["instructions"]) < 1
    # Every function callgrind counted was read and put in a layer.
    assert abs(run["instructions"] - run["program_total"]) <= run["program_total"] / 1000
    # A GET of a loaded key reads RocksDB's memtable; parsing and dispatch are Cairn's own.
    assert layers["RocksDB"] > 1000
    assert all(v > 0 for v in layers.values()), layers
    assert {"Cairn: RESP", "Cairn: CairnEngine", "Cairn: CairnServer"} <= set(run["parts"])
    assert len(run["top"]) >= 5 and run["top"][0]["instructions"] >= run["top"][4]["instructions"]
    # libc/other is attributed to its callers; RocksDB calls into libc (memcmp, TLS lookups).
    assert run["libc_other_called_from"].get("RocksDB", 0) > 0
    # The background key count ran before the measured run, not inside it.
    assert run["background"] < 0.02 * run["instructions"], run["background"]
    # The skip list's node-to-node comparisons are part of RocksDB's work, with the libc it calls.
    assert 0 <= run["skiplist_node_comparisons"] <= layers["RocksDB"] + run["libc_other_called_from"]["RocksDB"]
    # redis-server ran the same load and benchmark under callgrind; a GET is a dictionary lookup
    # there, far less work than parsing it alone would leave room for if the count were empty.
    assert 500 < run["redis_instructions"] < run["instructions"], run["redis_instructions"]
    assert "| GET | 1 |" in result.stdout.split("against redis-server's")[1]
    if report["kernel_tool"]:
        # At -P 1 each request needs at least one receive and one send of its own.
        assert run["kernel"]["syscalls"] >= 1.5, run["kernel"]
