/// One named setting: how `CONFIG GET/SET` and the config file read and write it.
public struct ConfigOption: Sendable {
    public let name: String
    /// Whether `CONFIG SET` may change it while running.
    public let mutable: Bool
    let get: @Sendable (Configuration) -> String
    let set: @Sendable (inout Configuration, String) throws(CommandError) -> Void

    public func value(in config: Configuration) -> String { get(config) }
    public func apply(_ text: String, to config: inout Configuration) throws(CommandError) {
        try set(&config, text)
    }

    static func string(
        _ name: String, mutable: Bool = true, _ path: any WritableKeyPath<Configuration, String> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { $0[keyPath: path] }, set: { $0[keyPath: path] = $1 })
    }

    static func int(
        _ name: String, mutable: Bool = true, min: Int = 0, max: Int = .max,
        _ path: any WritableKeyPath<Configuration, Int> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { String($0[keyPath: path]) }) { config, text throws(CommandError) in
            guard let v = Int(text), v >= min, v <= max else { throw invalid(name, text) }
            config[keyPath: path] = v
        }
    }

    static func double(
        _ name: String, mutable: Bool = true, _ range: ClosedRange<Double>,
        _ path: any WritableKeyPath<Configuration, Double> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { Bytes.humanDouble($0[keyPath: path]) }) { config, text throws(CommandError) in
            guard let v = Double(text), range.contains(v) else { throw invalid(name, text) }
            config[keyPath: path] = v
        }
    }

    static func bytes(
        _ name: String, mutable: Bool = true, _ path: any WritableKeyPath<Configuration, Int> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { String($0[keyPath: path]) }) { config, text throws(CommandError) in
            guard let v = parseMemory(text), v >= 0 else { throw invalid(name, text) }
            config[keyPath: path] = v
        }
    }

    static func invalid(_ name: String, _ value: String) -> CommandError {
        CommandError("ERR", "CONFIG SET failed (possibly related to argument '\(name)') - argument couldn't be parsed into an integer")
    }

    /// Parses `100`, `1k`, `1kb`, `64mb`, `1gb` as redis.conf does (k=1000, kb=1024).
    public static func parseMemory(_ text: String) -> Int? {
        let t = text.lowercased()
        let units: [(String, Int)] = [
            ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10), ("g", 1_000_000_000), ("m", 1_000_000), ("k", 1000), ("b", 1),
        ]
        for (suffix, multiplier) in units where t.hasSuffix(suffix) {
            guard let n = Int(t.dropLast(suffix.count)) else { return nil }
            return n * multiplier
        }
        return Int(t)
    }

    /// Every option, in the order `CONFIG REWRITE` writes them.
    public static let all: [ConfigOption] = [
        .string("bind", mutable: false, \.bind),
        .int("port", mutable: false, \.port),
        .string("dir", mutable: false, \.dir),
        .string("backup-dir", \.backupDir),
        .int("backup-keep", \.backupKeep),
        .int("backup-max-age", \.backupMaxAge),
        .int("backup-interval", \.backupInterval),
        .string("requirepass", \.requirepass),
        .int("auth-max-failures", \.authMaxFailures),
        .int("auth-max-failures-total", \.authMaxFailuresTotal),
        .bytes("max-key-size", \.maxKeySize),
        .bytes("max-value-size", \.maxValueSize),
        .int("max-args", min: 1, \.maxArgs),
        .int("maxclients", min: 1, \.maxclients),
        .int("timeout", \.timeout),
        .int("tcp-keepalive", \.tcpKeepalive),
        .bytes("proto-max-bulk-len", \.protoMaxBulkLen),
        .bytes("client-query-buffer-limit", \.clientQueryBufferLimit),
        ConfigOption(
            name: "client-output-buffer-limit", mutable: true,
            get: { "normal \($0.clientOutputBufferLimit) 0 0" }
        ) { config, text throws(CommandError) in
            // Redis's form is "normal <hard> <soft> <seconds> ..."; a bare size is accepted too.
            let words = text.split(separator: " ").map(String.init)
            let size = words.first == "normal" && words.count >= 2 ? words[1] : (words.first ?? "")
            guard let v = parseMemory(size), v >= 0 else { throw invalid("client-output-buffer-limit", text) }
            config.clientOutputBufferLimit = v
        },
        ConfigOption(name: "appendfsync", mutable: true, get: { $0.appendfsync.rawValue }) { config, text throws(CommandError) in
            guard let p = FsyncPolicy(rawValue: text.lowercased()) else {
                throw CommandError("ERR", "Invalid argument '\(text)' for CONFIG SET 'appendfsync'")
            }
            config.appendfsync = p
        },
        .string("loglevel", \.loglevel),
        .bytes("block-cache-size", mutable: false, \.blockCacheSize),
        .bytes("row-cache-size", mutable: false, \.rowCacheSize),
        .bytes("write-buffer-size", mutable: false, \.writeBufferSize),
        .string("compression", mutable: false, \.compression),
        .double("bloom-bits-per-key", mutable: false, 0...64, \.bloomBitsPerKey),
        .double("memtable-bloom-ratio", mutable: false, 0...0.25, \.memtableBloomRatio),
        .double("data-block-hash-ratio", mutable: false, 0...4, \.dataBlockHashRatio),
        .int("max-background-jobs", mutable: false, min: 1, \.maxBackgroundJobs),
        .int("io-threads", mutable: false, min: 1, \.ioThreads),
        .int("max-snapshots-per-client", \.maxSnapshotsPerClient),
        .int("max-snapshots", \.maxSnapshots),
        .int("snapshot-max-age", \.snapshotMaxAge),
        .int("max-iterators-per-client", \.maxIteratorsPerClient),
        .int("iterator-idle-timeout", \.iteratorIdleTimeout),
        .int("slowlog-log-slower-than", min: -1, \.slowlogLogSlowerThan),
        .int("slowlog-max-len", \.slowlogMaxLen),
        .string("port-file", mutable: false, \.portFile),
        .int("active-expire-effort", min: 1, max: 10, \.activeExpireEffort),
    ]

    /// Options Redis clients ask about that have a fixed answer in Cairn (the WAL is the log).
    public static let fixed: [(String, String)] = [
        ("save", ""), ("appendonly", "yes"), ("databases", "1"), ("maxmemory", "0"),
    ]

    public static func named(_ name: String) -> ConfigOption? {
        all.first { $0.name == name.lowercased() }
    }
}
