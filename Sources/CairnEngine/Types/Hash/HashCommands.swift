import RESP

/// The hash family: https://redis.io/docs/latest/commands/?group=hash
///
/// A hash is its metadata under the key and one members-family entry per field, the field as
/// sub-key and its value as the entry's value (`MemberKeys`), so HGET of one field of a huge
/// hash is one point lookup and HGETALL/HSCAN an ordered scan (fields come back in byte order).
enum HashCommands {
    /// Every write runs batched with its connection's neighbours (`Engine.executeBatched`).
    static let all: [Command] = Command.batchingWrites(commands)

    private static let commands: [Command] = [
        Command("hset") {
            call, out throws(CommandError) in
            out.integer(try set(call))
        },
        Command("hmset") {
            call, out throws(CommandError) in
            _ = try set(call)
            out.simpleString("OK")
        },
        Command("hsetnx") {
            call, out throws(CommandError) in
            let created = try call.locked(call[1]) { () throws(CommandError) -> Bool in
                var change = try call.change(call[1], .hash)
                if change.existed, try call.member(change, .member, call[2]) != nil { return false }
                change.put(.member, call[2], call[3])
                change.meta.size += 1
                try call.commit(change)
                call.notify(.hash, "hset", call[1])
                return true
            }
            out.integer(created ? 1 : 0)
        },
        Command("hget") { call, out throws(CommandError) in
            guard let meta = try call.collection(call[1], .hash), let value = try call.member(meta, of: call[1], .member, call[2]) else {
                out.null()
                return
            }
            out.bulk(value)
        },
        Command("hmget") { call, out throws(CommandError) in
            let fields = Array(call.argv[2...])
            let values = try call.collection(call[1], .hash).map { (meta: CollectionMetadata) throws(CommandError) -> [[UInt8]?] in
                try call.members(meta, of: call[1], .member, fields)
            } ?? Array(repeating: nil, count: fields.count)
            out.arrayHeader(values.count)
            for v in values { if let v { out.bulk(v) } else { out.null() } }
        },
        Command("hdel") { call, out throws(CommandError) in
            let removed = try call.locked(call[1]) { () throws(CommandError) -> Int in
                guard var change = try call.existing(call[1], .hash) else { return 0 }
                var seen = Set<ByteKey>()
                let fields = call.argv[2...].filter { seen.insert(ByteKey($0)).inserted }
                let present = try call.members(change, .member, fields)
                for (field, value) in zip(fields, present) where value != nil { change.delete(.member, field) }
                let n = present.filter { $0 != nil }.count
                change.meta.size -= UInt64(n)
                if n > 0 {
                    try call.commit(change)
                    call.notify(.hash, "hdel", call[1])
                    if change.meta.size == 0 { call.notify(.generic, "del", call[1]) }
                }
                return n
            }
            out.integer(removed)
        },
        Command("hlen") { call, out throws(CommandError) in
            out.integer(Int64(try call.collection(call[1], .hash)?.size ?? 0))
        },
        Command("hstrlen") { call, out throws(CommandError) in
            let value = try call.collection(call[1], .hash).flatMap { (meta: CollectionMetadata) throws(CommandError) -> [UInt8]? in
                try call.member(meta, of: call[1], .member, call[2])
            }
            out.integer(value?.count ?? 0)
        },
        Command("hexists") { call, out throws(CommandError) in
            let value = try call.collection(call[1], .hash).flatMap { (meta: CollectionMetadata) throws(CommandError) -> [UInt8]? in
                try call.member(meta, of: call[1], .member, call[2])
            }
            out.integer(value == nil ? 0 : 1)
        },
        Command("hkeys") { call, out throws(CommandError) in
            try writeAll(call, &out) { field, _, w in w.bulk(field) }
        }.measuringMembers(),
        Command("hvals") { call, out throws(CommandError) in
            try writeAll(call, &out) { _, value, w in w.bulk(value) }
        }.measuringMembers(),
        Command("hgetall") { call, out throws(CommandError) in
            try writeAll(call, &out, map: true) { field, value, w in
                w.bulk(field)
                w.bulk(value)
            }
        }.measuringMembers(),
        Command("hincrby") { call, out throws(CommandError) in
            let delta = try call.integer(3)
            let result = try call.locked(call[1]) { () throws(CommandError) -> Int64 in
                var change = try call.change(call[1], .hash)
                let old = change.existed ? try call.member(change, .member, call[2]) : nil
                var base: Int64 = 0
                if let old {
                    guard let v = Bytes.int64(old) else { throw CommandError("ERR", "hash value is not an integer") }
                    base = v
                }
                let (sum, overflow) = base.addingReportingOverflow(delta)
                if overflow { throw .overflow }
                change.put(.member, call[2], Bytes.decimal(sum))
                if old == nil { change.meta.size += 1 }
                try call.commit(change)
                call.notify(.hash, "hincrby", call[1])
                return sum
            }
            out.integer(result)
        },
        Command("hincrbyfloat") { call, out throws(CommandError) in
            // In a C long double, as INCRBYFLOAT (StringCommands).
            guard let delta = LongDoubles.parse(call[3]) else { throw .notFloat }
            guard delta.isFinite else { throw CommandError("ERR", "value is NaN or Infinity") }
            let text = try call.locked(call[1]) { () throws(CommandError) -> String in
                var change = try call.change(call[1], .hash)
                let old = change.existed ? try call.member(change, .member, call[2]) : nil
                var base: LongDouble = 0
                if let old {
                    guard let v = LongDoubles.parse(old) else { throw CommandError("ERR", "hash value is not a float") }
                    base = v
                }
                let sum = base + delta
                guard sum.isFinite else { throw CommandError("ERR", "increment would produce NaN or Infinity") }
                let text = LongDoubles.human(sum)
                change.put(.member, call[2], Array(text.utf8))
                if old == nil { change.meta.size += 1 }
                try call.commit(change)
                call.notify(.hash, "hincrbyfloat", call[1])
                return text
            }
            out.bulk(text)
        },
        Command("hrandfield", handler: randomField),
        Command("hscan") {
            call, out throws(CommandError) in
            try MemberScan.reply(call, .hash, &out) { value, out in out.bulk(value) }
        },
    ]

