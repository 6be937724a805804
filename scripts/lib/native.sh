# Builds the two C libraries Cairn links statically, from Debian's own source packages, once per
# machine, into a versioned cache folder outside the checkout (sourced by scripts/lib/deps.sh):
#
# - RocksDB, in release mode (NDEBUG, -O2, portable, snappy/lz4/zstd/zlib/bz2): Debian's binary
#   librocksdb-dev is built with assertions on, which cost 13-23% of a request's instructions
#   (docs/performance.md, "A release RocksDB").
# - Lua 5.1 with Debian's patches and two of Cairn's (scripts/lib/patches/lua5.1-cairn.patch):
#   every byte in the string hash, as Redis's own Lua does, and a pattern matcher with a
#   recursion limit that calls the count hook, so no script can crash the server or stop it
#   from being killed (docs/commands.md, "Scripting").
#
# Each library gets a pkg-config file (cairn-rocksdb.pc, cairn-lua.pc) in /usr/local/lib/pkgconfig,
# which Package.swift names; it points at the cache folder of the version this checkout asks for.
# Set CAIRN_CACHE to build elsewhere (default /var/cache/cairn as root, else ~/.cache/cairn).

# What this checkout builds. Changing a flag or a patch changes the recipe number, so a machine
# that built an older recipe builds again instead of reusing it.
CAIRN_ROCKSDB_VERSION=9.10.0
CAIRN_ROCKSDB_DEBIAN_VERSION=9.10.0-1   # trixie
CAIRN_ROCKSDB_RECIPE=2
CAIRN_LUA_DEBIAN_VERSION=5.1.5-9        # bookworm
CAIRN_LUA_RECIPE=1

cairn_cache_dir() {
    if [ -n "${CAIRN_CACHE:-}" ]; then
        echo "$CAIRN_CACHE"
    elif [ "$(id -u)" -eq 0 ]; then
        echo /var/cache/cairn
    else
        echo "${XDG_CACHE_HOME:-$HOME/.cache}/cairn"
    fi
}

cairn_sudo() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Debian's source packages come from the same registry as its binary packages: a deb-src entry
# beside the first deb entry's address, for bookworm and trixie.
cairn_enable_deb_src() {
    local list=/etc/apt/sources.list.d/cairn-deb-src.sources
    [ -f "$list" ] && return 0
    local uri
    uri=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1 | awk '{print $2}')
    [ -n "$uri" ] || uri=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1 | awk '{print $2}')
    [ -n "$uri" ] || uri=http://deb.debian.org/debian
    printf 'Types: deb-src\nURIs: %s\nSuites: bookworm trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" \
        | cairn_sudo tee "$list" >/dev/null
    cairn_sudo apt-get update -qq
}

# Downloads one file of a source package, named by its suffix (orig.tar.gz, dsc...), into the
# current folder, and checks it against the SHA256 of Debian's signed source index.
cairn_fetch_source_file() {
    local package=$1 version=$2 suffix=$3 line url name sum
    line=$(apt-get source --print-uris "$package=$version" 2>/dev/null | grep -E "^'[^']*$suffix' " | head -n 1)
    [ -n "$line" ] || { echo "no $suffix for $package $version in the source index" >&2; return 1; }
    url=$(echo "$line" | awk '{print $1}' | tr -d "'")
    name=$(echo "$line" | awk '{print $2}')
    sum=$(echo "$line" | awk '{print $4}' | sed 's/^SHA256://')
    curl -fsSL -o "$name" "$url" || { echo "could not download $url" >&2; return 1; }
    echo "$sum  $name" | sha256sum -c --quiet - || { echo "$name does not match Debian's checksum" >&2; return 1; }
    echo "$name"
}

# Writes a pkg-config file for Package.swift.
cairn_write_pc() {
    local name=$1 prefix=$2 description=$3 libs=$4
    cairn_sudo mkdir -p /usr/local/lib/pkgconfig
    printf 'prefix=%s\nName: %s\nDescription: %s\nVersion: 1\nCflags: -I${prefix}/include\nLibs: -L${prefix}/lib %s\n' \
        "$prefix" "$name" "$description" "$libs" | cairn_sudo tee "/usr/local/lib/pkgconfig/$name.pc" >/dev/null
}

