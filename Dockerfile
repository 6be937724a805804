# Build stage: Debian bookworm with the Swift toolchain. RocksDB (release) and Lua are built from
# Debian's source packages by the same script as on a developer's machine (scripts/lib/native.sh).
FROM swift:6.1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
        libsnappy-dev zlib1g-dev liblz4-dev libzstd-dev libbz2-dev libedit-dev lua-cjson-dev lua-bitop-dev \
        pkg-config cmake ninja-build dpkg-dev curl ca-certificates patch \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY scripts/lib ./scripts/lib
RUN bash -c 'source scripts/lib/deps.sh && cairn_build_rocksdb && cairn_build_lua'
COPY Package.swift ./
# Every target folder the manifest names must exist, even for targets not built here.
COPY Sources ./Sources
COPY Tests ./Tests
COPY Fuzz ./Fuzz
RUN swift build -c release --product cairnd && swift build -c release --product cairn-cli \
    && cp "$(swift build -c release --show-bin-path)/cairnd" "$(swift build -c release --show-bin-path)/cairn-cli" /usr/local/bin/ \
    && mkdir -p /out/swift && cp /usr/lib/swift/linux/*.so* /out/swift/ 2>/dev/null || true

# Runtime stage: the Swift runtime and the libraries cairnd links shared. RocksDB and Lua are
# linked into cairnd; the compression libraries RocksDB was built with are not.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libsnappy1v5 liblz4-1 libzstd1 libbz2-1.0 zlib1g libedit2 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /data --shell /usr/sbin/nologin cairn \
    && mkdir -p /data && chown cairn:cairn /data
# cairn-cli too, for `docker exec -it <container> cairn-cli`.
COPY --from=build /usr/local/bin/cairnd /usr/local/bin/cairn-cli /usr/local/bin/
COPY --from=build /out/swift/ /usr/lib/swift/linux/
COPY config/cairn.conf /etc/cairn/cairn.conf
ENV LD_LIBRARY_PATH=/usr/lib/swift/linux
USER cairn
VOLUME /data
EXPOSE 7379
# Listen on all interfaces inside the container; set a password for anything but local use.
ENTRYPOINT ["cairnd", "/etc/cairn/cairn.conf", "--dir", "/data", "--bind", "0.0.0.0"]
