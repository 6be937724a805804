import RESP

/// The sorted-set family: https://redis.io/docs/latest/commands/?group=sorted-set
///
/// A sorted set is its metadata under the key and two members-family entries per member
/// (`SortedSetEntries`): by member for ZSCORE, by (score, member) for ranges and pops. ZRANK
/// counts the entries before the member (O(rank)); BYLEX ranges walk the members in byte
/// order, which is Redis's order when all scores are equal (the case BYLEX is defined for).
enum SortedSetCommands {
    /// Every write runs batched with its connection's neighbours (`Engine.executeBatched`); a
    /// run of pops moves the batch's own popped-front bound (`PoppedFronts`), shared once it
    /// committed.
    static let all: [Command] = Command.batchingWrites(commands)

    private static let commands: [Command] = [
        Command("zadd", handler: add),
        Command("zincrby") { call, out throws(CommandError) in
            guard let delta = Scores.parse(call[2]) else { throw .notFloat }
            let result = try update(call, [(call[3], delta)], AddOptions(increment: true))
            if let score = result.score { Scores.write(score, &out) } else { out.null() }
        },
        Command("zrem") { call, out throws(CommandError) in
            let removed = try call.locked(call[1]) { () throws(CommandError) -> Int in
                guard var change = try call.existing(call[1], .zset) else { return 0 }
                let members = SetCommands.distinct(call.argv[2...])
                var removed = 0
                for (m, score) in zip(members, try SortedSetEntries.scores(call, change, members)) {
                    guard let score else { continue }
                    SortedSetEntries.remove(&change, SortedEntry(member: m, score: score))
                    removed += 1
                }
                if removed > 0 {
                    try call.commit(change)
                    call.notify(.zset, "zrem", call[1])
                    if change.meta.size == 0 { call.notify(.generic, "del", call[1]) }
                }
                return removed
            }
            out.integer(removed)
        },
        Command("zcard") { call, out throws(CommandError) in
            out.integer(Int64(try call.collection(call[1], .zset)?.size ?? 0))
        },
        Command("zscore") { call, out throws(CommandError) in
            guard let meta = try call.collection(call[1], .zset), let score = try SortedSetEntries.score(call, meta, call[1], call[2]) else {
                out.null()
                return
            }
            Scores.write(score, &out)
        },
        Command("zmscore") {
            call, out throws(CommandError) in
            let members = Array(call.argv[2...])
            let scores = try call.collection(call[1], .zset).map { (meta: CollectionMetadata) throws(CommandError) -> [Double?] in
                try SortedSetEntries.scores(call, meta, call[1], members)
            } ?? Array(repeating: nil, count: members.count)
            out.arrayHeader(scores.count)
            for s in scores { if let s { Scores.write(s, &out) } else { out.null() } }
        },
        Command("zcount") {
            call, out throws(CommandError) in
            let range = try ScoreRange(call[2], call[3])
            var n = 0
            if let meta = try call.collection(call[1], .zset) {
                try SortedSetEntries.scan(call, meta, call[1], range) { _ in n += 1; return true }
            }
            out.integer(n)
        },
        Command("zlexcount") {
            call, out throws(CommandError) in
            let range = try LexRange(call[2], call[3])
            var n = 0
            if let meta = try call.collection(call[1], .zset) {
                try SortedSetEntries.scanLex(call, meta, call[1], range) { _ in n += 1; return true }
            }
            out.integer(n)
        },
        Command("zrank") {
            call, out throws(CommandError) in
            try rank(call, &out, reverse: false)
        },
        Command("zrevrank") {
            call, out throws(CommandError) in
            try rank(call, &out, reverse: true)
        },
        Command("zpopmin") { call, out throws(CommandError) in
            try popCommand(call, &out, min: true)
        },
        Command("zpopmax") { call, out throws(CommandError) in
            try popCommand(call, &out, min: false)
        },
        Command("zrandmember", handler: randomMember),
        Command("zscan") {
            call, out throws(CommandError) in
            try MemberScan.reply(call, .zset, &out) { value, out in out.bulk(Scores.text(MemberKeys.score(value: value))) }
        },
    ] + SortedSetRanges.all + SortedSetAlgebra.all

