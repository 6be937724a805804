"""Per-request profiles of cairnd behind scripts/profile: instructions per request by layer.

Timings on a small shared machine are noise; instruction counts are not. This runs a release
cairnd under valgrind's callgrind with instrumentation off through start-up and loading, turns
it on only around each redis-benchmark run (`callgrind_control -i on/off`, one dump per run),
and splits each run's instructions (all threads, self cost) by layer:

  RocksDB        librocksdb (the archive linked into cairnd, or the shared library)
  Cairn          Cairn's modules, statically linked into cairnd (RESP, Rocks, CairnEngine,
                 CairnServer, cairnd, the C shims), split by their mangled Swift symbol prefix
  Swift runtime  libswiftCore, Foundation, Dispatch and the rest of the toolchain's libraries,
                 and standard-library code specialized into cairnd ($ss..., $sSa..., ...)
  libc/other     libc (malloc, memcpy), ld.so (TLS lookups), libstdc++, Lua, swift-log, ...

Before each measured run it waits for INFO's background key count to catch up (its walk of every
key would otherwise land in the run), and it reports what background work (RocksDB flushes and
compactions, the key count, the expiry sweep) still ran inside each run. It also reports the
instructions RocksDB's memtable skip list spends comparing two of its own nodes' keys, which in
Debian's librocksdb (built with assertions on) are checks, all but two per insert.

With --redis, redis-server runs the same load and benchmarks under callgrind too, and its total
instructions per request are printed beside cairnd's, and beside RocksDB's share of cairnd's.

callgrind does not see the kernel, so a second run of the same binary without valgrind counts
system calls per request with `perf stat -e raw_syscalls:sys_enter -p PID` (or `strace -c -f`
where perf cannot; strace slows each call, so more clients are ready per wake-up and it counts
fewer wake-ups), and the kernel's share of cairnd's CPU time (from /proc, indicative only).

Valgrind 3.19 (Debian 12) cannot read the DWARF 5 units of a Swift build and stops, so the
binary is copied with its .debug_* sections removed (`objcopy --strip-debug`: the symbol table
stays, which is all a per-function profile needs); and libdispatch parks the main thread in
sigsuspend() with a mask in read-only memory, which valgrind writes to and crashes on, so a
two-line preload (sigsuspend_copy.c) passes a copy. Any release build works, no special flags.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYERS = ["RocksDB", "Cairn", "Swift runtime", "libc/other"]
# Cairn's own Swift modules and C targets, as they appear in mangled names ($s<len><module>).
CAIRN_MODULES = {"RESP", "Rocks", "CairnEngine", "CairnServer", "cairnd", "CEpoll", "CMalloc", "CLua"}
# Toolchain modules whose code is specialized or inlined into cairnd.
SWIFT_MODULES = {"Swift", "Foundation", "FoundationEssentials", "FoundationInternationalization",
                 "Dispatch", "Synchronization", "_Concurrency", "_StringProcessing", "Glibc", "SwiftGlibc"}
SWIFT_LIBS = ("libswift", "libFoundation", "libdispatch", "libBlocksRuntime", "lib_Foundation", "libicu")
SYSCALLS = ["recvfrom", "sendto", "read", "write", "readv", "writev", "recvmsg", "sendmsg",
            "epoll_wait", "epoll_pwait", "epoll_ctl", "futex", "fdatasync", "fsync", "pwrite64",
            "pread64", "sched_yield", "madvise", "mmap", "munmap", "accept4", "close"]


def parse_args():
    p = argparse.ArgumentParser(prog="scripts/profile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="folder with a release cairnd (any release build)")
    p.add_argument("--tests", default="get,set,incr,hset,sadd,lpush",
                   help="redis-benchmark -t list (get,set,incr,hset,sadd,lpush; also zadd, lpop, rpop, "
                        "zpopmin, spop...: a pop test's key is filled first so every pop finds a member)")
    p.add_argument("--pipelines", default="1,16", help="pipeline depths (1,16)")
    p.add_argument("--requests", type=int, default=20_000, help="requests per measured run (20000)")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c (50)")
    p.add_argument("--keyspace", type=int, default=100_000,
                   help="redis-benchmark -r; every key:N is loaded before the runs so GETs hit (100000)")
    p.add_argument("--data-size", type=int, default=100, help="redis-benchmark -d and loaded value size (100)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a cairnd option for both runs (repeatable), e.g. --set row-cache-size=64mb")
    p.add_argument("--top", type=int, default=15, help="functions by self cost to print per run (15)")
    p.add_argument("--kernel-requests", type=int, default=200_000,
                   help="requests per run without valgrind, where system calls are counted (200000)")
    p.add_argument("--no-kernel", action="store_true", help="skip the system-call run")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON here")
    p.add_argument("--keep", action="store_true", help="keep the work folder (callgrind dumps, logs)")
    p.add_argument("--redis", action="store_true",
                   help="also count redis-server's instructions per request in the same runs (appendonly yes,"
                        " appendfsync everysec, no RDB: scripts/bench's settings), for the ratio of work")
    return p.parse_args()


# ---------------------------------------------------------------------------------------------
# Servers and load


def cairnd_argv(binary, workdir, name, args):
    argv = [binary, os.path.join(ROOT, "config", "cairn.conf"), "--port", "0",
            "--port-file", os.path.join(workdir, f"{name}.port"), "--dir", os.path.join(workdir, f"{name}-data"),
            "--log-level", "warning"]
    for option in args.set:
        argv += ["--set", option]
    return argv


def redis_argv(workdir, name):
    """redis-server as scripts/bench runs it, on a free port written to its port file (redis-server
    writes none itself) so `start` finds it like cairnd's."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(os.path.join(workdir, f"{name}.port"), "w") as f:
        f.write(str(port))
    data = os.path.join(workdir, f"{name}-data")
    os.makedirs(data, exist_ok=True)
    return ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
            "--appendfsync", "everysec", "--dir", data, "--loglevel", "warning"]


