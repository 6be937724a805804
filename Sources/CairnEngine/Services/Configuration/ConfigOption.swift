/// One named setting: how `CONFIG GET/SET` and the config file read and write it.
///
/// Each option validates its value in one place, `apply`, which the config file, `cairnd`'s
/// flags and `CONFIG SET` all go through: whatever one accepts the others accept, and
/// `CONFIG REWRITE` can write it back.
public struct ConfigOption: Sendable {
    public let name: String
    /// Whether `CONFIG SET` may change it while running.
    public let mutable: Bool
    let get: @Sendable (Configuration) -> String
    let set: @Sendable (inout Configuration, String) throws(Invalid) -> Void

    /// A value the option does not take. `reason` is Redis's text where Redis has the option
    /// ("argument must be between 1048576 and ... inclusive").
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    public func value(in config: Configuration) -> String { get(config) }

    /// Validates `text` and stores it in `config`; throws `Invalid` and leaves `config` as it
    /// was when the value is not one this option takes.
    public func apply(_ text: String, to config: inout Configuration) throws(Invalid) {
        try set(&config, text)
    }

    /// The error `CONFIG SET` answers for a value `apply` refused, in Redis 7's form.
    public func configSetError(_ invalid: Invalid) -> CommandError {
        CommandError("ERR", "CONFIG SET failed (possibly related to argument '\(name)') - \(invalid.reason)")
    }

