import RESP

/// XREAD and XREADGROUP: https://redis.io/docs/latest/commands/xread/
///
/// Both serve what they can at once; with BLOCK and nothing to serve, the client is parked as a
/// blocking list pop is (`Call.block`) and retried when a write to one of its streams signals
/// it. `$` is resolved to the stream's last ID when the command arrives, so a retry serves only
/// what came after. Inside MULTI they answer at once; in a script BLOCK is refused, as in Redis.
enum StreamReads {
    static let all: [Command] = [
        Command("xread") { call, out throws(CommandError) in
            try read(call, group: false, &out)
        }.movingKeys { streamKeys($0) },
        // Without BLOCK it runs batched with its connection's neighbours
        // (`Engine.executeBatched`); a blocking one must be able to wait.
        Command("xreadgroup") { call, out throws(CommandError) in
            try read(call, group: true, &out)
        }.movingKeys { streamKeys($0) }.grouped { argv, _ in blocks(argv) ? nil : .batched },
    ]

    /// The keys after STREAMS (half of what follows it), found as Redis's `xreadGetKeys`.
    static func streamKeys(_ argv: [[UInt8]]) -> [[UInt8]] {
        var i = 1
        while i < argv.count {
            let word = argv[i]
            if word.isKeyword("BLOCK") || word.isKeyword("COUNT") {
                i += 1
            } else if word.isKeyword("GROUP") {
                i += 2
            } else if word.isKeyword("NOACK") {
            } else if word.isKeyword("STREAMS") {
                let n = argv.count - i - 1
                guard n > 0, n % 2 == 0 else { return [] }
                return Array(argv[(i + 1)...(i + n / 2)])
            } else {
                return []
            }
            i += 1
        }
        return []
    }

    /// Whether the request has a BLOCK option (before STREAMS).
    static func blocks(_ argv: [[UInt8]]) -> Bool {
        for word in argv.dropFirst() {
            if word.isKeyword("STREAMS") { return false }
            if word.isKeyword("BLOCK") { return true }
        }
        return false
    }

    /// What a read asks for, parsed as Redis's `xreadCommand` parses it.
    struct Request {
        var count = 0
        var block: Int64? = nil
        var keys: [[UInt8]] = []
        var ids: [[UInt8]] = []
        var group: [UInt8]? = nil
        var consumer: [UInt8] = []
        var noAck = false
    }

