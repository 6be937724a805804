import Foundation
import Rocks
#if canImport(Glibc)
import Glibc
#endif

/// The text of INFO: Redis's sections plus `rocksdb`. https://redis.io/docs/latest/commands/info/
enum InfoReport {
    static let defaultSections = [
        "server", "clients", "memory", "persistence", "stats", "replication", "cpu", "errorstats", "cluster", "keyspace", "rocksdb",
    ]
    /// Sections `all` and `everything` add, as in Redis (long: a line per command).
    static let extraSections = ["commandstats", "latencystats"]

    static func render(_ engine: Engine, session: Session, sections requested: [String]) throws(CommandError) -> String {
        var wanted = Set(requested)
        if requested.isEmpty || wanted.contains("default") { wanted.formUnion(defaultSections) }
        if wanted.contains("all") || wanted.contains("everything") { wanted.formUnion(defaultSections + extraSections) }
        let sections = (defaultSections + extraSections).filter { wanted.contains($0) }
        var out = ""
        for name in sections {
            if !out.isEmpty { out += "\r\n" }
            out += "# \(title(name))\r\n"
            for (key, value) in try lines(name, engine, session) { out += "\(key):\(value)\r\n" }
        }
        return out
    }

    static func title(_ section: String) -> String {
        switch section {
        case "rocksdb": "RocksDB"
        case "commandstats": "Commandstats"
        case "errorstats": "Errorstats"
        case "latencystats": "Latencystats"
        default: section.prefix(1).uppercased() + section.dropFirst()
        }
    }

