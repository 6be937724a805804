import RESP

/// The set family: https://redis.io/docs/latest/commands/?group=set
///
/// A set is its metadata under the key and one members-family entry per member, the member as
/// sub-key and an empty value (`MemberKeys`), so SISMEMBER is one point lookup and SMEMBERS or
/// SSCAN an ordered scan (members come back in byte order, not Redis's hash order).
enum SetCommands {
    /// Every write runs batched with its connection's neighbours (`Engine.executeBatched`); a
    /// run of pops moves the batch's own popped-front bound (`PoppedFronts`), shared once it
    /// committed.
    static let all: [Command] = Command.batchingWrites(commands)

    private static let commands: [Command] = [
        Command("sadd") {
            call, out throws(CommandError) in
            let added = try call.locked(call[1]) { () throws(CommandError) -> Int in
                var change = try call.change(call[1], .set)
                let members = distinct(call.argv[2...])
                let present = change.existed ? try call.members(change, .member, members) : Array(repeating: nil, count: members.count)
                var added = 0
                for (m, old) in zip(members, present) where old == nil {
                    change.put(.member, m, [])
                    added += 1
                }
                change.meta.size += UInt64(added)
                PoppedFronts.shared.noteInserts(call, change, .member, members)
                if added > 0 {
                    try call.commit(change)
                    call.notify(.set, "sadd", call[1])
                }
                return added
            }
            out.integer(added)
        },
        Command("srem") { call, out throws(CommandError) in
            let removed = try call.locked(call[1]) { () throws(CommandError) -> Int in
                guard var change = try call.existing(call[1], .set) else { return 0 }
                let members = distinct(call.argv[2...])
                var removed = 0
                for (m, old) in zip(members, try call.members(change, .member, members)) where old != nil {
                    change.delete(.member, m)
                    removed += 1
                }
                change.meta.size -= UInt64(removed)
                if removed > 0 {
                    try call.commit(change)
                    call.notify(.set, "srem", call[1])
                    if change.meta.size == 0 { call.notify(.generic, "del", call[1]) }
                }
                return removed
            }
            out.integer(removed)
        },
        Command("scard") { call, out throws(CommandError) in
            out.integer(Int64(try call.collection(call[1], .set)?.size ?? 0))
        },
        Command("sismember") { call, out throws(CommandError) in
            out.integer(try contains(call, call[1], [call[2]])[0] ? 1 : 0)
        },
        Command("smismember") {
            call, out throws(CommandError) in
            let found = try contains(call, call[1], Array(call.argv[2...]))
            out.arrayHeader(found.count)
            for f in found { out.integer(f ? 1 : 0) }
        },
        Command("smembers") { call, out throws(CommandError) in
            var items = RESPWriter(version: out.version)
            var count = 0
            if let meta = try call.collection(call[1], .set) {
                try call.visitMembers(meta, of: call[1], .member) { member, _ in
                    items.bulk(member)
                    count += 1
                    return true
                }
            }
            out.setHeader(count)
            out.bytes.append(contentsOf: items.bytes)
        }.measuringMembers(),
        Command("srandmember") { call, out throws(CommandError) in
            guard call.count <= 3 else { throw .syntax }
            // The count before the key, as Redis checks them.
            let count: Int64? = try call.count == 3 ? call.randomCount(2) : nil
            let meta = try call.collection(call[1], .set)
            guard let count else {
                guard let meta, let pick = try RandomMembers.pick(call, meta, of: call[1], count: 1, distinct: true).first else { out.null(); return }
                out.bulk(pick.sub)
                return
            }
            guard let meta, count != 0 else { out.arrayHeader(0); return }
            let picks = try RandomMembers.pick(call, meta, of: call[1], count: Int(clamping: count.magnitude), distinct: count > 0)
            out.arrayHeader(picks.count)
            for p in picks { out.bulk(p.sub) }
        },
        Command("spop") { call, out throws(CommandError) in
            guard call.count <= 3 else { throw .syntax }
            let count = try call.count == 3 ? Int(clamping: call.positiveInteger(2)) : 1
            let popped = try call.locked(call[1]) { () throws(CommandError) -> [[UInt8]]? in
                guard let meta = try call.collection(call[1], .set) else { return nil }
                let popped = try pop(call, meta, count: count)
                if !popped.isEmpty {
                    call.notify(.set, "spop", call[1])
                    if UInt64(popped.count) >= meta.size { call.notify(.generic, "del", call[1]) }
                }
                return popped
            }
            guard call.count == 3 else {
                if let first = popped?.first { out.bulk(first) } else { out.null() }
                return
            }
            let members = popped ?? []
            out.setHeader(members.count)
            for m in members { out.bulk(m) }
        },
        Command("smove") { call, out throws(CommandError) in
            let (source, destination, member) = (call[1], call[2], call[3])
            let moved = try call.locked([source, destination]) { () throws(CommandError) -> Bool in
                guard let from = try call.collection(source, .set) else { return false }
                let to = try call.collection(destination, .set)
                let present = try call.member(from, of: source, .member, member) != nil
                if source == destination || !present { return present }
                var out = CollectionChange(key: source, meta: from, family: call.family.name, existed: true)
                out.delete(.member, member)
                out.meta.size -= 1
                var into = try call.change(destination, .set)
                let already = to == nil ? false : try call.member(into.meta, of: destination, .member, member) != nil
                if !already {
                    PoppedFronts.shared.noteInserts(call, into, .member, [member])
                    into.put(.member, member, [])
                    into.meta.size += 1
                }
                try call.commit(out, into)
                // Redis's order: the source's events, then the destination's creation and add.
                let created = call.takeNew(destination)
                call.notify(.set, "srem", source)
                if out.meta.size == 0 { call.notify(.generic, "del", source) }
                if created { call.record(KeyspaceEvents.Event(type: .new, name: "new", key: destination)) }
                if !already { call.notify(.set, "sadd", destination) }
                return true
            }
            out.integer(moved ? 1 : 0)
        },
        Command("sinter") { call, out throws(CommandError) in
            try reply(.inter, call, Array(call.argv[1...]), &out)
        }.measuringMembers(),
        Command("sunion") { call, out throws(CommandError) in
            try reply(.union, call, Array(call.argv[1...]), &out)
        }.measuringMembers(),
        Command("sdiff") { call, out throws(CommandError) in
            try reply(.diff, call, Array(call.argv[1...]), &out)
        }.measuringMembers(),
        Command("sintercard", handler: interCard).measuringMembers().movingKeys { argv in numberedKeys(argv, countAt: 1) },
        Command("sinterstore") { call, out throws(CommandError) in
            out.integer(try store(call, .inter))
        }.measuringMembers(),
        Command("sunionstore") { call, out throws(CommandError) in
            out.integer(try store(call, .union))
        }.measuringMembers(),
        Command("sdiffstore") { call, out throws(CommandError) in
            out.integer(try store(call, .diff))
        }.measuringMembers(),
        Command("sscan") {
            call, out throws(CommandError) in
            try MemberScan.reply(call, .set, &out)
        },
    ]