    /// ZADD's options (and ZINCRBY's: `increment`).
    struct AddOptions {
        var onlyNew = false  // NX
        var onlyExisting = false  // XX
        var greater = false  // GT
        var less = false  // LT
        var changed = false  // CH
        var increment = false  // INCR
    }

    /// ZADD: https://redis.io/docs/latest/commands/zadd/
    static func add(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var o = AddOptions()
        var i = 2
        while i < call.count {
            let a = call[i]
            if a.isKeyword("NX") { o.onlyNew = true }
            else if a.isKeyword("XX") { o.onlyExisting = true }
            else if a.isKeyword("GT") { o.greater = true }
            else if a.isKeyword("LT") { o.less = true }
            else if a.isKeyword("CH") { o.changed = true }
            else if a.isKeyword("INCR") { o.increment = true }
            else { break }
            i += 1
        }
        let elements = call.count - i
        guard elements > 0, elements % 2 == 0 else { throw .syntax }
        if o.onlyNew && o.onlyExisting { throw CommandError("ERR", "XX and NX options at the same time are not compatible") }
        if (o.greater && o.onlyNew) || (o.less && o.onlyNew) || (o.greater && o.less) {
            throw CommandError("ERR", "GT, LT, and/or NX options at the same time are not compatible")
        }
        if o.increment && elements > 2 { throw CommandError("ERR", "INCR option supports a single increment-element pair") }
        var pairs: [([UInt8], Double)] = []
        for j in stride(from: i, to: call.count, by: 2) {
            guard let score = Scores.parse(call[j]) else { throw .notFloat }
            pairs.append((call[j + 1], score))
        }
        let result = try update(call, pairs, o)
        if o.increment {
            if let score = result.score { Scores.write(score, &out) } else { out.null() }
        } else {
            out.integer(o.changed ? result.added + result.updated : result.added)
        }
    }

    /// Adds or updates members of sorted set argument 1 under its lock (ZADD, ZINCRBY): the
    /// numbers added and updated, and with `increment` the new score (nil when not applied).
    static func update(_ call: Call, _ pairs: [([UInt8], Double)], _ o: AddOptions) throws(CommandError) -> (added: Int, updated: Int, score: Double?) {
        try call.locked(call[1]) { () throws(CommandError) -> (added: Int, updated: Int, score: Double?) in
            if o.onlyExisting, try call.collection(call[1], .zset) == nil { return (0, 0, nil) }
            var change = try call.change(call[1], .zset)
            // Members in first-given order, each with its last score (a member given twice: the
            // last score wins); one pair needs no dictionary.
            var order = pairs.map(\.0)
            var scores = pairs.map(\.1)
            if pairs.count > 1 {
                order = []
                scores = []
                var at: [ByteKey: Int] = [:]
                for (m, s) in pairs {
                    if let j = at[ByteKey(m)] {
                        scores[j] = s
                    } else {
                        at[ByteKey(m)] = order.count
                        order.append(m)
                        scores.append(s)
                    }
                }
            }
            let olds = change.existed ? try SortedSetEntries.scores(call, change, order) : Array(repeating: nil, count: order.count)
            var added = 0, updated = 0
            var result: Double? = nil
            var written: [[UInt8]] = []
            for (member, (old, given)) in zip(order, zip(olds, scores)) {
                var score = given
                if let old {
                    if o.onlyNew { continue }
                    if o.increment {
                        score += old
                        if score.isNaN { throw CommandError("ERR", "resulting score is not a number (NaN)") }
                    }
                    if (o.less && score >= old) || (o.greater && score <= old) { continue }
                    if score != old { updated += 1 }
                } else {
                    if o.onlyExisting { continue }
                    added += 1
                }
                SortedSetEntries.put(&change, member, score == 0 ? 0 : score, old: old)
                written.append(SortedSetEntries.indexKey(member, score == 0 ? 0 : score))
                result = score
            }
            PoppedFronts.shared.noteInserts(call, change, .score, written)
            try call.commit(change)
            if added > 0 || updated > 0 { call.notify(.zset, o.increment ? "zincr" : "zadd", call[1]) }
            return (added, updated, result)
        }
    }