def start(argv, workdir, name, env=None, timeout=180):
    """Starts a server and returns (process, port) once it has written its port file."""
    port_file = os.path.join(workdir, f"{name}.port")
    log = open(os.path.join(workdir, f"{name}.log"), "wb")
    process = subprocess.Popen(argv, stdout=log, stderr=log, cwd=workdir, env=env)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            break
        if os.path.exists(port_file) and open(port_file).read().strip():
            port = int(open(port_file).read())
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return process, port
            except OSError:
                pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit(f"{name} did not start; log: {os.path.join(workdir, name + '.log')}")


def stop(process):
    process.terminate()
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def resp(*parts):
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(part), part))
    return b"".join(out)


def load_keys(port, args):
    """Writes key:000000000000 ... (redis-benchmark's -r names) with MSETs of 1000 keys each."""
    value = b"x" * args.data_size
    with socket.create_connection(("127.0.0.1", port)) as s:
        for start_key in range(0, args.keyspace, 1000):
            parts = [b"MSET"]
            for n in range(start_key, min(start_key + 1000, args.keyspace)):
                parts += [b"key:%012d" % n, value]
            s.sendall(resp(*parts))
            reply = b""
            while not reply.endswith(b"\r\n"):
                reply += s.recv(64)
            if reply != b"+OK\r\n":
                raise SystemExit(f"load failed: {reply!r}")


# Pops need members to pop: before each pop test's warm-up, its key (redis-benchmark's name) gets
# enough for the warm-up and the measured run, so every measured pop finds one.
POP_FILLS = {"lpop": ("RPUSH", b"mylist"), "rpop": ("RPUSH", b"mylist"),
             "zpopmin": ("ZADD", b"myzset"), "zpopmax": ("ZADD", b"myzset"), "spop": ("SADD", b"myset")}


def fill_for_pops(port, test, requests, args):
    """Adds `requests` new members to the key `test` pops from (nothing for other tests)."""
    if test not in POP_FILLS:
        return
    command, key = POP_FILLS[test]
    fill_for_pops.next = getattr(fill_for_pops, "next", 0)
    with socket.create_connection(("127.0.0.1", port)) as s:
        for start_at in range(0, requests, 1000):
            parts = [command.encode(), key]
            for _ in range(start_at, min(start_at + 1000, requests)):
                n = fill_for_pops.next
                fill_for_pops.next += 1
                member = b"fill:%012d" % n
                if command == "ZADD":
                    parts += [b"%d" % ((n * 7919) % 1_000_003), member]
                elif command == "RPUSH":
                    parts.append(member.ljust(args.data_size, b"x"))
                else:
                    parts.append(member)
            s.sendall(resp(*parts))
            reply = b""
            while not reply.endswith(b"\r\n"):
                reply += s.recv(64)
            if not reply.startswith(b":"):
                raise SystemExit(f"fill for {test} failed: {reply!r}")