    /// The arguments without repeats, in their first order.
    static func distinct(_ args: ArraySlice<[UInt8]>) -> [[UInt8]] {
        if args.count == 1 { return Array(args) }
        var seen = Set<ByteKey>()
        return args.filter { seen.insert(ByteKey($0)).inserted }
    }

    /// The keys of `numkeys key [key ...] ...` with `numkeys` at `countAt` (none when it is
    /// not a usable count: the handler answers the error).
    static func numberedKeys(_ argv: [[UInt8]], countAt: Int) -> [[UInt8]] {
        guard countAt < argv.count, let n = Bytes.int64(argv[countAt]), n > 0, Int(n) <= argv.count - countAt - 1 else { return [] }
        return Array(argv[(countAt + 1)...(countAt + Int(n))])
    }

    /// Whether each of `members` belongs to set `key` (all false when it is missing).
    static func contains(_ call: Call, _ key: [UInt8], _ members: [[UInt8]]) throws(CommandError) -> [Bool] {
        guard let meta = try call.collection(key, .set) else { return Array(repeating: false, count: members.count) }
        return try call.members(meta, of: key, .member, members).map { $0 != nil }
    }

    /// SINTER, SUNION, SDIFF: the result as a set reply, written as it is computed.
    static func reply(_ operation: SetAlgebra.Operation, _ call: Call, _ keys: [[UInt8]], _ out: inout RESPWriter) throws(CommandError) {
        var items = RESPWriter(version: out.version)
        var count = 0
        try SetAlgebra.visit(operation, call, keys) { m in
            items.bulk(m)
            count += 1
            return true
        }
        out.setHeader(count)
        out.bytes.append(contentsOf: items.bytes)
    }

