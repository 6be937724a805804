import RESP

/// The stream family: https://redis.io/docs/latest/commands/?group=stream
///
/// A stream is its metadata under the key (length, ID counters: `StreamCounters`) and one
/// members-family entry per stream entry, its 16-byte ID as sub-key (`StreamEntry`), so XADD
/// is one write, XRANGE an ordered scan from a seek, and DEL of a stream of any length O(1)
/// through its version, as for the other collections. Consumer groups live under the same
/// version (`StreamGroups`). Unlike the other collections, an emptied stream stays.
enum StreamCommands {
    /// Every write runs batched with its connection's neighbours (`Engine.executeBatched`).
    static let all: [Command] = Command.batchingWrites(commands)

    private static let commands: [Command] = [
        Command("xadd", handler: add),
        Command("xlen") { call, out throws(CommandError) in
            out.integer(Int64(try call.stream(call[1])?.size ?? 0))
        },
        Command("xrange") { call, out throws(CommandError) in
            try range(call, reverse: false, &out)
        }.measuringWork { _, call throws(CommandError) in try rangeWork(call) },
        Command("xrevrange") { call, out throws(CommandError) in
            try range(call, reverse: true, &out)
        }.measuringWork { _, call throws(CommandError) in try rangeWork(call) },
        Command("xdel", handler: delete),
        Command("xtrim", handler: trim),
        Command("xsetid", handler: setID),
    ]

    static func add(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let options = try StreamTrim(call, xadd: true)
        let fieldsAt = options.idAt + 1
        guard call.count - fieldsAt >= 2, (call.count - fieldsAt) % 2 == 0 else { throw .arity("xadd") }
        if let id = options.id, options.sequenceGiven, id == .zero {
            throw CommandError("ERR", "The ID specified in XADD must be greater than 0-0")
        }
        let added = try call.locked(call[1]) { () throws(CommandError) -> StreamID? in
            guard var change = options.noMakeStream ? try call.existing(call[1], .stream) : try call.change(call[1], .stream) else {
                return nil
            }
            var counters = change.meta.stream
            if counters.lastID == .max {
                throw CommandError("ERR", "The stream has exhausted the last possible ID, unable to add more items")
            }
            let id: StreamID
            if let given = options.id {
                if !options.sequenceGiven && given.ms == counters.lastID.ms {
                    guard counters.lastID.seq < .max else { throw tooSmall }
                    id = StreamID(ms: given.ms, seq: counters.lastID.seq + 1)
                } else {
                    id = given
                }
            } else {
                let now = UInt64(max(0, call.now))
                id = now > counters.lastID.ms ? StreamID(ms: now, seq: 0) : counters.lastID.next!
            }
            guard id > counters.lastID else { throw tooSmall }
            let node = StreamNodes.place(&counters, streamEmpty: change.meta.size == 0)
            counters.lastID = id
            counters.entriesAdded += 1
            change.meta.stream = counters
            change.put(.member, id.bytes, StreamEntry.encode(node: node, call.argv[fieldsAt...]))
            change.meta.size += 1
            let trimmed = try options.apply(call, &change, added: (id, node))
            try call.commit(change)
            call.notify(.stream, "xadd", call[1])
            if trimmed > 0 { call.notify(.stream, "xtrim", call[1]) }
            return id
        }
        guard let added else {
            out.null()
            return
        }
        out.bulk(added.text)
    }

    /// How many entries an XRANGE may read: its COUNT, or the whole stream. Past the long-work
    /// threshold it runs off the connection's worker (LongWork.swift), as HGETALL does.
    static func rangeWork(_ call: Call) throws(CommandError) -> UInt64 {
        let size = try call.collectionSize(call[1])
        guard let at = call.argv.indices.dropFirst(4).last(where: { call[$0].isKeyword("COUNT") }), at + 1 < call.count,
              let n = Bytes.int64(call[at + 1]) else { return size }
        return min(size, UInt64(max(0, n)))
    }

    static let tooSmall = CommandError("ERR", "The ID specified in XADD is equal or smaller than the target stream top item")