    static func lines(_ section: String, _ engine: Engine, _ session: Session) throws(CommandError) -> [(String, String)] {
        let config = engine.configuration
        let stats = engine.stats
        let db = engine.database
        switch section {
        case "server":
            let uptime = (Clock.microseconds() - engine.startedAt) / 1_000_000
            return [
                ("redis_version", ServerCommands.redisVersion),
                ("cairn_version", ServerCommands.cairnVersion),
                ("redis_mode", "standalone"),
                ("run_id", stats.runID),
                ("os", osName()),
                ("arch_bits", "64"),
                ("process_id", String(getpid())),
                ("uptime_in_seconds", String(uptime)),
                ("uptime_in_days", String(uptime / 86400)),
                ("executable", "cairnd"),
                ("config_file", engine.hooks?.configFilePath ?? ""),
            ] + (engine.hooks?.infoLines(section: "server") ?? [])
        case "clients":
            return [
                ("connected_clients", String(engine.clients.count)),
            ] + (engine.hooks?.infoLines(section: "clients") ?? []) + [
                ("blocked_clients", String(engine.blocking.count)),
            ]
        case "memory":
            // used_memory is the resident size: Cairn cannot tell its allocator's free pages
            // from its data, so the fragmentation ratio is 1 (see docs/operations.md).
            let rss = residentBytes()
            let peak = engine.notePeakMemory(rss)
            let memtables = sum(engine, "rocksdb.cur-size-all-mem-tables")
            let cache = db.integerProperty("rocksdb.block-cache-usage") ?? 0
            return [
                ("used_memory", String(rss)),
                ("used_memory_human", human(rss)),
                ("used_memory_rss", String(rss)),
                ("used_memory_rss_human", human(rss)),
                ("used_memory_peak", String(peak)),
                ("used_memory_peak_human", human(peak)),
                ("mem_fragmentation_ratio", "1.00"),
                ("maxmemory", String(config.maxmemory)),
                ("maxmemory_human", human(config.maxmemory)),
                ("maxmemory_policy", config.maxmemoryPolicy),
                ("rocksdb_memtables", String(memtables)),
                ("rocksdb_block_cache_usage", String(cache)),
                ("rocksdb_block_cache_capacity", String(config.blockCacheSize)),
                ("rocksdb_row_cache_usage", String(db.rowCacheUsage)),
                ("rocksdb_row_cache_capacity", String(config.rowCacheSize)),
            ] + {
                let cache = engine.valueCache
                let usage = cache.usage
                return [
                    ("value_cache_bytes", String(usage.bytes)),
                    ("value_cache_entries", String(usage.entries)),
                    ("value_cache_capacity", String(cache.capacityBytes)),
                ]
            }()
        case "persistence":
            return [
                ("loading", "0"),
                ("rdb_changes_since_last_save", "0"),
                ("rdb_bgsave_in_progress", engine.backups.backgroundInProgress.load(ordering: .relaxed) ? "1" : "0"),
                ("rdb_last_save_time", String(engine.lastSave.load(ordering: .relaxed))),
                ("rdb_last_bgsave_status", engine.backups.lastStatusOK ? "ok" : "err"),
                ("aof_enabled", "1"),
                ("aof_rewrite_in_progress", "0"),
                ("appendfsync", config.appendfsync.rawValue),
                ("wal_syncs", String(stats.walSyncs.value)),
                ("piecewise_writes", String(stats.piecewiseWrites.value)),
                ("backup_dir", config.resolvedBackupDir),
            ] + engine.backups.infoLines(engine) + engine.diskGuard.infoLines(engine.configuration)
        case "stats":
            let rates = stats.instantaneous
            return [
                ("total_connections_received", String(stats.connectionsReceived.value)),
                ("total_commands_processed", String(stats.commandsProcessed.value)),
                ("instantaneous_ops_per_sec", String(Int(rates[0]))),
                ("total_net_input_bytes", String(stats.netInputBytes.value)),
                ("total_net_output_bytes", String(stats.netOutputBytes.value)),
                ("instantaneous_input_kbps", twoDecimals(rates[1] / 1024)),
                ("instantaneous_output_kbps", twoDecimals(rates[2] / 1024)),
                ("rejected_connections", String(stats.rejectedConnections.value)),
                ("expired_keys", String(stats.expiredKeys.value)),
                ("expire_sweep_compactions", String(stats.sweepCompactions.value)),
                ("expired_values_compacted", String(stats.expiredValuesCompacted.value)),
                ("evicted_keys", "0"),
                ("keyspace_hits", String(stats.keyspaceHits.value)),
                ("keyspace_misses", String(stats.keyspaceMisses.value)),
                ("value_cache_hits", String(engine.valueCache.hits.load(ordering: .relaxed))),
                ("value_cache_misses", String(engine.valueCache.misses.load(ordering: .relaxed))),
                ("value_cache_evictions", String(engine.valueCache.evictions.load(ordering: .relaxed))),
            ] + engine.replication.statsLines() + [
                ("total_error_replies", String(stats.errorReplies.value)),
            ]
        case "errorstats":
            return stats.errorsByPrefix.map { ("errorstat_\($0.0)", "count=\($0.1)") }
        case "cluster":
            return [("cluster_enabled", "0")]
        case "commandstats":
            return stats.commands.all.filter(\.hasData).sorted { $0.name < $1.name }.map { m in
                let calls = m.calls.value
                let usec = m.nanoseconds.value / 1000
                return ("cmdstat_\(m.name)", "calls=\(calls),usec=\(usec),usec_per_call=\(twoDecimals(calls == 0 ? 0 : Double(usec) / Double(calls)))"
                    + ",rejected_calls=\(m.rejectedCalls.value),failed_calls=\(m.failedCalls.value)")
            }
        case "latencystats":
            return stats.commands.all.sorted { $0.name < $1.name }.compactMap { m in
                guard let p = m.percentilesMicroseconds([50, 99, 99.9]) else { return nil }
                return ("latency_percentiles_usec_\(m.name)", "p50=\(threeDecimals(p[0])),p99=\(threeDecimals(p[1])),p99.9=\(threeDecimals(p[2]))")
            }
        case "replication":
            return engine.replication.infoLines(engine)
        case "cpu":
            var usage = rusage()
            getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
            func seconds(_ t: timeval) -> String {
                let us = Int(t.tv_sec) * 1_000_000 + Int(t.tv_usec)
                return "\(us / 1_000_000).\(String(us % 1_000_000).leftPadded(6))"
            }
            return [("used_cpu_sys", seconds(usage.ru_stime)), ("used_cpu_user", seconds(usage.ru_utime))]
        case "keyspace":
            // The background count (KeyspaceCount.swift); `keyspace_count_*` in the rocksdb
            // section say when it was taken. Like Redis, no line for an empty database.
            engine.keyspaceCount.noteAsked()
            guard let count = engine.keyspaceCount.report(latestSequence: db.latestSequenceNumber), count.keys > 0 else { return [] }
            return [("db0", "keys=\(count.keys),expires=\(count.expires),avg_ttl=\(count.averageTTL)")]
        case "rocksdb":
            var lines: [(String, String)] = [
                ("families", String(engine.allFamilies.count)),
                ("estimate_num_keys", String(sum(engine, "rocksdb.estimate-num-keys"))),
                ("live_sst_files_size", String(sum(engine, "rocksdb.live-sst-files-size"))),
                ("total_sst_files_size", String(sum(engine, "rocksdb.total-sst-files-size"))),
                ("memtables_size", String(sum(engine, "rocksdb.cur-size-all-mem-tables"))),
                ("estimate_pending_compaction_bytes", String(sum(engine, "rocksdb.estimate-pending-compaction-bytes"))),
                ("num_running_compactions", String(db.integerProperty("rocksdb.num-running-compactions") ?? 0)),
                ("num_running_flushes", String(db.integerProperty("rocksdb.num-running-flushes") ?? 0)),
                ("block_cache_usage", String(db.integerProperty("rocksdb.block-cache-usage") ?? 0)),
                ("open_snapshots", String(db.openSnapshotCount)),
                ("open_iterators", String(engine.stats.openIterators.value)),
                ("open_cursors", String(db.openCursorCount)),
                ("latest_sequence_number", String(db.latestSequenceNumber)),
            ] + keyspaceCountLines(engine)
            lines.append(("current_family", session.family.name))
            return lines
        default:
            return []
        }
    }