    /// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: replaces the destination (argument 1) with the
    /// result, or deletes it when the result is empty; returns the result's size.
    static func store(_ call: Call, _ operation: SetAlgebra.Operation) throws(CommandError) -> Int {
        try call.locked(Array(call.argv[1...])) { () throws(CommandError) -> Int in
            let stored = try call.writeNew(call[1], .set) { (new: inout NewCollection) throws(CommandError) in
                try SetAlgebra.visit(operation, call, Array(call.argv[2...])) { m throws(CommandError) in
                    try new.put(.member, m, NewCollection.noValue)
                    new.meta.size += 1
                    return true
                }
            }
            if stored.size > 0 { call.notify(.set, operation.storeEvent, call[1]) }
            return Int(stored.size)
        }
    }

    /// SINTERCARD: https://redis.io/docs/latest/commands/sintercard/
    static func interCard(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let n = try call.integer(1, in: 1...Int64.max, message: "numkeys should be greater than 0")
        guard n <= call.count - 2 else { throw CommandError("ERR", "Number of keys can't be greater than number of args") }
        let keys = Array(call.argv[2..<(2 + Int(n))])
        var limit = 0
        var i = 2 + Int(n)
        while i < call.count {
            guard call[i].isKeyword("LIMIT"), i + 1 < call.count else { throw .syntax }
            limit = Int(clamping: try call.positiveInteger(i + 1, message: "LIMIT can't be negative"))
            i += 2
        }
        out.integer(try SetAlgebra.count(.inter, call, keys, limit: limit))
    }

    /// Pops up to `count` members of a set (under its lock): `SPOP`. Small sets give uniformly
    /// random members; a large one takes the member after a random point of its key space,
    /// falling back to its first member (`RandomMembers`). Pops from the front start where the
    /// last one ended (`PoppedFronts`), so popping a big set empty stays at a steady rate.
    static func pop(_ call: Call, _ meta: CollectionMetadata, count: Int) throws(CommandError) -> [[UInt8]] {
        guard count > 0 else { return [] }
        var change = CollectionChange(key: call[1], meta: meta, family: call.family.name, existed: true)
        var popped: [[UInt8]] = []
        let index = PoppedFronts.prefix(call, meta, call[1], .member)
        let live = PoppedFronts.shared.range(call, index)
        if UInt64(count) >= meta.size || meta.size <= RandomMembers.readAllLimit {
            // Read from where the popped front ends: a set popped down from a million members
            // has the tombstones of all of them before its last few thousand.
            var members: [[UInt8]] = []
            try call.scanMembers(meta, of: call[1], .member, from: live.lower) { sub, _ in
                members.append(sub)
                return true
            }
            popped = UInt64(count) >= meta.size ? members : Array(members.shuffled().prefix(count))
        } else {
            var front: [UInt8]? = nil
            var taken = Set<[UInt8]>()
            for _ in 0..<(count * 4 + 16) where popped.count < count {
                var probe = [UInt8](repeating: 0, count: 8)
                for i in probe.indices { probe[i] = UInt8.random(in: 0...255) }
                var found: [UInt8]? = nil
                let start = live.lower.map { probe.lexicographicallyPrecedes($0) ? $0 : probe } ?? probe
                try call.scanMembers(meta, of: call[1], .member, from: start) { sub, _ in
                    if taken.contains(sub) { return true }
                    found = sub
                    return false
                }
                if found == nil {
                    // Past the last member: the front, after the members this call already took.
                    try call.scanMembers(meta, of: call[1], .member, from: front.map { $0 + [0] } ?? live.lower) { sub, _ in
                        if taken.contains(sub) { return true }
                        found = sub
                        front = sub
                        return false
                    }
                }
                guard let found else { break }
                taken.insert(found)
                popped.append(found)
            }
            for m in popped { change.delete(.member, m) }
            change.meta.size -= UInt64(popped.count)
            try call.commit(change)
            if let front { PoppedFronts.shared.poppedFront(call, index, through: front) }
            return popped
        }
        for m in popped { change.delete(.member, m) }
        change.meta.size -= UInt64(popped.count)
        try call.commit(change)
        return popped
    }
}

extension SetAlgebra.Operation {
    /// The keyspace event of the *STORE form.
    var storeEvent: String {
        switch self {
        case .inter: "sinterstore"
        case .union: "sunionstore"
        case .diff: "sdiffstore"
        }
    }
}