# Runs a ninja build, printing its progress as one line per tenth. A shell loop, not awk:
# Debian's mawk reads a pipe in blocks, so its lines came out only when the build ended.
cairn_ninja_with_progress() {
    local label=$1 log=$2
    shift 2
    ninja "$@" 2>&1 | tee "$log" | {
        local shown=0 line step
        while IFS= read -r line; do
            if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
                step=$(( BASH_REMATCH[1] * 10 / BASH_REMATCH[2] ))
                if (( step > shown )); then
                    shown=$step
                    echo "$label: compile ${BASH_REMATCH[1]}/${BASH_REMATCH[2]}" >&2
                fi
            fi
        done
    }
    return "${PIPESTATUS[0]}"
}

cairn_build_rocksdb() {
    local cache prefix
    cache=$(cairn_cache_dir)
    prefix="$cache/rocksdb-$CAIRN_ROCKSDB_VERSION-cairn$CAIRN_ROCKSDB_RECIPE"
    if [ ! -f "$prefix/lib/librocksdb.a" ]; then
        mkdir -p "$cache"
        # One build at a time per machine: a second caller waits and then finds it built.
        exec 8>"$cache/.rocksdb.lock"
        flock 8
        if [ ! -f "$prefix/lib/librocksdb.a" ]; then
            cairn_apt_install cmake ninja-build dpkg-dev curl libsnappy-dev zlib1g-dev liblz4-dev libzstd-dev libbz2-dev
            cairn_enable_deb_src
            local work started tarball
            work=$(mktemp -d "$cache/.rocksdb-build.XXXXXX")
            started=$(date +%s)
            echo "rocksdb $CAIRN_ROCKSDB_VERSION: download (Debian source $CAIRN_ROCKSDB_DEBIAN_VERSION; built once per machine into $prefix)" >&2
            # Upstream's tarball as Debian ships it; Debian's own patches only adapt its packaging.
            tarball=$(cd "$work" && cairn_fetch_source_file rocksdb "$CAIRN_ROCKSDB_DEBIAN_VERSION" orig.tar.gz) || return 1
            tar -xzf "$work/$tarball" -C "$work"
            echo "rocksdb $CAIRN_ROCKSDB_VERSION: configure" >&2
            # The library alone: no tests, tools or benchmarks; warnings are not errors (a newer
            # compiler than upstream's CI must not fail the build). A unity build (16 sources per
            # compiler run) parses RocksDB's headers a twentieth as often: about 8 minutes of CPU
            # instead of about 25 on this project's 2-core machines.
            cmake -S "$work/rocksdb-$CAIRN_ROCKSDB_VERSION" -B "$work/build" -G Ninja \
                -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
                -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DPORTABLE=ON -DFAIL_ON_WARNINGS=OFF \
                -DWITH_SNAPPY=ON -DWITH_LZ4=ON -DWITH_ZSTD=ON -DWITH_ZLIB=ON -DWITH_BZ2=ON \
                -DWITH_GFLAGS=OFF -DWITH_LIBURING=OFF -DWITH_JEMALLOC=OFF -DWITH_TESTS=OFF -DWITH_ALL_TESTS=OFF \
                -DWITH_TOOLS=OFF -DWITH_CORE_TOOLS=OFF -DWITH_BENCHMARK_TOOLS=OFF -DWITH_TRACE_TOOLS=OFF \
                -DROCKSDB_BUILD_SHARED=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >"$work/configure.log" 2>&1 \
                || { echo "rocksdb: configure failed; see $work/configure.log" >&2; return 1; }
            cairn_ninja_with_progress "rocksdb $CAIRN_ROCKSDB_VERSION" "$work/compile.log" -C "$work/build" rocksdb \
                || { echo "rocksdb: compile failed; see $work/compile.log" >&2; return 1; }
            local staging="$prefix.partial"
            rm -rf "$staging" && mkdir -p "$staging/lib"
            cp -r "$work/rocksdb-$CAIRN_ROCKSDB_VERSION/include" "$staging/include"
            cp "$work/build/librocksdb.a" "$staging/lib/"
            rm -rf "$prefix" && mv "$staging" "$prefix"
            rm -rf "$work"
            echo "rocksdb $CAIRN_ROCKSDB_VERSION: done in $(( ($(date +%s) - started) / 60 )) min" >&2
        fi
        flock -u 8
    fi
    cairn_write_pc cairn-rocksdb "$prefix" "RocksDB $CAIRN_ROCKSDB_VERSION, release build for Cairn" \
        "-lrocksdb -lsnappy -llz4 -lzstd -lbz2 -lz -lstdc++ -lm -lpthread"
}

