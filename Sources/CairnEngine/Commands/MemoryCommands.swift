import RESP
import Rocks

/// MEMORY and OBJECT: what Cairn knows of a key's footprint and of its memory.
/// https://redis.io/docs/latest/commands/memory-usage/, https://redis.io/docs/latest/commands/object/
///
/// A Cairn value is a RocksDB entry, not an object in memory: MEMORY USAGE reports what the
/// entry takes as stored (key, value with its header, and `entryOverhead`), whether it sits in
/// a memtable, the block cache or only on disk. Cairn does not track accesses, so OBJECT FREQ
/// answers Redis's error for a server without an LFU policy and OBJECT IDLETIME says it is
/// not tracked.
enum MemoryCommands {
    /// What RocksDB adds to each entry's key and value bytes in a table file before
    /// compression: the 8-byte internal key trailer (sequence number and type), about 3 bytes
    /// of length varints in its data block, about 2 bytes of bloom filter (10 bits a key) and
    /// its share of the index (a few bytes). A rounded, documented estimate.
    static let entryOverhead = 16

    static let all: [Command] = [
        Command("memory", subcommands: memory) { _, _ throws(CommandError) in },
        Command("object", subcommands: object) { _, _ throws(CommandError) in },
    ]

    static let memory: [Command] = [
        Command("memory|usage") {
            call, out throws(CommandError) in
            var samples = 5  // Redis's default; 0 reads every member
            var i = 3
            while i < call.count {
                guard call[i].isKeyword("SAMPLES"), i + 1 < call.count else { throw .syntax }
                // A negative count is a syntax error in Redis, not a range error.
                let n = try call.integer(i + 1)
                guard n >= 0 else { throw .syntax }
                samples = Int(clamping: n)
                i += 2
            }
            guard let entry = try call.readEntry(call[2]) else {
                out.null()
                return
            }
            let stored = Call.encode(entry).count
            var total = call[2].count + stored + entryOverhead
            if let meta = CollectionMetadata(type: entry.type, payload: entry.payload, expiresAt: entry.expiresAt), meta.size > 0 {
                // Members: sampled as Redis samples, and scaled to the collection's size. A
                // sorted set's members are stored twice (by member and by score).
                var seen = 0, bytes = 0
                let prefix = meta.memberPrefix(family: call.family.name, key: call[2]).count + 1
                try call.scanMembers(meta, of: call[2], .member) { sub, value in
                    seen += 1
                    bytes += prefix + sub.count + value.count + entryOverhead
                    return samples == 0 || seen < samples
                }
                if seen > 0 {
                    let perMember = Double(bytes) / Double(seen) + (entry.type == .zset ? Double(prefix + 8 + entryOverhead) : 0)
                    total += Int(perMember * Double(meta.size))
                }
            }
            out.integer(total)
        },
        Command("memory|stats") { call, out throws(CommandError) in
            let e = call.engine
            let rss = InfoReport.residentBytes()
            let peak = e.notePeakMemory(rss)
            let memtables = Int(InfoReport.sum(e, "rocksdb.cur-size-all-mem-tables"))
            let tableReaders = Int(InfoReport.sum(e, "rocksdb.estimate-table-readers-mem"))
            let blockCache = Int(e.database.integerProperty("rocksdb.block-cache-usage") ?? 0)
            let rowCache = Int(e.database.rowCacheUsage)
            let keys = Int(InfoReport.sum(e, "rocksdb.estimate-num-keys"))
            let sst = Int(InfoReport.sum(e, "rocksdb.live-sst-files-size"))
            let dataset = memtables + blockCache + rowCache + tableReaders
            let fields: [(String, Double?)] = [
                ("peak.allocated", Double(peak)),
                ("total.allocated", Double(rss)),
                ("startup.allocated", Double(e.stats.startupMemory)),
                ("replication.backlog", 0),
                ("clients.slaves", 0),
                ("clients.normal", 0),
                ("aof.buffer", 0),
                ("keys.count", Double(keys)),
                ("dataset.bytes", Double(dataset)),
                ("dataset.percentage", nil),
                ("peak.percentage", nil),
                ("rocksdb.memtables", Double(memtables)),
                ("rocksdb.block-cache", Double(blockCache)),
                ("rocksdb.row-cache", Double(rowCache)),
                ("rocksdb.table-readers", Double(tableReaders)),
                ("rocksdb.live-sst-files", Double(sst)),
                ("fragmentation", nil),
            ]
            out.mapHeader(fields.count)
            for (name, value) in fields {
                out.bulk(name)
                switch name {
                case "dataset.percentage": out.double(rss == 0 ? 0 : Double(dataset) * 100 / Double(rss))
                case "peak.percentage": out.double(peak == 0 ? 0 : Double(rss) * 100 / Double(peak))
                case "fragmentation": out.double(1)
                default: out.integer(Int(value ?? 0))
                }
            }
        },
        Command("memory|doctor") { call, out throws(CommandError) in
            out.verbatim(Array(doctor(call.engine).utf8))
        },
        Command("memory|purge") { call, out throws(CommandError) in
            _ = call.engine.releaseFreeMemory()
            out.simpleString("OK")
        },
        Command("memory|malloc-stats") { _, out throws(CommandError) in
            out.verbatim(Array("Stats not supported for the current allocator".utf8))
        },
        DiagnosticCommands.helpCommand("MEMORY", [
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ]),
    ]