    static func rank(_ call: Call, _ out: inout RESPWriter, reverse: Bool) throws(CommandError) {
        guard let meta = try call.collection(call[1], .zset), let r = try SortedSetEntries.rank(call, meta, call[1], call[2], reverse: reverse) else {
            out.null()
            return
        }
        out.integer(r)
    }

    /// Pops up to `count` members of the lowest (`min`) or highest scores from sorted set
    /// `key`, taking its lock: ZPOPMIN, ZPOPMAX, and the blocking BZPOPMIN/BZPOPMAX/BZMPOP once
    /// a member is there. nil when the key does not exist. The scan starts where the last pop
    /// ended (`PoppedFronts`), so popping a big set empty stays at a steady rate.
    static func pop(_ call: Call, _ key: [UInt8], min: Bool, count: Int) throws(CommandError) -> [SortedEntry]? {
        try call.locked(key) { () throws(CommandError) -> [SortedEntry]? in
            guard var change = try call.existing(key, .zset) else { return nil }
            guard count > 0 else { return [] }
            let index = change.prefix + [MemberKeys.Tag.score.rawValue]
            let live = PoppedFronts.shared.range(call, index)
            var popped: [SortedEntry] = []
            var last: [UInt8]? = nil
            try call.scanMembers(change, .score, from: live.lower, to: live.upper, reverse: !min) { sub, _ in
                popped.append(SortedSetEntries.entry(index: sub))
                last = sub
                return popped.count < count
            }
            for e in popped { SortedSetEntries.remove(&change, e) }
            try call.commit(change)
            if !popped.isEmpty {
                call.notify(.zset, min ? "zpopmin" : "zpopmax", key)
                if change.meta.size == 0 { call.notify(.generic, "del", key) }
            }
            if let last {
                if min { PoppedFronts.shared.poppedFront(call, index, through: last) } else { PoppedFronts.shared.poppedBack(call, index, from: last) }
            }
            return popped
        }
    }

    /// ZPOPMIN, ZPOPMAX: https://redis.io/docs/latest/commands/zpopmin/
    static func popCommand(_ call: Call, _ out: inout RESPWriter, min: Bool) throws(CommandError) {
        guard call.count <= 3 else { throw .syntax }
        let count = try call.count == 3 ? Int(clamping: call.positiveInteger(2)) : 1
        let popped = try pop(call, call[1], min: min, count: count) ?? []
        // Without a count the reply is one flat [member, score], even in RESP3.
        Scores.writeEntries(popped, withScores: true, pairs: call.count == 3, &out)
    }

    /// ZRANDMEMBER: https://redis.io/docs/latest/commands/zrandmember/
    static func randomMember(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let (count, withScores) = try RandomMembers.arguments(call, with: "WITHSCORES")
        let meta = try call.collection(call[1], .zset)
        guard let count else {
            guard let meta, let pick = try RandomMembers.pick(call, meta, of: call[1], count: 1, distinct: true).first else { out.null(); return }
            out.bulk(pick.sub)
            return
        }
        guard let meta, count != 0 else { out.arrayHeader(0); return }
        let picks = try RandomMembers.pick(call, meta, of: call[1], count: Int(clamping: count.magnitude), distinct: count > 0)
        let entries = picks.map { SortedEntry(member: $0.sub, score: MemberKeys.score(value: $0.value)) }
        Scores.writeEntries(entries, withScores: withScores, &out)
    }
}