cairn_build_lua() {
    local cache prefix here
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    cache=$(cairn_cache_dir)
    prefix="$cache/lua-$CAIRN_LUA_DEBIAN_VERSION-cairn$CAIRN_LUA_RECIPE"
    if [ ! -f "$prefix/lib/libcairnlua.a" ]; then
        mkdir -p "$cache"
        exec 9>"$cache/.lua.lock"
        flock 9
        if [ ! -f "$prefix/lib/libcairnlua.a" ]; then
            cairn_apt_install dpkg-dev gcc patch lua-cjson-dev lua-bitop-dev
            cairn_enable_deb_src
            local work
            work=$(mktemp -d "$cache/.lua-build.XXXXXX")
            echo "lua $CAIRN_LUA_DEBIAN_VERSION: download" >&2
            # The whole source package: dpkg-source applies Debian's patches (among them a fix
            # for a stack overflow in vararg functions).
            (cd "$work" && apt-get source -qq "lua5.1=$CAIRN_LUA_DEBIAN_VERSION" >/dev/null 2>&1) \
                || { echo "lua: could not fetch Debian's lua5.1 $CAIRN_LUA_DEBIAN_VERSION source" >&2; return 1; }
            local src="$work/lua5.1-5.1.5/src"
            patch -s -d "$work/lua5.1-5.1.5" -p1 <"$here/patches/lua5.1-cairn.patch" \
                || { echo "lua: Cairn's patch does not apply" >&2; return 1; }
            echo "lua $CAIRN_LUA_DEBIAN_VERSION: compile" >&2
            local objects=()
            for f in lapi lcode ldebug ldo ldump lfunc lgc llex lmem lobject lopcodes lparser lstate lstring ltable \
                ltm lundump lvm lzio lauxlib lbaselib ldblib liolib lmathlib loslib ltablib lstrlib loadlib linit; do
                gcc -O2 -fPIC -DLUA_USE_LINUX -c "$src/$f.c" -o "$work/$f.o" || { echo "lua: $f.c failed to compile" >&2; return 1; }
                objects+=("$work/$f.o")
            done
            # Debian's cjson and bit modules (built for Lua 5.1's C API) join the same archive,
            # so nothing links Debian's shared liblua beside this one.
            local multiarch
            multiarch=$(gcc -print-multiarch)
            mkdir -p "$work/modules"
            (cd "$work/modules" && ar x "/usr/lib/$multiarch/liblua5.1-cjson.a" && ar x "/usr/lib/$multiarch/liblua5.1-bitop.a")
            local staging="$prefix.partial"
            rm -rf "$staging" && mkdir -p "$staging/lib" "$staging/include"
            ar rcs "$staging/lib/libcairnlua.a" "${objects[@]}" "$work"/modules/*.o
            cp "$src/lua.h" "$src/luaconf.h" "$src/lualib.h" "$src/lauxlib.h" "$staging/include/"
            rm -rf "$prefix" && mv "$staging" "$prefix"
            rm -rf "$work"
            echo "lua $CAIRN_LUA_DEBIAN_VERSION: done" >&2
        fi
        flock -u 9
    fi
    cairn_write_pc cairn-lua "$prefix" "Lua 5.1 with Debian's and Cairn's patches, cjson and bit" "-lcairnlua -lm -ldl"
}