def benchmark(port, test, pipeline, args):
    cmd = ["redis-benchmark", "-p", str(port), "-t", test, "-n", str(args.requests), "-c", str(args.clients),
           "-d", str(args.data_size), "-r", str(args.keyspace), "-P", str(pipeline), "-q"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"redis-benchmark failed: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    return " ".join(cmd)


def info_fields(port, section):
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", section], capture_output=True, text=True).stdout
    return dict(line.split(":", 1) for line in out.splitlines() if ":" in line and not line.startswith("#"))


def wait_for_keyspace_count(port, timeout=600):
    """Waits until INFO's background key count has caught up with the writes, so its pass (a
    walk of every key, KeyspaceCount.swift) does not land in a measured run. A pass starts once
    writes have settled for a second: after the load and after each write test's warm-up."""
    deadline = time.time() + timeout
    settled = None
    while time.time() < deadline:
        fields = info_fields(port, "rocksdb")
        if "keyspace_count_current" not in fields:
            return  # a build without the background count
        quiet = fields["keyspace_count_current"].strip() == "1" and fields["keyspace_count_in_progress"].strip() == "0"
        if quiet and settled and time.time() - settled > 1.5:
            return
        settled = (settled or time.time()) if quiet else None
        time.sleep(0.5)
    print("warning: the background key count did not catch up; it may be in the figures", file=sys.stderr)


def runs(args):
    return [(t.strip().lower(), int(p)) for p in args.pipelines.split(",") for t in args.tests.split(",") if t.strip()]


# ---------------------------------------------------------------------------------------------
# Callgrind run


def prepare_binary(args, workdir):
    """A copy of cairnd valgrind can read, and the sigsuspend preload (see the module comment)."""
    binary = os.path.join(workdir, "cairnd")
    subprocess.run(["objcopy", "--strip-debug", os.path.join(args.bin, "cairnd"), binary], check=True)
    shim = os.path.join(workdir, "sigsuspend_copy.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", shim,
                    os.path.join(ROOT, "scripts", "lib", "sigsuspend_copy.c")], check=True)
    return binary, shim


def callgrind_control(pid, *options):
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True)


def callgrind_runs(args, workdir):
    """Runs every (test, pipeline) under callgrind; returns {(test, pipeline): dump path}."""
    binary, shim = prepare_binary(args, workdir)
    return callgrind_server(args, workdir, "callgrind", cairnd_argv(binary, workdir, "callgrind", args),
                            env=dict(os.environ, LD_PRELOAD=shim))