    static func parse(_ call: Call, group: Bool) throws(CommandError) -> Request {
        var r = Request()
        var streamsAt = 0
        var i = 1
        let name = group ? "xreadgroup" : "xread"
        while i < call.count {
            let more = call.count - i - 1
            let word = call[i]
            if word.isKeyword("BLOCK") && more > 0 {
                if call.engine.scripting.isRunning(for: call.session) {
                    throw CommandError("ERR", "\(name) command is not allowed with BLOCK option from scripts")
                }
                i += 1
                r.block = try call.timeout(i, .milliseconds)
            } else if word.isKeyword("COUNT") && more > 0 {
                i += 1
                r.count = Int(clamping: max(0, try call.integer(i)))
            } else if word.isKeyword("STREAMS") && more > 0 {
                streamsAt = i + 1
                guard (call.count - streamsAt) % 2 == 0 else {
                    throw CommandError("ERR", "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
                }
                break
            } else if word.isKeyword("GROUP") && more >= 2 {
                guard group else { throw CommandError("ERR", "The GROUP option is only supported by XREADGROUP. You called XREAD instead.") }
                r.group = call[i + 1]
                r.consumer = call[i + 2]
                i += 2
            } else if word.isKeyword("NOACK") {
                guard group else { throw CommandError("ERR", "The NOACK option is only supported by XREADGROUP. You called XREAD instead.") }
                r.noAck = true
            } else {
                throw .syntax
            }
            i += 1
        }
        guard streamsAt > 0 else { throw .syntax }
        if group && r.group == nil { throw CommandError("ERR", "Missing GROUP option for XREADGROUP") }
        let n = (call.count - streamsAt) / 2
        r.keys = Array(call.argv[streamsAt..<(streamsAt + n)])
        r.ids = Array(call.argv[(streamsAt + n)...])
        return r
    }

    static func read(_ call: Call, group: Bool, _ out: inout RESPWriter) throws(CommandError) {
        let r = try parse(call, group: group)
        if let name = r.group {
            try readGroup(call, r, name, &out)
            return
        }
        // Each stream's ID, `$` resolved now; types checked before anything is served.
        var after: [StreamID] = []
        for (key, id) in zip(r.keys, r.ids) {
            let meta = try call.stream(key)
            if id == [UInt8(ascii: "$")] {
                after.append(meta?.stream.lastID ?? .zero)
            } else if id == [UInt8(ascii: ">")] {
                throw CommandError("ERR", "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
            } else {
                after.append(try StreamID.strict(id))
            }
        }
        let keys = r.keys, count = r.count, afterIDs = after
        let attempt: BlockRequest.Attempt = { call, out, retrying throws(CommandError) -> Bool in
            var served: [([UInt8], [(StreamID, [[UInt8]]?)])] = []
            for (key, id) in zip(keys, afterIDs) {
                let meta: CollectionMetadata?
                do throws(CommandError) {
                    meta = try call.stream(key)
                } catch {
                    // Replaced by another type while the client waited: not ready.
                    if retrying && error == .wrongType { continue }
                    throw error
                }
                guard let meta else {
                    if !retrying { call.missedAgain(key) }
                    continue
                }
                guard meta.size > 0, let start = id.next else { continue }
                let entries = try call.entries(meta, of: key, from: start, to: .max, count: count)
                if !entries.isEmpty { served.append((key, entries.map { ($0.id, $0.fields) })) }
            }
            guard !served.isEmpty else { return false }
            reply(served, &out)
            return true
        }
        guard let timeout = r.block else {
            if try !attempt(call, &out, false) { out.nullArray() }
            return
        }
        try call.block(keys: keys, timeout: timeout, out: &out, empty: { $0.nullArray() }, attempt: attempt)
    }

    /// Per stream served, its key and entries (`[id, fields]`, fields nil for a pending entry
    /// deleted since: XREADGROUP's history): an array of pairs, a map in RESP3.
    static func reply(_ served: [([UInt8], [(StreamID, [[UInt8]]?)])], _ out: inout RESPWriter) {
        if out.version == .v3 { out.mapHeader(served.count) } else { out.arrayHeader(served.count) }
        for (key, entries) in served {
            if out.version != .v3 { out.arrayHeader(2) }
            out.bulk(key)
            out.arrayHeader(entries.count)
            for (id, fields) in entries {
                out.arrayHeader(2)
                out.bulk(id.text)
                if let fields {
                    out.arrayHeader(fields.count)
                    for f in fields { out.bulk(f) }
                } else {
                    out.nullArray()
                }
            }
        }
    }

    static func noGroup(_ key: [UInt8], _ group: [UInt8]) -> CommandError {
        CommandError("NOGROUP", "No such key '\(Bytes.text(key))' or consumer group '\(Bytes.text(group))' in XREADGROUP with GROUP option")
    }

    static func readGroup(_ call: Call, _ r: Request, _ groupName: [UInt8], _ out: inout RESPWriter) throws(CommandError) {
        // nil: `>`, new entries; otherwise the consumer's pending entries after this ID.
        var history: [StreamID?] = []
        for (key, id) in zip(r.keys, r.ids) {
            guard let meta = try call.stream(key), try call.group(meta, of: key, groupName) != nil else { throw noGroup(key, groupName) }
            if id == [UInt8(ascii: "$")] {
                throw CommandError("ERR", "The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
            }
            history.append(id == [UInt8(ascii: ">")] ? nil : try StreamID.strict(id))
        }
        let keys = r.keys, count = r.count, consumer = r.consumer, noAck = r.noAck, afterIDs = history
        let attempt: BlockRequest.Attempt = { call, out, retrying throws(CommandError) -> Bool in
            try call.locked(keys) { () throws(CommandError) -> Bool in
                var served: [([UInt8], [(StreamID, [[UInt8]]?)])] = []
                for (key, after) in zip(keys, afterIDs) {
                    guard var change = try call.existing(key, .stream), var group = try call.group(change, groupName) else {
                        throw noGroup(key, groupName)
                    }
                    let createdConsumer = try !call.consumerExists(change, group: groupName, consumer)
                    change.putConsumer(group: groupName, consumer, seen: call.now)
                    let servedBefore = served.count
                    if let after {
                        served.append((key, try pendingOf(call, &change, group: groupName, consumer, after: after, count: count)))
                    } else if change.meta.size > 0, change.meta.stream.lastID > group.lastID, let start = group.lastID.next,
                              case let entries = try call.entries(change.meta, of: key, from: start, to: .max, count: count),
                              !entries.isEmpty {
                        // The first entry's ID matters to the read counter only after an XDEL
                        // or when the counter is unknown (StreamLag): not read otherwise.
                        let needsFirst = change.meta.stream.maxDeletedID != .zero || group.entriesRead == StreamLag.unknown
                        let lag = needsFirst ? try call.lag(change.meta, of: key)
                                             : StreamLag(counters: change.meta.stream, length: change.meta.size, firstID: .zero)
                        for e in entries {
                            group.entriesRead = lag.advanced(group, to: e.id)
                            group.lastID = e.id
                            if !noAck {
                                change.putPending(group: groupName, PendingEntry(id: e.id, deliveryTime: call.now, deliveryCount: 1, consumer: consumer))
                            }
                        }
                        change.putGroup(group)
                        served.append((key, entries.map { ($0.id, $0.fields) }))
                    }
                    // A retry that serves nothing writes nothing: its write would wake this
                    // waiter again, for ever (the consumer was recorded by the first try).
                    if served.count > servedBefore || !retrying {
                        try call.commit(change)
                        if createdConsumer { call.notify(.stream, "xgroup-createconsumer", key) }
                    }
                }
                guard !served.isEmpty else { return false }
                reply(served, &out)
                return true
            }
        }
        guard let timeout = r.block else {
            if try !attempt(call, &out, false) { out.nullArray() }
            return
        }
        try call.block(keys: keys, timeout: timeout, out: &out, empty: { $0.nullArray() }, attempt: attempt)
    }

    /// The consumer's pending entries after `after` (at most `count`, 0: all), each delivered
    /// once more; a deleted entry comes back with no fields, as in Redis.
    static func pendingOf(_ call: Call, _ change: inout CollectionChange, group: [UInt8], _ consumer: [UInt8],
                          after: StreamID, count: Int) throws(CommandError) -> [(StreamID, [[UInt8]]?)] {
        guard let start = after.next else { return [] }
        var mine: [PendingEntry] = []
        try call.scanPending(change.meta, of: change.key, group: group, from: start) { p in
            if p.consumer == consumer { mine.append(p) }
            return count == 0 || mine.count < count
        }
        var out: [(StreamID, [[UInt8]]?)] = []
        for var p in mine {
            if let e = try call.entry(change.meta, of: change.key, p.id) {
                p.deliveryTime = call.now
                p.deliveryCount += 1
                change.putPending(group: group, p)
                out.append((p.id, e.fields))
            } else {
                out.append((p.id, nil))
            }
        }
        return out
    }
}