    /// HSET and HMSET: the number of fields created.
    static func set(_ call: Call) throws(CommandError) -> Int {
        guard call.count % 2 == 0 else { throw .arity(call.name) }
        return try call.locked(call[1]) { () throws(CommandError) -> Int in
            var change = try call.change(call[1], .hash)
            // Fields in first-given order, each with its last value (a field given twice: the last
            // value wins); one pair needs no dictionary.
            var fields: [[UInt8]] = [call[2]]
            var values: [[UInt8]] = [call[3]]
            if call.count > 4 {
                var at: [ByteKey: Int] = [ByteKey(call[2]): 0]
                for i in stride(from: 4, to: call.count, by: 2) {
                    if let j = at[ByteKey(call[i])] {
                        values[j] = call[i + 1]
                    } else {
                        at[ByteKey(call[i])] = fields.count
                        fields.append(call[i])
                        values.append(call[i + 1])
                    }
                }
            }
            let present = change.existed ? try call.members(change, .member, fields) : Array(repeating: nil, count: fields.count)
            var created = 0
            for i in fields.indices {
                change.put(.member, fields[i], values[i])
                if present[i] == nil { created += 1 }
            }
            change.meta.size += UInt64(created)
            try call.commit(change)
            call.notify(.hash, "hset", call[1])
            return created
        }
    }

    /// Every field and value, in field order.
    /// HKEYS, HVALS, HGETALL: `item` writes each field's part of the reply straight from the
    /// cursor's buffers (nothing copied per field but into the reply), counted as it goes, the
    /// header written once the count is known.
    static func writeAll(
        _ call: Call, _ out: inout RESPWriter, map: Bool = false,
        _ item: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, inout RESPWriter) -> Void
    ) throws(CommandError) {
        var items = RESPWriter(version: out.version)
        var count = 0
        if let meta = try call.collection(call[1], .hash) {
            try call.visitMembers(meta, of: call[1], .member) { field, value in
                item(field, value, &items)
                count += 1
                return true
            }
        }
        if map { out.mapHeader(count) } else { out.arrayHeader(count) }
        out.bytes.append(contentsOf: items.bytes)
    }

    /// HRANDFIELD: https://redis.io/docs/latest/commands/hrandfield/
    static func randomField(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let (count, withValues) = try RandomMembers.arguments(call, with: "WITHVALUES")
        let meta = try call.collection(call[1], .hash)
        guard let count else {
            guard let meta, let pick = try RandomMembers.pick(call, meta, of: call[1], count: 1, distinct: true).first else { out.null(); return }
            out.bulk(pick.sub)
            return
        }
        guard let meta, count != 0 else { out.arrayHeader(0); return }
        let picks = try RandomMembers.pick(call, meta, of: call[1], count: Int(clamping: count.magnitude), distinct: count > 0)
        if withValues && out.version == .v3 {
            out.arrayHeader(picks.count)
            for p in picks {
                out.arrayHeader(2)
                out.bulk(p.sub)
                out.bulk(p.value)
            }
            return
        }
        out.arrayHeader(withValues ? picks.count * 2 : picks.count)
        for p in picks {
            out.bulk(p.sub)
            if withValues { out.bulk(p.value) }
        }
    }
}