def callgrind_server(args, workdir, name, server_argv, env=None):
    """Runs every (test, pipeline) against one server under callgrind, instrumentation on only
    around each measured run; returns {(test, pipeline): dump path}."""
    out = os.path.join(workdir, f"{name}.out")
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *server_argv]
    process, port = start(argv, workdir, name, env=env)
    dumps = {}
    try:
        load_keys(port, args)
        for test, pipeline in runs(args):
            fill_for_pops(port, test, max(args.requests // 10, 100) + args.requests + 1000, args)
            benchmark(port, test, pipeline, dict_args(args, requests=max(args.requests // 10, 100)))  # warm-up
            wait_for_keyspace_count(port)
            before = set(os.listdir(workdir))
            callgrind_control(process.pid, "-z")
            callgrind_control(process.pid, "-i", "on")
            t0 = time.time()
            benchmark(port, test, pipeline, args)
            callgrind_control(process.pid, "-i", "off")
            callgrind_control(process.pid, "-d", f"{test}-P{pipeline}")
            new = sorted((f for f in set(os.listdir(workdir)) - before if f.startswith(f"{name}.out.")),
                         key=lambda f: int(f.rsplit(".", 1)[-1]))
            if not new:
                raise SystemExit(f"callgrind wrote no dump for {test} -P {pipeline}")
            dumps[(test, pipeline)] = os.path.join(workdir, new[-1])
            print(f"{name} {test.upper():5} -P {pipeline:<2} {time.time() - t0:5.1f} s", file=sys.stderr)
    finally:
        stop(process)
    return dumps


def dict_args(args, **changes):
    copy = argparse.Namespace(**vars(args))
    for k, v in changes.items():
        setattr(copy, k, v)
    return copy


LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)(?:\s+\[(.+)\])?\s*$")


def self_costs(dump):
    """([(instructions, function, object)], program total) from `callgrind_annotate
    --inclusive=no`, every function; the total tells whether every line was read."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", dump],
                          capture_output=True, text=True, check=True).stdout
    rows, program_total = [], 0
    for line in text.splitlines():
        if "PROGRAM TOTALS" in line:
            program_total = int(line.split()[0].replace(",", ""))
            continue
        m = LINE.match(line)
        if m:
            location = m.group(2)
            # file:function; the file part never holds a colon, C++ functions do.
            function = location.split(":", 1)[1] if ":" in location else location
            rows.append((int(m.group(1).replace(",", "")), function.strip(), m.group(3)))
    # A function's lines from a second source file (glibc's inlined headers) come without the
    # object; it is the one the same function has elsewhere in the listing.
    objects = {function: obj for _, function, obj in rows if obj}
    rows = [(cost, function, obj or objects.get(function, "???")) for cost, function, obj in rows]
    read = sum(cost for cost, _, _ in rows)
    if abs(read - program_total) > program_total / 1000:
        print(f"warning: {dump}: functions add up to {read:,}, callgrind's total is {program_total:,}",
              file=sys.stderr)
    return rows, program_total


def call_arcs(dump):
    """{(caller function, caller object, callee function, callee object): inclusive instructions}
    read from the dump itself (callgrind_annotate prints call trees, not a table of arcs).
    Format: https://valgrind.org/docs/manual/cl-format.html; names are compressed as "(id) name"
    the first time and "(id)" after; `cob=` names the callee's object for one call only."""
    names = {"ob": {}, "fn": {}}
    ob = fn = cob = cfn = None
    pending = False  # the next cost line is the inclusive cost of a call
    arcs = {}

    def name(kind, value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind][m.group(1)]

    with open(dump, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if pending and (line[0].isdigit() or line[0] in "+-*"):
                fields = line.split()
                key = (fn, ob, cfn, cob or ob)
                arcs[key] = arcs.get(key, 0) + (int(fields[1]) if len(fields) > 1 else 0)
                pending, cob = False, None
            elif line.startswith("ob="):
                ob = name("ob", line[3:])
            elif line.startswith("fn="):
                fn = name("fn", line[3:])
            elif line.startswith("cob="):
                cob = name("ob", line[4:])
            elif line.startswith("cfn="):
                cfn = name("fn", line[4:])
            elif line.startswith("calls="):
                pending = True
    return arcs


def on_behalf(arcs, cairnd_path):
    """libc/other's instructions by the layer that called into it: the inclusive cost of each
    call from another layer into libc/other (malloc, memcpy, __tls_get_addr are leaves or nearly)."""
    callers = {}
    for (fn, ob, cfn, cob), cost in arcs.items():
        caller = classify(fn, ob, cairnd_path)[0]
        if caller != "libc/other" and classify(cfn, cob, cairnd_path)[0] == "libc/other":
            callers[caller] = callers.get(caller, 0) + cost
    return callers


def swift_module(symbol):
    """The module a mangled Swift symbol belongs to: `$s11CairnEngine...` -> CairnEngine;
    `$ss...` and the standard substitutions (`$sSa` Array, `$sSD` Dictionary, ...) -> Swift."""
    if not symbol.startswith("$s"):
        return None
    rest = symbol[2:]
    if rest.startswith("s") or rest.startswith("S"):
        return "Swift"
    m = re.match(r"(\d+)", rest)
    if m:
        n = int(m.group(1))
        return rest[len(m.group(1)):len(m.group(1)) + n]
    return ""  # a thunk or other symbol with no leading module


def is_rocksdb(function):
    """Whether a demangled name is RocksDB's, now that its archive is linked into cairnd: its C
    API (`rocksdb_...`) or anything in its namespace, templates included (`void rocksdb::...`,
    `std::vector<rocksdb::...>::...`). Code of its with no symbol (an address) is not told apart."""
    return function.startswith("rocksdb_") or "rocksdb::" in function


def classify(function, obj, cairnd_path):
    """(layer, part): the layer and, within it, the module or library."""
    name = os.path.basename(obj)
    function = function.split("'")[0]  # callgrind's recursion suffix
    if name.startswith("librocksdb"):
        return "RocksDB", "librocksdb"
    if is_rocksdb(function):
        return "RocksDB", "librocksdb.a"
    if obj == cairnd_path:
        module = swift_module(function)
        if module is None:  # C and C++ code linked into cairnd
            if function.startswith("cairn_"):
                return "Cairn", "C shims"
            if function.startswith("CCryptoBoringSSL"):
                return "libc/other", "BoringSSL"
            return "Cairn", "unmangled (closures' destroy helpers, blocks)"
        if module in CAIRN_MODULES:
            return "Cairn", module
        if module in SWIFT_MODULES:
            return "Swift runtime", "stdlib code in cairnd"
        if module == "":
            return "Cairn", "thunks"
        return "libc/other", module
    if name.startswith(SWIFT_LIBS):
        return "Swift runtime", name.split(".so")[0]
    if function.startswith("swift_"):
        return "Swift runtime", name
    return "libc/other", name.split(".so")[0] if name != "???" else "unknown"


# Work that is not any request's: RocksDB's flush and compaction threads, and Cairn's timers
# (the background key count, the expiry sweep). Reported apart so a run can be seen to be clean.
BACKGROUND = re.compile(r"^rocksdb::ThreadPoolImpl::Impl::BGThread\(|^\$s11CairnServer0B0C(18startKeyspaceCount|16startExpirySweep).*fU_$")


def background(rows, arcs):
    """Inclusive instructions of the background entry points: self cost plus their calls."""
    total = sum(cost for cost, function, _ in rows if BACKGROUND.search(function))
    return total + sum(cost for (fn, _, _, _), cost in arcs.items() if BACKGROUND.search(fn or ""))


# The memtable skip list comparing the keys of two of its nodes. Debian's librocksdb is built with
# assertions on, and apart from the duplicate-key check of each insert (two comparisons) these are
# all assertions: InlineSkipList re-checks the order of the nodes around every step of a search
# and, after an insert, of the whole splice it keeps.
SKIPLIST_NODE_COMPARE = "rocksdb::MemTable::KeyComparator::operator()(char const*, char const*) const"


def summarize(costs, arcs, requests, cairnd_path):
    rows, program_total = costs
    layers = {layer: 0 for layer in LAYERS}
    parts = {}
    total = 0
    for cost, function, obj in rows:
        layer, part = classify(function, obj, cairnd_path)
        layers[layer] += cost
        parts[(layer, part)] = parts.get((layer, part), 0) + cost
        total += cost
    top = sorted(rows, reverse=True)[:50]
    return {"instructions": total / requests, "program_total": program_total / requests,
            "layers": {k: v / requests for k, v in layers.items()},
            "libc_other_called_from": {k: v / requests for k, v in on_behalf(arcs, cairnd_path).items()},
            "background": background(rows, arcs) / requests,
            "skiplist_node_comparisons": sum(cost for (fn, _, cfn, _), cost in arcs.items()
                                             if cfn == SKIPLIST_NODE_COMPARE and fn != cfn) / requests,
            "parts": {f"{layer}: {part}": v / requests for (layer, part), v in
                      sorted(parts.items(), key=lambda kv: -kv[1])},
            "top": [{"instructions": c / requests, "function": f, "object": os.path.basename(o),
                     "layer": classify(f, o, cairnd_path)[0]} for c, f, o in top]}


# ---------------------------------------------------------------------------------------------
# Kernel run


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # utime, stime


def perf_works():
    if not shutil.which("perf"):
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"],
                       capture_output=True, text=True)
    return r.returncode == 0 and "raw_syscalls" in r.stderr and "not supported" not in r.stderr


def count_syscalls(pid, run, workdir, use_perf):
    """Runs `run()` while counting cairnd's system calls; returns ({name: count}, total)."""
    out = os.path.join(workdir, "syscalls.txt")
    if os.path.exists(out):
        os.remove(out)
    if use_perf:
        events = ["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{s}" for s in SYSCALLS]
        counter = subprocess.Popen(["perf", "stat", "-x,", "-o", out, "-e", ",".join(events), "-p", str(pid)],
                                   stderr=subprocess.DEVNULL)
    else:
        counter = subprocess.Popen(["strace", "-c", "-f", "-o", out, "-p", str(pid)], stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # let it attach to every thread
    run()
    counter.send_signal(2)
    counter.wait()
    counts, total = {}, 0
    if not os.path.exists(out):  # the counter could not attach (no permission to trace)
        return counts, total
    for line in open(out):
        if use_perf:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[0].isdigit():
                if fields[2] == "raw_syscalls:sys_enter":
                    total = int(fields[0])
                elif int(fields[0]):
                    counts[fields[2].removeprefix("syscalls:sys_enter_")] = int(fields[0])
        else:
            fields = line.split()
            if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
                counts[fields[-1]] = int(fields[3])
    if not use_perf:
        total = sum(counts.values())
    return counts, total


def kernel_runs(args, workdir):
    """{(test, pipeline): {syscalls per request, by call, kernel share of CPU time}} from a run
    of the same cairnd without valgrind."""
    use_perf = perf_works()
    if not use_perf and not shutil.which("strace"):
        print("neither perf tracepoints nor strace available: no system-call counts", file=sys.stderr)
        return {}, None
    process, port = start(cairnd_argv(os.path.join(args.bin, "cairnd"), workdir, "native", args), workdir, "native")
    results = {}
    try:
        load_keys(port, args)
        native = dict_args(args, requests=args.kernel_requests)
        for test, pipeline in runs(args):
            fill_for_pops(port, test, max(args.requests // 10, 100) + args.kernel_requests + 1000, args)
            benchmark(port, test, pipeline, dict_args(args, requests=max(args.requests // 10, 100)))
            wait_for_keyspace_count(port)
            u0, s0 = cpu_ticks(process.pid)
            counts, total = count_syscalls(process.pid, lambda: benchmark(port, test, pipeline, native), workdir, use_perf)
            u1, s1 = cpu_ticks(process.pid)
            if total == 0:
                continue
            named = sum(counts.values())
            if total > named:
                counts["other"] = total - named
            cpu = (u1 - u0) + (s1 - s0)
            results[(test, pipeline)] = {
                "syscalls": total / native.requests,
                "by_call": {k: v / native.requests for k, v in sorted(counts.items(), key=lambda kv: -kv[1])},
                "kernel_cpu_share": (s1 - s0) / cpu if cpu else 0.0}
    finally:
        stop(process)
    if not results:
        print("system calls could not be counted (perf and strace could not attach)", file=sys.stderr)
        return {}, None
    return results, "perf stat" if use_perf else "strace -c -f"


# ---------------------------------------------------------------------------------------------
# Output


def demangle(names):
    tool = shutil.which("swift-demangle") or os.path.join(os.path.dirname(os.path.realpath(shutil.which("swift") or "")), "swift-demangle")
    if not os.path.exists(tool):
        return names
    r = subprocess.run([tool, "--simplified"], input="\n".join(names), capture_output=True, text=True)
    out = r.stdout.splitlines()
    return out if r.returncode == 0 and len(out) == len(names) else names


def report(args, profiles, kernel, kernel_tool, command_line, redis):
    print(f"\n{command_line}")
    print(f"instructions per request (callgrind, all of cairnd's threads, {args.requests} requests per run,"
          f" -c {args.clients} -r {args.keyspace} -d {args.data_size})")
    print("\n| command | -P | total | RocksDB | Cairn | Swift runtime | libc/other | syscalls/req | kernel CPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (test, pipeline), p in profiles.items():
        k = kernel.get((test, pipeline))
        layers = " | ".join(f"{p['layers'][layer]:,.0f}" for layer in LAYERS)
        ktext = f"{k['syscalls']:.2f} | {k['kernel_cpu_share']:.0%}" if k else "- | -"
        print(f"| {test.upper()} | {pipeline} | {p['instructions']:,.0f} | {layers} | {ktext} |")
    if redis:
        print("\ninstructions per request against redis-server's in the same runs (all of each server's threads):")
        print("\n| command | -P | cairnd | redis-server | cairnd / redis-server | cairnd's RocksDB (and the libc it calls)"
              " / redis-server |")
        print("|---|---|---|---|---|---|")
        for (test, pipeline), p in profiles.items():
            r = redis.get((test, pipeline))
            if not r:
                continue
            rocksdb = p["layers"]["RocksDB"] + p["libc_other_called_from"].get("RocksDB", 0)
            print(f"| {test.upper()} | {pipeline} | {p['instructions']:,.0f} | {r:,.0f} | {p['instructions'] / r:.1f}x"
                  f" | {rocksdb:,.0f}: {rocksdb / r:.1f}x |")
    print("\nRocksDB's memtable skip list comparing two of its nodes' keys, with what those comparisons call;"
          " in Debian's\nlibrocksdb (assertions on) all but two per insert are assertions:")
    print("  " + ", ".join(f"{t.upper()} -P {pl} {p['skiplist_node_comparisons']:,.0f}"
                           f" ({p['skiplist_node_comparisons'] / p['instructions']:.0%})" for (t, pl), p in profiles.items()))
    if kernel:
        print(f"\nsystem calls per request ({kernel_tool}, cairnd without valgrind; kernel CPU = system time"
              f" / cairnd's CPU time, indicative):")
        for (test, pipeline), k in kernel.items():
            calls = ", ".join(f"{name} {v:.2f}" for name, v in k["by_call"].items() if v >= 0.01)
            print(f"  {test.upper():5} -P {pipeline:<2} {k['syscalls']:6.2f}: {calls}")
    print("\nlibc/other by the layer that called it (inclusive cost of calls into libc/other):")
    for (test, pipeline), p in profiles.items():
        callers = sorted(p["libc_other_called_from"].items(), key=lambda kv: -kv[1])
        print(f"  {test.upper():5} -P {pipeline:<2} {p['layers']['libc/other']:7,.0f}: "
              + ", ".join(f"from {k} {v:,.0f}" for k, v in callers))
    print("\nbackground work inside the runs (RocksDB flushes and compactions, key count, expiry sweep;"
          " included above):")
    print("  " + ", ".join(f"{t.upper()} -P {p} {v['background']:,.0f}" for (t, p), v in profiles.items()))
    print("\nCairn's share by module (instructions per request):")
    for (test, pipeline), p in profiles.items():
        cairn = [(k.split(": ", 1)[1], v) for k, v in p["parts"].items() if k.startswith("Cairn:") and v >= 1]
        print(f"  {test.upper():5} -P {pipeline:<2} " + ", ".join(f"{m} {v:,.0f}" for m, v in cairn))
    for (test, pipeline), p in profiles.items() if args.top > 0 else []:
        top = p["top"][:args.top]
        names = demangle([t["function"] for t in top])
        print(f"\ntop {len(top)} by self cost, {test.upper()} -P {pipeline} (instructions per request):")
        for t, name in zip(top, names):
            if len(name) > 110:
                name = name[:107] + "..."
            print(f"  {t['instructions']:8,.0f}  {t['layer']:13}  {name}")


def main():
    args = parse_args()
    args.bin = os.path.abspath(args.bin)
    command_line = "scripts/profile " + " ".join(sys.argv[1:])
    for tool in ("valgrind", "callgrind_annotate", "callgrind_control", "redis-benchmark", "objcopy", "cc")\
            + (("redis-server",) if args.redis else ()):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is missing (apt-get install valgrind redis-tools binutils gcc)")
    workdir = tempfile.mkdtemp(prefix="cairn-profile-")
    print(f"cairnd: {args.bin}/cairnd  work: {workdir}", file=sys.stderr)
    try:
        dumps = callgrind_runs(args, workdir)
        cairnd_path = os.path.join(workdir, "cairnd")
        profiles = {key: summarize(self_costs(path), call_arcs(path), args.requests, cairnd_path) for key, path in dumps.items()}
        redis = {}
        if args.redis:
            for key, path in callgrind_server(args, workdir, "redis", redis_argv(workdir, "redis")).items():
                redis[key] = sum(cost for cost, _, _ in self_costs(path)[0]) / args.requests
        kernel, kernel_tool = ({}, None) if args.no_kernel else kernel_runs(args, workdir)
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report(args, profiles, kernel, kernel_tool, command_line, redis)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command_line, "requests": args.requests, "clients": args.clients,
                       "keyspace": args.keyspace, "data_size": args.data_size, "kernel_tool": kernel_tool,
                       "runs": [{"test": t.upper(), "pipeline": p, **profiles[(t, p)],
                                 "kernel": kernel.get((t, p)), "redis_instructions": redis.get((t, p))}
                                for (t, p) in profiles]}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