    /// A string written back by CONFIG REWRITE: no control characters, since the file is one
    /// option per line (a newline would end the value and start a line of its own).
    package static func string(
        _ name: String, mutable: Bool = true, _ path: any WritableKeyPath<Configuration, String> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { $0[keyPath: path] }) { config, text throws(Invalid) in
            try checkPrintable(text)
            config[keyPath: path] = text
        }
    }

    /// One of `choices` (any case; stored in lower case).
    package static func choice(
        _ name: String, mutable: Bool = true, _ choices: [String],
        _ path: any WritableKeyPath<Configuration, String> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { $0[keyPath: path] }) { config, text throws(Invalid) in
            guard choices.contains(text.lowercased()) else { throw oneOf(choices) }
            config[keyPath: path] = text.lowercased()
        }
    }

    package static func int(
        _ name: String, mutable: Bool = true, min: Int = 0, max: Int = .max,
        _ path: any WritableKeyPath<Configuration, Int> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { String($0[keyPath: path]) }) { config, text throws(Invalid) in
            guard let v = Int(text) else { throw Invalid("argument couldn't be parsed into an integer") }
            try checkRange(v, min, max)
            config[keyPath: path] = v
        }
    }

    package static func double(
        _ name: String, mutable: Bool = true, _ range: ClosedRange<Double>,
        _ path: any WritableKeyPath<Configuration, Double> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { Bytes.humanDouble($0[keyPath: path]) }) { config, text throws(Invalid) in
            guard let v = Double(text), v.isFinite else { throw Invalid("argument couldn't be parsed into a number") }
            guard range.contains(v) else {
                throw Invalid("argument must be between \(Bytes.humanDouble(range.lowerBound)) and \(Bytes.humanDouble(range.upperBound)) inclusive")
            }
            config[keyPath: path] = v
        }
    }

    /// `yes` or `no`.
    package static func yesNo(_ name: String, mutable: Bool = true, _ path: any WritableKeyPath<Configuration, Bool> & Sendable) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { $0[keyPath: path] ? "yes" : "no" }) { config, text throws(Invalid) in
            switch text.lowercased() {
            case "yes": config[keyPath: path] = true
            case "no": config[keyPath: path] = false
            default: throw Invalid("argument must be 'yes' or 'no'")
            }
        }
    }

    /// `host port`, or empty / `no one` for none: what `replicaof` holds.
    static func replicaTarget(_ text: String) throws(Invalid) -> String {
        let words = text.split(separator: " ").map(String.init)
        if words.isEmpty || words.map({ $0.lowercased() }) == ["no", "one"] { return "" }
        guard words.count == 2, let port = Int(words[1]), (1...65535).contains(port) else {
            throw Invalid("argument must be 'host port' or 'no one'")
        }
        return "\(words[0]) \(port)"
    }

    /// A size in bytes, with redis.conf's units (`64mb`).
    package static func bytes(
        _ name: String, mutable: Bool = true, min: Int = 0, max: Int = .max,
        _ path: any WritableKeyPath<Configuration, Int> & Sendable
    ) -> ConfigOption {
        ConfigOption(name: name, mutable: mutable, get: { String($0[keyPath: path]) }) { config, text throws(Invalid) in
            config[keyPath: path] = try memory(text, min: min, max: max)
        }
    }

    static func memory(_ text: String, min: Int, max: Int) throws(Invalid) -> Int {
        guard let v = parseMemory(text), v >= 0 else { throw Invalid("argument must be a memory value") }
        try checkRange(v, min, max)
        return v
    }

    static func checkRange(_ v: Int, _ min: Int, _ max: Int) throws(Invalid) {
        guard v >= min && v <= max else { throw Invalid("argument must be between \(min) and \(max) inclusive") }
    }

    static func oneOf(_ choices: [String]) -> Invalid {
        Invalid("argument(s) must be one of the following: \(choices.joined(separator: ", "))")
    }

    static func checkPrintable(_ text: String) throws(Invalid) {
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            throw Invalid("argument must not contain control characters such as newlines (the config file could not hold it)")
        }
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

    /// The engine's options, in the order `CONFIG REWRITE` writes them; `ConfigTable` adds
    /// those of the modules around it.
    public static let all: [ConfigOption] = [
        .string("dir", mutable: false, \.dir),
        .string("backup-dir", \.backupDir),
        .int("backup-keep", \.backupKeep),
        .int("backup-max-age", \.backupMaxAge),
        .int("backup-interval", \.backupInterval),
        .string("requirepass", \.requirepass),
        .string("aclfile", mutable: false, \.aclfile),
        .int("acllog-max-len", \.acllogMaxLen),
        .int("auth-max-failures", \.authMaxFailures),
        .int("auth-max-failures-total", \.authMaxFailuresTotal),
        .bytes("max-key-size", \.maxKeySize),
        .bytes("max-value-size", \.maxValueSize),
        // At least what a client's handshake takes (HELLO 3 AUTH user pass SETNAME name).
        .int("max-args", min: 10, \.maxArgs),
        .int("timeout", max: Int(Int32.max), \.timeout),
        .int("tcp-keepalive", max: Int(Int32.max), \.tcpKeepalive),
        // Redis's ranges: below 1mb every client sending an ordinary value would be cut off.
        .bytes("proto-max-bulk-len", min: 1 << 20, \.protoMaxBulkLen),
        .bytes("client-query-buffer-limit", min: 1 << 20, \.clientQueryBufferLimit),
        ConfigOption(
            name: "client-output-buffer-limit", mutable: true,
            get: { "normal \($0.clientOutputBufferLimit) 0 0 pubsub \($0.clientOutputBufferLimitPubsub) 0 0" }
        ) { config, text throws(Invalid) in
            // Redis's form, "<class> <hard> <soft> <seconds>" repeated, checked whole as Redis
            // does (its texts); a bare size is the normal class's hard limit. The normal and
            // pubsub hard limits apply; soft limits and the replica class are accepted for
            // redis.conf's sake (config/cairn.conf says so).
            let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if words.count == 1 {
                config.clientOutputBufferLimit = try memory(words[0], min: 0, max: .max)
                return
            }
            guard !words.isEmpty, words.count % 4 == 0 else { throw Invalid("Wrong number of arguments in buffer limit configuration.") }
            var limits = (normal: config.clientOutputBufferLimit, pubsub: config.clientOutputBufferLimitPubsub)
            for group in stride(from: 0, to: words.count, by: 4) {
                let hard: Int, soft: Int
                do throws(Invalid) {
                    hard = try memory(words[group + 1], min: 0, max: .max)
                    soft = try memory(words[group + 2], min: 0, max: .max)
                } catch {
                    throw Invalid("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
                }
                guard soft >= 0, let seconds = Int(words[group + 3]), seconds >= 0 else {
                    throw Invalid("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
                }
                switch words[group].lowercased() {
                case "normal": limits.normal = hard
                case "pubsub": limits.pubsub = hard
                case "replica", "slave": break
                default: throw Invalid("Invalid client class specified in buffer limit configuration.")
                }
            }
            (config.clientOutputBufferLimit, config.clientOutputBufferLimitPubsub) = limits
        },
        ConfigOption(name: "appendfsync", mutable: true, get: { $0.appendfsync.rawValue }) { config, text throws(Invalid) in
            guard let p = FsyncPolicy(rawValue: text.lowercased()) else { throw oneOf(FsyncPolicy.allCases.map(\.rawValue)) }
            config.appendfsync = p
        },
        .choice("loglevel", Configuration.logLevels, \.loglevel),
        .bytes("block-cache-size", mutable: false, \.blockCacheSize),
        .bytes("row-cache-size", mutable: false, \.rowCacheSize),
        .bytes("value-cache-size", \.valueCacheSize),
        .int("max-open-files", mutable: false, min: 20, \.maxOpenFiles),
        .bytes("write-buffer-size", mutable: false, \.writeBufferSize),
        .bytes("min-free-disk", \.minFreeDisk),
        .choice("compression", mutable: false, ["no", "snappy", "zlib", "lz4", "zstd", "bz2"], \.compression),
        .double("bloom-bits-per-key", mutable: false, 0...64, \.bloomBitsPerKey),
        .double("memtable-bloom-ratio", mutable: false, 0...0.25, \.memtableBloomRatio),
        .double("data-block-hash-ratio", mutable: false, 0...4, \.dataBlockHashRatio),
        .int("max-background-jobs", mutable: false, min: 1, \.maxBackgroundJobs),
        .int("max-snapshots-per-client", \.maxSnapshotsPerClient),
        .int("max-snapshots", \.maxSnapshots),
        .int("max-snapshots-per-user", \.maxSnapshotsPerUser),
        .int("snapshot-max-age", \.snapshotMaxAge),
        .int("max-iterators-per-client", \.maxIteratorsPerClient),
        .int("iterator-idle-timeout", \.iteratorIdleTimeout),
        .int("slowlog-log-slower-than", min: -1, \.slowlogLogSlowerThan),
        .int("slowlog-max-len", \.slowlogMaxLen),
        .int("latency-monitor-threshold", \.latencyMonitorThreshold),
        .bytes("maxmemory", \.maxmemory),
        ConfigOption(name: "maxmemory-policy", mutable: true, get: { $0.maxmemoryPolicy }) { config, text throws(Invalid) in
            let redis = ["volatile-lru", "allkeys-lru", "volatile-lfu", "allkeys-lfu", "volatile-random", "allkeys-random", "volatile-ttl", "noeviction"]
            guard redis.contains(text.lowercased()) else { throw oneOf(redis) }
            guard text.lowercased() == "noeviction" else {
                throw Invalid("Cairn keeps its data on disk and never evicts keys: only noeviction is supported")
            }
            config.maxmemoryPolicy = "noeviction"
        },
        .int("active-expire-effort", min: 1, max: 10, \.activeExpireEffort),
        .int("busy-reply-threshold", min: Int(Int64.min), \.busyReplyThreshold),
        // Redis's older name for the same setting.
        .int("lua-time-limit", min: Int(Int64.min), \.busyReplyThreshold),
        ConfigOption(name: "replicaof", mutable: false, get: { $0.replicaof }) { config, text throws(Invalid) in
            config.replicaof = try replicaTarget(text)
        },
        .string("masterauth", \.masterauth),
        .string("masteruser", \.masteruser),
        .yesNo("replica-read-only", \.replicaReadOnly),
        .int("replica-priority", \.replicaPriority),
        .string("replica-announce-ip", \.replicaAnnounceIP),
        .int("replica-announce-port", max: 65535, \.replicaAnnouncePort),
        .int("repl-backlog-ttl", mutable: false, \.replBacklogTTL),
        .bytes("repl-backlog-size", mutable: false, \.replBacklogSize),
        .int("repl-timeout", min: 1, \.replTimeout),
        .bytes("hll-sparse-max-bytes", \.hllSparseMaxBytes),
        ConfigOption(name: "notify-keyspace-events", mutable: true, get: { KeyspaceEvents.format($0.notifyKeyspaceEvents) }) { config, text throws(Invalid) in
            guard let classes = KeyspaceEvents.parse(text) else { throw Invalid(KeyspaceEvents.invalid) }
            config.notifyKeyspaceEvents = classes
        },
    ] + encodingDefaults.keys.sorted().flatMap { name in
        [encodingThreshold(name, name)] + encodingAliases.filter { $0.value == name }.keys.sorted().map { encodingThreshold($0, name) }
    }

    /// Redis 7.0's encoding thresholds and their defaults: accepted, reported, and without
    /// effect on how Cairn stores collections (one entry per member at any size).
    static let encodingDefaults: [String: Int] = [
        "hash-max-listpack-entries": 128, "hash-max-listpack-value": 64, "set-max-intset-entries": 512,
        "zset-max-listpack-entries": 128, "zset-max-listpack-value": 64, "list-max-listpack-size": -2,
        "list-compress-depth": 0,
    ]
    /// Redis's older names for the same thresholds.
    static let encodingAliases: [String: String] = [
        "hash-max-ziplist-entries": "hash-max-listpack-entries", "hash-max-ziplist-value": "hash-max-listpack-value",
        "zset-max-ziplist-entries": "zset-max-listpack-entries", "zset-max-ziplist-value": "zset-max-listpack-value",
        "list-max-ziplist-size": "list-max-listpack-size",
    ]

    private static func encodingThreshold(_ name: String, _ stored: String) -> ConfigOption {
        ConfigOption(name: name, mutable: true, get: { String($0.encodingThresholds[stored] ?? 0) }) { config, text throws(Invalid) in
            guard let n = Int(text), stored == "list-max-listpack-size" || n >= 0 else { throw Invalid("argument couldn't be parsed into an integer") }
            config.encodingThresholds[stored] = n
        }
    }

    /// Options Redis clients ask about that have a fixed answer in Cairn (the WAL is the log).
    public static let fixed: [(String, String)] = [
        ("save", ""), ("appendonly", "yes"), ("databases", "1"),
    ]

    /// CONFIG SET of a fixed option: the value it has is taken (`CONFIG SET save ""`, the line
    /// test harnesses and scripts start with, and `appendonly yes`), another is refused with
    /// why. `databases` is immutable, as in Redis.
    static func checkFixed(_ name: String, _ value: String) throws(CommandError) {
        let why: String
        switch name {
        case "save":
            if value.allSatisfy(\.isWhitespace) { return }
            why = "Cairn takes no RDB snapshots: every write is in its WAL, synced as appendfsync says; only save \"\" is accepted"
        case "appendonly":
            if value.lowercased() == "yes" { return }
            why = "Cairn's WAL is its append-only log and cannot be turned off; only appendonly yes is accepted"
        default:
            why = "can't set immutable config"
        }
        throw CommandError("ERR", "CONFIG SET failed (possibly related to argument '\(name)') - \(why)")
    }

    /// The engine's option called `name` (any case); `ConfigTable.named` also finds the others.
    public static func named(_ name: String) -> ConfigOption? {
        ConfigTable.engine.named(name)
    }
}
