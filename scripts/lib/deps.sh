# Installs Debian packages Cairn needs when they are missing, and builds the C libraries Cairn
# links statically (native.sh). Sourced by scripts/*.
source "$(dirname "${BASH_SOURCE[0]}")/native.sh"
cairn_apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

cairn_install_build_deps() {
    if ! command -v swift >/dev/null 2>&1; then
        echo "swift is not on PATH; install the Swift 6 toolchain (https://www.swift.org/install/)" >&2
        exit 1
    fi
    cairn_apt_install libsnappy-dev zlib1g-dev liblz4-dev libzstd-dev libbz2-dev libedit-dev lua-cjson-dev lua-bitop-dev pkg-config
    # RocksDB (release) and Lua are built from Debian's sources, once per machine (native.sh).
    cairn_build_rocksdb
    cairn_build_lua
}

# What the integration tests drive besides cairnd (scripts/test); valgrind for scripts/profile's smoke check.
cairn_install_test_deps() {
    cairn_apt_install redis-server redis-sentinel redis-tools openssl iproute2 netcat-openbsd tmux prometheus-redis-exporter valgrind
}

# The Python packages the integration tests import: redis-py and pytest, pytest-timeout for
# redis-py's own suite (test_redis_py_suite.py; its pyproject sets a timeout per test), and RQ,
# the job queue test_rq.py runs.
cairn_install_python_test_deps() {
    python3 -c 'import redis, pytest, pytest_timeout, rq' 2>/dev/null || python3 -m pip install -q redis pytest pytest-timeout rq
}
