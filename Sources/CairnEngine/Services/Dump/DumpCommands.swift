import RESP

/// DUMP and RESTORE: a value serialized as Redis 7.0 serializes it, so values move between
/// Cairn and Redis servers (and MIGRATE, `cairn-cli migrate`).
/// https://redis.io/docs/latest/commands/dump/, https://redis.io/docs/latest/commands/restore/
///
/// DUMP writes the plain RDB encodings (`DumpWriter`), a stream as Redis 7.0 writes it
/// (`StreamDump`); RESTORE reads every encoding Redis 7.0's DUMP produces (`DumpPayload.decode`,
/// `StreamRestore`). Cairn keeps no access clock or counter per key, so
/// RESTORE checks IDLETIME and FREQ as Redis does and then ignores them.
enum DumpCommands {
    static let all: [Command] = [
        Command("dump", handler: dump).measuringMembers(),
        Command("restore", handler: restore),
        MigrateCommand.command,
    ]

    static func dump(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard let entry = try call.readEntry(call[1]) else {
            out.null()
            return
        }
        out.bulk(try payload(call, of: call[1], entry))
    }

    /// The DUMP payload of `entry`, the live value of `key`. A collection is read member by
    /// member into the payload, which is the only copy built.
    static func payload(_ call: Call, of key: [UInt8], _ entry: StoredEntry) throws(CommandError) -> [UInt8] {
        guard let meta = CollectionMetadata(type: entry.type, payload: entry.payload, expiresAt: entry.expiresAt) else {
            var w = DumpWriter(.string)
            w.string(entry.payload)
            return w.finish()
        }
        var w: DumpWriter
        switch meta.type {
        case .stream: return try StreamDump.payload(call, of: key, meta)
        case .hash: w = DumpWriter(.hash)
        case .set: w = DumpWriter(.set)
        case .zset: w = DumpWriter(.zset2)
        case .list, .string: w = DumpWriter(.list)
        }
        w.length(Int(meta.size))
        var written: UInt64 = 0
        try call.scanMembers(meta, of: key, .member) { sub, value in
            switch meta.type {
            case .hash: w.string(sub); w.string(value)
            case .set: w.string(sub)
            case .zset: w.string(sub); w.binaryDouble(MemberKeys.score(value: value))
            case .list, .string, .stream: w.string(value)
            }
            written += 1
            return true
        }
        guard written == meta.size else {
            call.engine.logger.error("DUMP: collection size \(meta.size) but \(written) members found")
            throw CommandError("ERR", "the collection's stored size does not match its members; try again")
        }
        return w.finish()
    }

    static func restore(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var replace = false, absoluteTTL = false
        var idle: Int64? = nil, frequency: Int64? = nil
        var i = 4
        while i < call.count {
            let more = i + 1 < call.count
            if call[i].isKeyword("REPLACE") {
                replace = true
            } else if call[i].isKeyword("ABSTTL") {
                absoluteTTL = true
            } else if call[i].isKeyword("IDLETIME"), more, frequency == nil {
                let v = try call.integer(i + 1)
                guard v >= 0 else { throw CommandError("ERR", "Invalid IDLETIME value, must be >= 0") }
                idle = v
                i += 1
            } else if call[i].isKeyword("FREQ"), more, idle == nil {
                let v = try call.integer(i + 1)
                guard v >= 0 && v <= 255 else { throw CommandError("ERR", "Invalid FREQ value, must be >= 0 and <= 255") }
                frequency = v
                i += 1
            } else {
                throw .syntax
            }
            i += 1
        }
        let key = call[1]
        try call.locked(key) { () throws(CommandError) in
            let existed = try call.exists(key)
            if !replace && existed { throw CommandError("BUSYKEY", "Target key name already exists.") }
            let ttl = try call.integer(2)
            guard ttl >= 0 else { throw CommandError("ERR", "Invalid TTL value, must be >= 0") }
            let payload = call[3]
            guard DumpPayload.isIntact(payload) else { throw CommandError("ERR", "DUMP payload version or checksum are wrong") }
            var sink = RestoreSink(call: call, key: key)
            do { try DumpPayload.decode(payload, into: &sink) } catch { throw CommandError("ERR", "Bad data format") }
            let expiresAt: Int64? = ttl == 0 ? nil : absoluteTTL ? ttl : call.now &+ ttl
            if let expiresAt, expiresAt <= call.now {
                // Already expired: Redis answers OK and only deletes what REPLACE replaced.
                if existed {
                    try call.remove(key)
                    call.notify(.generic, "del", key)
                }
                return
            }
            if let string = sink.string {
                try call.write(key, string, expiresAt: expiresAt)
            } else if var change = sink.change {
                change.meta.expiresAt = expiresAt
                if let expiresAt { call.engine.expirySweep.noteExpiringWrite(expiresAt: expiresAt) }
                try call.commit(change)
            }
            // Redis deletes a replaced key and adds it again: always `new`.
            call.notifyNew(key)
            call.notify(.generic, "restore", key)
        }
        out.simpleString("OK")
    }
}