    static let object: [Command] = [
        Command("object|encoding") {
            call, out throws(CommandError) in
            guard let entry = try call.readEntry(call[2]) else {
                out.null()
                return
            }
            out.bulk(entry.type == .string ? stringEncoding(entry.payload) : entry.type.encoding)
        },
        Command("object|freq") { call, out throws(CommandError) in
            guard try call.exists(call[2]) else {
                out.null()
                return
            }
            throw CommandError("ERR", "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
        },
        Command("object|idletime") {
            call, out throws(CommandError) in
            guard try call.exists(call[2]) else {
                out.null()
                return
            }
            throw CommandError("ERR", "Cairn does not track when keys were last accessed (its data lives on disk and nothing is evicted), so the idle time is not known.")
        },
        Command("object|refcount") {
            call, out throws(CommandError) in
            guard try call.exists(call[2]) else {
                out.null()
                return
            }
            out.integer(1)
        },
        DiagnosticCommands.helpCommand("OBJECT", [
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ]),
    ]

    /// The encoding Redis would give this string: `int` for a canonical 64-bit decimal,
    /// `embstr` up to 44 bytes, `raw` above. Cairn stores every string as its bytes; tools
    /// read this to reason about a Redis dataset, so Redis's rule is what they expect.
    static func stringEncoding(_ payload: [UInt8]) -> String {
        if payload.count <= 20, let v = Bytes.int64(payload), Bytes.decimal(v) == payload { return "int" }
        return payload.count <= 44 ? "embstr" : "raw"
    }

    static func doctor(_ engine: Engine) -> String {
        let rss = InfoReport.residentBytes()
        let peak = engine.notePeakMemory(rss)
        guard rss > 5 << 20 else {
            return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting."
        }
        var issues: [String] = []
        if peak > rss + rss / 2 {
            issues.append(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. Cairn returns free heap memory to the system every ten seconds; a big MGET, KEYS or pipeline of large values can raise the peak.")
        }
        let config = engine.configuration
        let cache = Int(engine.database.integerProperty("rocksdb.block-cache-usage") ?? 0)
        if config.blockCacheSize > 0 && cache >= config.blockCacheSize * 95 / 100 {
            issues.append(" * Block cache full: the block cache (block-cache-size \(config.blockCacheSize)) is full; reads of data that does not fit go to disk. A larger block-cache-size keeps more of the data set in memory.")
        }
        guard !issues.isEmpty else {
            return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."
        }
        return "Sam, I detected a few issues in this Cairn instance memory implants:\n\n" + issues.joined(separator: "\n\n")
            + "\n\nI'm here to keep you safe, Sam. I want to help you.\n"
    }
}
