import RESP

/// The list family: https://redis.io/docs/latest/commands/?group=list
///
/// Storage in ListStore.swift: one entry per element at its position, so pushes, pops, LINDEX
/// and LSET are point operations and LRANGE a scan. Differs from Redis: LINSERT and LREM
/// rewrite the positions on the shorter side of the change, O(n) writes (Redis moves memory).
enum ListCommands {
    /// Every write runs batched with its connection's neighbours (`Engine.executeBatched`); the
    /// blocking pops (BlockingListCommands) never do.
    static let all: [Command] = Command.batchingWrites(commands)

    private static let commands: [Command] = [
        Command("lpush") { call, out throws(CommandError) in
            out.integer(try push(call, .left, onlyExisting: false))
        },
        Command("rpush") { call, out throws(CommandError) in
            out.integer(try push(call, .right, onlyExisting: false))
        },
        Command("lpushx") { call, out throws(CommandError) in
            out.integer(try push(call, .left, onlyExisting: true))
        },
        Command("rpushx") { call, out throws(CommandError) in
            out.integer(try push(call, .right, onlyExisting: true))
        },
        Command("lpop") { call, out throws(CommandError) in
            try pop(call, .left, &out)
        },
        Command("rpop") { call, out throws(CommandError) in
            try pop(call, .right, &out)
        },
        Command("llen") { call, out throws(CommandError) in
            out.integer(Int64(try call.list(call[1])?.size ?? 0))
        },
        Command("lrange") { call, out throws(CommandError) in
            let start = try call.integer(2), stop = try call.integer(3)
            guard let meta = try call.list(call[1]), let (from, to) = Call.listRange(start, stop, size: meta.size) else {
                out.arrayHeader(0)
                return
            }
            // Written from the cursor's buffers as they are visited, under the header the
            // metadata's size promises (corrected should the entries disagree).
            let expected = Int(to - from + 1)
            let mark = out.bytes.count
            out.arrayHeader(expected)
            let first = out.bytes.count
            var count = 0
            do throws(CommandError) {
                try call.visitMembers(meta, of: call[1], .member, from: MemberKeys.position(meta.head + from),
                                      to: MemberKeys.position(meta.head + to + 1)) { _, value in
                    out.bulk(value)
                    count += 1
                    return true
                }
            } catch {
                out.bytes.removeSubrange(mark...)  // a scan that failed part way: the error alone
                throw error
            }
            if count != expected {
                let elements = Array(out.bytes[first...])
                out.bytes.removeSubrange(mark...)
                out.arrayHeader(count)
                out.bytes.append(contentsOf: elements)
            }
        }.measuringRange(start: 2, stop: 3),
        Command("lindex") { call, out throws(CommandError) in
            // The key before the index, as Redis checks them: a missing key is nil whatever
            // the index.
            guard let meta = try call.list(call[1]) else {
                out.null()
                return
            }
            let index = try call.integer(2)
            guard let p = call.position(ofIndex: index, in: meta),
                  let value = try call.member(meta, of: call[1], .member, MemberKeys.position(p)) else {
                out.null()
                return
            }
            out.bulk(value)
        },
        Command("lset") {
            call, out throws(CommandError) in
            try call.locked(call[1]) { () throws(CommandError) in
                // The key before the index, as Redis checks them.
                guard let meta = try call.list(call[1]) else { throw .noSuchKey }
                let index = try call.integer(2)
                guard let p = call.position(ofIndex: index, in: meta) else { throw CommandError("ERR", "index out of range") }
                var change = CollectionChange(key: call[1], meta: meta, family: call.family.name, existed: true)
                change.put(.member, MemberKeys.position(p), call[3])
                try call.commit(change)
                call.notify(.list, "lset", call[1])
            }
            out.simpleString("OK")
        },
        Command("linsert", handler: insert).measuringMembers(),
        Command("lrem", handler: remove).measuringMembers(),
        Command("ltrim", handler: trim).measuringMembers(),
        Command("lpos", handler: position).measuringMembers(),
        Command("lmove") { call, out throws(CommandError) in
            guard let from = ListEnd(call[3]), let to = ListEnd(call[4]) else { throw .syntax }
            if let e = try call.move(call[1], call[2], from, to) { out.bulk(e) } else { out.null() }
        },
        Command("rpoplpush") { call, out throws(CommandError) in
            if let e = try call.move(call[1], call[2], .right, .left) { out.bulk(e) } else { out.null() }
        },
        Command("lmpop") { call, out throws(CommandError) in
            let request = try MultiPop(call, numkeysAt: 1)
            if let (key, elements) = try call.popFirst(request.keys, from: request.end, count: request.count) {
                MultiPop.reply(key, elements, &out)
            } else {
                out.nullArray()
            }
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
    ]

    /// LPUSH, RPUSH, LPUSHX, RPUSHX: the list's length after the push (0 for the X forms on a
    /// missing key).
    static func push(_ call: Call, _ end: ListEnd, onlyExisting: Bool) throws(CommandError) -> Int64 {
        try call.locked(call[1]) { () throws(CommandError) -> Int64 in
            var change: CollectionChange
            if onlyExisting {
                guard let existing = try call.existing(call[1], .list) else { return 0 }
                change = existing
            } else {
                change = try call.change(call[1], .list)
            }
            call.push(call.argv[2...], to: end, of: &change)
            try call.commit(change)
            call.notify(.list, end.pushEvent, call[1])
            return Int64(change.meta.size)
        }
    }

    /// LPOP and RPOP: https://redis.io/docs/latest/commands/lpop/
    static func pop(_ call: Call, _ end: ListEnd, _ out: inout RESPWriter) throws(CommandError) {
        guard call.count <= 3 else { throw .arity(call.name) }
        let count: Int64? = try call.count == 3 ? call.positiveInteger(2) : nil
        let popped = try call.locked(call[1]) { () throws(CommandError) -> [[UInt8]]? in
            guard var change = try call.existing(call[1], .list) else { return nil }
            let elements = try call.pop(Int(clamping: count ?? 1), from: end, of: &change)
            if !elements.isEmpty {
                try call.commit(change)
                call.notifyPopped(call[1], end, emptied: change.meta.size == 0)
            }
            return elements
        }
        guard count != nil else {
            if let e = popped?.first { out.bulk(e) } else { out.null() }
            return
        }
        guard let popped else {
            out.nullArray()
            return
        }
        out.arrayHeader(popped.count)
        for e in popped { out.bulk(e) }
    }

    /// LINSERT: https://redis.io/docs/latest/commands/linsert/ — the new length, -1 when the
    /// pivot is missing, 0 when the key is.
    static func insert(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let before: Bool
        if call[2].isKeyword("BEFORE") {
            before = true
        } else if call[2].isKeyword("AFTER") {
            before = false
        } else {
            throw .syntax
        }
        let result = try call.locked(call[1]) { () throws(CommandError) -> Int64 in
            guard let meta = try call.list(call[1]) else { return 0 }
            var pivot: UInt64? = nil
            var index: UInt64 = 0
            try call.scanMembers(meta, of: call[1], .member) { _, value in
                if value == call[3] {
                    pivot = index
                    return false
                }
                index += 1
                return true
            }
            guard let pivot else { return -1 }
            var change = CollectionChange(key: call[1], meta: meta, family: call.family.name, existed: true)
            let at = before ? pivot : pivot + 1
            if at <= meta.size - at {
                // Fewer elements in front: they move one place toward the head.
                let front = at == 0 ? [] : try call.elements(of: call[1], meta, from: 0, to: at - 1)
                call.rewriteFront(&change, count: at, as: front + [call[4]])
            } else {
                let back = try call.elements(of: call[1], meta, from: at, to: meta.size - 1)
                call.rewrite(&change, from: at, as: [call[4]] + back)
            }
            try call.commit(change)
            call.notify(.list, "linsert", call[1])
            return Int64(change.meta.size)
        }
        out.integer(result)
    }

    /// LREM: https://redis.io/docs/latest/commands/lrem/ — removes the first `count` matches
    /// (from the tail when negative, all when 0); the elements on the shorter side of the
    /// removed ones are rewritten.
    static func remove(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let count = try call.integer(2)
        let removed = try call.locked(call[1]) { () throws(CommandError) -> Int in
            guard let meta = try call.list(call[1]) else { return 0 }
            let all = try call.elements(of: call[1], meta, from: 0, to: meta.size - 1)
            var drop = Set<Int>()
            let limit = count == 0 ? Int.max : Int(clamping: count.magnitude)
            let order: [Int] = count < 0 ? Array(all.indices.reversed()) : Array(all.indices)
            for i in order where drop.count < limit && all[i] == call[3] { drop.insert(i) }
            guard let first = drop.min(), let last = drop.max() else { return 0 }
            var change = CollectionChange(key: call[1], meta: meta, family: call.family.name, existed: true)
            if UInt64(last + 1) <= meta.size - UInt64(first) {
                let kept = all[0...last].indices.filter { !drop.contains($0) }.map { all[$0] }
                call.rewriteFront(&change, count: UInt64(last + 1), as: kept)
            } else {
                let kept = all[first...].indices.filter { !drop.contains($0) }.map { all[$0] }
                call.rewrite(&change, from: UInt64(first), as: kept)
            }
            try call.commit(change)
            call.notify(.list, "lrem", call[1])
            if change.meta.size == 0 { call.notify(.generic, "del", call[1]) }
            return drop.count
        }
        out.integer(removed)
    }

    /// LTRIM: https://redis.io/docs/latest/commands/ltrim/ — deletes the elements outside the
    /// range at their computed positions (an emptied list goes at once, with its version).
    static func trim(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let start = try call.integer(2), stop = try call.integer(3)
        try call.locked(call[1]) { () throws(CommandError) in
            guard let meta = try call.list(call[1]) else { return }
            var change = CollectionChange(key: call[1], meta: meta, family: call.family.name, existed: true)
            guard let (from, to) = Call.listRange(start, stop, size: meta.size) else {
                change.meta.size = 0
                try call.commit(change)
                call.notify(.list, "ltrim", call[1])
                call.notify(.generic, "del", call[1])
                return
            }
            for p in meta.head..<meta.head + from { change.delete(.member, MemberKeys.position(p)) }
            for p in meta.head + to + 1..<meta.tail { change.delete(.member, MemberKeys.position(p)) }
            change.meta.head = meta.head + from
            change.meta.tail = meta.head + to + 1
            change.meta.size = to - from + 1
            if change.meta.size != meta.size { try call.commit(change) }
            call.notify(.list, "ltrim", call[1])
        }
        out.simpleString("OK")
    }

    /// LPOS: https://redis.io/docs/latest/commands/lpos/
    static func position(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var rank: Int64 = 1
        var count: Int64? = nil
        var maxlen: Int64 = 0
        var i = 3
        while i < call.count {
            guard i + 1 < call.count else { throw .syntax }
            if call[i].isKeyword("RANK") {
                rank = try call.integer(i + 1)
                if rank == 0 {
                    throw CommandError("ERR", "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
                }
            } else if call[i].isKeyword("COUNT") {
                // Redis answers these texts for a non-integer too.
                count = try call.positiveInteger(i + 1, message: "COUNT can't be negative")
            } else if call[i].isKeyword("MAXLEN") {
                maxlen = try call.positiveInteger(i + 1, message: "MAXLEN can't be negative")
            } else {
                throw .syntax
            }
            i += 2
        }
        var matches: [Int64] = []
        if let meta = try call.list(call[1]) {
            let reverse = rank < 0
            // Redis 7.0 negates RANK in a 64-bit integer: the lowest value stays negative and
            // skips no match.
            var skip = rank == .min ? 0 : rank.magnitude - 1
            let wanted = count.map { $0 == 0 ? Int.max : Int(clamping: $0) } ?? 1
            var seen: Int64 = 0
            try call.scanMembers(meta, of: call[1], .member, reverse: reverse) { _, value in
                if maxlen > 0 && seen == maxlen { return false }
                let index = reverse ? Int64(meta.size) - 1 - seen : seen
                seen += 1
                if value == call[2] {
                    if skip > 0 {
                        skip -= 1
                    } else {
                        matches.append(index)
                        if matches.count == wanted { return false }
                    }
                }
                return true
            }
        }
        guard count != nil else {
            if let m = matches.first { out.integer(m) } else { out.null() }
            return
        }
        out.arrayHeader(matches.count)
        for m in matches { out.integer(m) }
    }
}

/// `numkeys key [key ...] LEFT|RIGHT [COUNT count]` of LMPOP and BLMPOP.
struct MultiPop {
    var keys: [[UInt8]]
    var end: ListEnd
    var count = 1

    init(_ call: Call, numkeysAt at: Int) throws(CommandError) {
        let parsed = try call.multiPop(numkeysAt: at) { ListEnd($0) }
        (keys, end, count) = (parsed.keys, parsed.end, parsed.count)
    }

    /// `[key, [element ...]]`.
    static func reply(_ key: [UInt8], _ elements: [[UInt8]], _ out: inout RESPWriter) {
        out.arrayHeader(2)
        out.bulk(key)
        out.arrayHeader(elements.count)
        for e in elements { out.bulk(e) }
    }
}

extension ListEnd {
    /// The keyspace event of a push or a pop at this end.
    var pushEvent: String { self == .left ? "lpush" : "rpush" }
    var popEvent: String { self == .left ? "lpop" : "rpop" }
}

extension Call {
    /// After a pop from list `key`: `lpop`/`rpop`, then `del` when it emptied the list.
    func notifyPopped(_ key: [UInt8], _ end: ListEnd, emptied: Bool) {
        notify(.list, end.popEvent, key)
        if emptied { notify(.generic, "del", key) }
    }

    /// The list at `key`; with `skippingOtherTypes` a key of another type reads as missing
    /// (a blocked client's retry waits on, as Redis serves waiters only from lists).
    func list(_ key: [UInt8], skippingOtherTypes: Bool) throws(CommandError) -> CollectionMetadata? {
        guard skippingOtherTypes else { return try list(key) }
        return try withStored(key) { type, payload, expiresAt in
            guard type == .list, let payload else { return nil }
            return CollectionMetadata(type: .list, payload: payload, expiresAt: expiresAt)
        }
    }

    /// LMPOP, BLPOP, BRPOP, BLMPOP: up to `count` elements from one end of the first non-empty
    /// list among `keys`, and its key; nil when all are empty. WRONGTYPE at the first key of
    /// another type, unless `skippingOtherTypes`.
    func popFirst(_ keys: [[UInt8]], from end: ListEnd, count: Int, skippingOtherTypes: Bool = false) throws(CommandError) -> ([UInt8], [[UInt8]])? {
        for key in keys {
            let popped = try locked(key) { () throws(CommandError) -> [[UInt8]]? in
                guard let meta = try list(key, skippingOtherTypes: skippingOtherTypes) else { return nil }
                var change = CollectionChange(key: key, meta: meta, family: family.name, existed: true)
                let elements = try pop(count, from: end, of: &change)
                try commit(change)
                if !elements.isEmpty { notifyPopped(key, end, emptied: change.meta.size == 0) }
                return elements
            }
            if let popped, !popped.isEmpty { return (key, popped) }
        }
        return nil
    }

    /// LMOVE, RPOPLPUSH, BLMOVE, BRPOPLPUSH: moves one element from an end of `source` to an
    /// end of `destination` in one batch; nil when the source is empty. WRONGTYPE when either
    /// holds another type (a source of another type reads as empty with `skippingOtherTypes`).
    func move(_ source: [UInt8], _ destination: [UInt8], _ from: ListEnd, _ to: ListEnd,
              skippingOtherTypes: Bool = false) throws(CommandError) -> [UInt8]? {
        try locked([source, destination]) { () throws(CommandError) -> [UInt8]? in
            guard let meta = try list(source, skippingOtherTypes: skippingOtherTypes) else { return nil }
            var src = CollectionChange(key: source, meta: meta, family: family.name, existed: true)
            if source == destination {
                guard let p = position(ofIndex: from == .left ? 0 : -1, in: meta),
                      let element = try member(meta, of: source, .member, MemberKeys.position(p)) else { return nil }
                // Popped and pushed at the same end: nothing moves.
                guard from != to else {
                    // Redis still pushes and pops it, and says so.
                    notify(.list, to.pushEvent, destination)
                    notify(.list, from.popEvent, source)
                    return element
                }
                _ = try pop(1, from: from, of: &src)
                push([element], to: to, of: &src)
                try commit(src)
                notify(.list, to.pushEvent, destination)
                notify(.list, from.popEvent, source)
                return element
            }
            var dst = try change(destination, .list)
            guard let element = try pop(1, from: from, of: &src).first else { return nil }
            push([element], to: to, of: &dst)
            try commit(src, dst)
            notify(.list, to.pushEvent, destination)
            notifyPopped(source, from, emptied: src.meta.size == 0)
            return element
        }
    }
}