/// Stages a decoded payload for RESTORE: a string is kept; a collection's members go straight
/// into a `CollectionChange` under a new version, the entries Cairn's own commands write.
/// Members are remembered to refuse duplicates, as Redis's loader does.
struct RestoreSink: RDBSink {
    let call: Call
    let key: [UInt8]
    var string: [UInt8]? = nil
    var change: CollectionChange? = nil
    private var seen: Set<[UInt8]> = []

    init(call: Call, key: [UInt8]) {
        self.call = call
        self.key = key
    }

    mutating func string(_ value: [UInt8]) throws(RDBReader.Malformed) { string = value }

    mutating func begin(_ type: KeyType) throws(RDBReader.Malformed) { change = call.fresh(key, type) }

    private mutating func firstTime(_ member: [UInt8]) throws(RDBReader.Malformed) {
        guard seen.insert(member).inserted else { throw RDBReader.Malformed() }
    }

    mutating func element(_ value: [UInt8]) throws(RDBReader.Malformed) {
        guard change != nil else { throw RDBReader.Malformed() }
        if change!.meta.type == .list {
            change!.put(.member, MemberKeys.position(change!.meta.tail), value)
            change!.meta.tail += 1
        } else {
            try firstTime(value)
            change!.put(.member, value, [])
        }
        change!.meta.size += 1
    }

    mutating func field(_ name: [UInt8], _ value: [UInt8]) throws(RDBReader.Malformed) {
        guard change != nil else { throw RDBReader.Malformed() }
        try firstTime(name)
        change!.put(.member, name, value)
        change!.meta.size += 1
    }

    mutating func scored(_ member: [UInt8], _ score: Double) throws(RDBReader.Malformed) {
        guard change != nil else { throw RDBReader.Malformed() }
        try firstTime(member)
        SortedSetEntries.put(&change!, member, score == 0 ? 0 : score, old: nil)
    }

    mutating func streamEntry(_ id: StreamID, node: UInt64, fields: [[UInt8]]) throws(RDBReader.Malformed) {
        guard change?.meta.type == .stream else { throw RDBReader.Malformed() }
        change!.put(.member, id.bytes, StreamEntry.encode(node: node, fields))
        change!.meta.size += 1
    }

    mutating func streamGroup(_ group: StreamGroup, consumers: [(name: [UInt8], seen: Int64)],
                              pending: [PendingEntry]) throws(RDBReader.Malformed) {
        guard change?.meta.type == .stream else { throw RDBReader.Malformed() }
        change!.putGroup(group)
        for c in consumers { change!.putConsumer(group: group.name, c.name, seen: c.seen) }
        for p in pending { change!.putPending(group: group.name, p) }
    }

    mutating func streamCounters(_ counters: StreamCounters) throws(RDBReader.Malformed) {
        guard change?.meta.type == .stream else { throw RDBReader.Malformed() }
        change!.meta.stream = counters
        // An empty stream with no group has no member to write; its metadata is the stream.
        change!.rewritesMetadata = true
    }
}