    /// XRANGE key start end [COUNT n] and XREVRANGE key end start [COUNT n].
    static func range(_ call: Call, reverse: Bool, _ out: inout RESPWriter) throws(CommandError) {
        let start = try StreamID.bound(call[reverse ? 3 : 2], start: true)
        let end = try StreamID.bound(call[reverse ? 2 : 3], start: false)
        var count: Int64 = -1
        var i = 4
        while i < call.count {
            guard call[i].isKeyword("COUNT"), i + 1 < call.count else { throw .syntax }
            count = max(0, try call.integer(i + 1))
            i += 2
        }
        guard let meta = try call.stream(call[1]) else {
            out.arrayHeader(0)
            return
        }
        guard count != 0 else {
            out.nullArray()
            return
        }
        let found = try call.entries(meta, of: call[1], from: start, to: end, count: count < 0 ? 0 : Int(clamping: count), reverse: reverse)
        out.arrayHeader(found.count)
        for e in found { e.write(to: &out) }
    }

    static func delete(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let deleted = try call.locked(call[1]) { () throws(CommandError) -> Int in
            guard var change = try call.existing(call[1], .stream) else { return 0 }
            var ids: [StreamID] = []
            for i in 2..<call.count { ids.append(try StreamID.strict(call[i])) }
            var n = 0
            var seen = Set<StreamID>()
            for id in ids where seen.insert(id).inserted {
                guard let value = try call.member(change, .member, id.bytes) else { continue }
                change.delete(.member, id.bytes)
                change.meta.size -= 1
                StreamNodes.removed(&change.meta.stream, from: StreamEntry.node(value))
                if id > change.meta.stream.maxDeletedID { change.meta.stream.maxDeletedID = id }
                n += 1
            }
            if n > 0 {
                try call.commit(change)
                call.notify(.stream, "xdel", call[1])
            }
            return n
        }
        out.integer(deleted)
    }

    static func trim(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let deleted = try call.locked(call[1]) { () throws(CommandError) -> Int64 in
            guard var change = try call.existing(call[1], .stream) else { return 0 }
            let options = try StreamTrim(call, xadd: false)
            let n = try options.apply(call, &change)
            if n > 0 {
                try call.commit(change)
                call.notify(.stream, "xtrim", call[1])
            }
            return n
        }
        out.integer(deleted)
    }

    /// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]
    static func setID(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let id = try StreamID.strict(call[2])
        var entriesAdded: Int64 = -1
        var maxDeleted = StreamID.zero
        var i = 3
        while i < call.count {
            let more = call.count - 1 - i
            if call[i].isKeyword("ENTRIESADDED") && more > 0 {
                entriesAdded = try call.integer(i + 1)
                guard entriesAdded >= 0 else { throw CommandError("ERR", "entries_added must be positive") }
            } else if call[i].isKeyword("MAXDELETEDID") && more > 0 {
                maxDeleted = try StreamID.strict(call[i + 1])
                guard id >= maxDeleted else {
                    throw CommandError("ERR", "The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
                }
            } else {
                throw .syntax
            }
            i += 2
        }
        try call.locked(call[1]) { () throws(CommandError) in
            guard var change = try call.existing(call[1], .stream) else { throw .noSuchKey }
            if change.meta.size > 0 {
                if let top = try call.edgeID(change.meta, of: call[1], last: true), id < top {
                    throw CommandError("ERR", "The ID specified in XSETID is smaller than the target stream top item")
                }
                if entriesAdded != -1 && Int64(change.meta.size) > entriesAdded {
                    throw CommandError("ERR", "The entries_added specified in XSETID is smaller than the target stream length")
                }
            }
            change.meta.stream.lastID = id
            if entriesAdded != -1 { change.meta.stream.entriesAdded = UInt64(entriesAdded) }
            if maxDeleted != .zero { change.meta.stream.maxDeletedID = maxDeleted }
            change.rewritesMetadata = true
            try call.commit(change)
            call.notify(.stream, "xsetid", call[1])
        }
        out.simpleString("OK")
    }
}