    /// How INFO keyspace's count stands: when its snapshot was taken (Unix ms, 0 before the
    /// first count), whether nothing was written since (the line is exact), how long the last
    /// pass took, and whether a pass is under way.
    static func keyspaceCountLines(_ engine: Engine) -> [(String, String)] {
        let count = engine.keyspaceCount.report(latestSequence: engine.database.latestSequenceNumber)
        return [
            ("keyspace_count_time", String(count?.takenAt ?? 0)),
            ("keyspace_count_current", count?.isCurrent == true ? "1" : "0"),
            ("keyspace_count_duration_ms", String(count?.durationMilliseconds ?? 0)),
            ("keyspace_count_in_progress", engine.keyspaceCount.isCounting ? "1" : "0"),
        ]
    }

    static func twoDecimals(_ v: Double) -> String { String(format: "%.2f", v) }
    static func threeDecimals(_ v: Double) -> String { String(format: "%.3f", v) }

    static func sum(_ engine: Engine, _ property: String) -> UInt64 {
        engine.allFamilies.reduce(UInt64(0)) { $0 + (engine.database.integerProperty(property, in: $1.handle) ?? 0) }
    }

    /// Resident set size from /proc/self/statm.
    static func residentBytes() -> Int {
        guard let f = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(f) }
        var size = 0, resident = 0
        guard withUnsafeMutablePointer(to: &size, { s in withUnsafeMutablePointer(to: &resident) { r in
            withVaList([s, r]) { vfscanf(f, "%ld %ld", $0) }
        } }) == 2 else { return 0 }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func human(_ bytes: Int) -> String {
        let units = ["B", "K", "M", "G", "T"]
        var v = Double(bytes)
        var i = 0
        while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
        return i == 0 ? "\(bytes)B" : String(format: "%.2f%@", v, units[i])
    }

    static func osName() -> String {
        var u = utsname()
        uname(&u)
        func field<T>(_ t: T) -> String {
            withUnsafeBytes(of: t) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        }
        return "\(field(u.sysname)) \(field(u.release)) \(field(u.machine))"
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension Engine {
    /// One statistics sample (the server calls this ten times a second): the counters behind
    /// INFO's instantaneous rates, and the resident size for `used_memory_peak`.
    public func sampleStatistics() {
        stats.sampleRates(now: Clock.milliseconds())
        notePeakMemory(InfoReport.residentBytes())
    }

    /// Raises `used_memory_peak` to `bytes` if higher; returns the peak.
    @discardableResult
    func notePeakMemory(_ bytes: Int) -> Int {
        let old = stats.peakMemory.max(bytes, ordering: .relaxed).oldValue
        return Swift.max(old, bytes)
    }
}
