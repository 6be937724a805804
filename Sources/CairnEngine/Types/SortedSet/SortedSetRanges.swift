import RESP

/// ZRANGE and its older forms (ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX,
/// ZREVRANGEBYLEX), ZRANGESTORE, and the ZREMRANGEBY* commands: one parser and one reader,
/// as Redis's `zrangeGenericCommand`. https://redis.io/docs/latest/commands/zrange/
enum SortedSetRanges {
    static let all: [Command] = [
        Command("zrange") { call, out throws(CommandError) in
            try range(call, &out, keyAt: 1, kind: nil, reverse: nil)
        }.measuringRange(start: 2, stop: 3, unless: ["BYSCORE", "BYLEX"]),
        Command("zrevrange") { call, out throws(CommandError) in
            try range(call, &out, keyAt: 1, kind: .rank, reverse: true)
        }.measuringRange(start: 2, stop: 3),
        Command("zrangebyscore") { call, out throws(CommandError) in
            try range(call, &out, keyAt: 1, kind: .score, reverse: false)
        }.measuringMembers(),
        Command("zrevrangebyscore") { call, out throws(CommandError) in
            try range(call, &out, keyAt: 1, kind: .score, reverse: true)
        }.measuringMembers(),
        Command("zrangebylex") { call, out throws(CommandError) in
            try range(call, &out, keyAt: 1, kind: .lex, reverse: false)
        }.measuringMembers(),
        Command("zrevrangebylex") { call, out throws(CommandError) in
            try range(call, &out, keyAt: 1, kind: .lex, reverse: true)
        }.measuringMembers(),
        Command("zrangestore") { call, out throws(CommandError) in
            try range(call, &out, keyAt: 2, kind: nil, reverse: nil)
        }.measuringMembers(),
        Command("zremrangebyrank") { call, out throws(CommandError) in
            let start = try call.integer(2), stop = try call.integer(3)
            out.integer(try remove(call, all: { (meta: CollectionMetadata) -> Bool in
                let size = Int64(meta.size)
                return (start < 0 ? start + size : start) <= 0 && (stop < 0 ? stop + size : stop) >= size - 1
            }) { (meta: CollectionMetadata) throws(CommandError) -> [SortedEntry] in
                try SortedSetEntries.byRank(call, meta, call[1], start, stop, reverse: false)
            })
        }.measuringMembers(),
        Command("zremrangebyscore") { call, out throws(CommandError) in
            let r = try ScoreRange(call[2], call[3])
            // -inf to +inf, both inclusive: every score there is.
            let everything = r.min == -.infinity && !r.minExclusive && r.max == .infinity && !r.maxExclusive
            out.integer(try remove(call, all: { _ in everything }) { (meta: CollectionMetadata) throws(CommandError) -> [SortedEntry] in
                var found: [SortedEntry] = []
                try SortedSetEntries.scan(call, meta, call[1], r) { e in found.append(e); return true }
                return found
            })
        }.measuringMembers(),
        Command("zremrangebylex") { call, out throws(CommandError) in
            let r = try LexRange(call[2], call[3])
            let everything: Bool
            if case .first = r.min, case .last = r.max { everything = true } else { everything = false }
            out.integer(try remove(call, all: { _ in everything }) { (meta: CollectionMetadata) throws(CommandError) -> [SortedEntry] in
                var found: [SortedEntry] = []
                try SortedSetEntries.scanLex(call, meta, call[1], r) { e in found.append(e); return true }
                return found
            })
        }.measuringMembers(),
    ]

    enum Kind { case rank, score, lex }

    /// Removes the entries `select` finds in sorted set argument 1, under its lock; their number.
    /// `all`: whether the range covers every member, known without reading one (ranks from the
    /// first to the last, `-inf +inf`, `- +`).
    static func remove(
        _ call: Call, all: (CollectionMetadata) -> Bool = { _ in false },
        _ select: (CollectionMetadata) throws(CommandError) -> [SortedEntry]
    ) throws(CommandError) -> Int {
        try call.locked(call[1]) { () throws(CommandError) -> Int in
            guard let meta = try call.collection(call[1], .zset) else { return 0 }
            let event = call.name  // zremrangebyrank, zremrangebyscore, zremrangebylex
            if all(meta) {
                try call.remove(call[1])
                call.notify(.zset, event, call[1])
                call.notify(.generic, "del", call[1])
                return Int(meta.size)
            }
            let found = try select(meta)
            // Every member: the key goes, in O(1) like DEL (its members are unreachable with its
            // metadata, and compaction drops them), not one tombstone per member and score.
            if UInt64(found.count) == meta.size {
                try call.remove(call[1])
                call.notify(.zset, event, call[1])
                call.notify(.generic, "del", call[1])
                return found.count
            }
            var change = CollectionChange(key: call[1], meta: meta, family: call.family.name, existed: true)
            for e in found { SortedSetEntries.remove(&change, e) }
            if !found.isEmpty {
                try call.commit(change)
                call.notify(.zset, event, call[1])
            }
            return found.count
        }
    }

    /// The range commands: the source key at `keyAt` (2 for ZRANGESTORE, whose destination is
    /// argument 1), `kind` and `reverse` fixed by the legacy forms, nil where ZRANGE takes them
    /// from its options.
    static func range(_ call: Call, _ out: inout RESPWriter, keyAt: Int, kind fixedKind: Kind?, reverse fixedReverse: Bool?) throws(CommandError) {
        let store = keyAt == 2
        var kind = fixedKind
        var reverse = fixedReverse
        var withScores = false
        var limit: (offset: Int64, count: Int64)? = nil
        var j = keyAt + 3
        while j < call.count {
            let a = call[j]
            let left = call.count - j - 1
            if !store && a.isKeyword("WITHSCORES") {
                withScores = true
            } else if a.isKeyword("LIMIT") && left >= 2 {
                limit = (try call.integer(j + 1), try call.integer(j + 2))
                j += 2
            } else if fixedReverse == nil && reverse == nil && a.isKeyword("REV") {
                reverse = true
            } else if fixedKind == nil && kind == nil && a.isKeyword("BYSCORE") {
                kind = .score
            } else if fixedKind == nil && kind == nil && a.isKeyword("BYLEX") {
                kind = .lex
            } else {
                throw .syntax
            }
            j += 1
        }
        let resolvedKind = kind ?? .rank
        let rev = reverse ?? false
        if limit != nil && resolvedKind == .rank {
            throw CommandError("ERR", "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
        }
        if withScores && resolvedKind == .lex { throw CommandError("ERR", "syntax error, WITHSCORES not supported in combination with BYLEX") }
        // Reversed score and lex ranges take the maximum first.
        var (minArg, maxArg) = (call[keyAt + 1], call[keyAt + 2])
        if rev && resolvedKind != .rank { swap(&minArg, &maxArg) }
        let key = call[keyAt]
        let read = { () throws(CommandError) -> [SortedEntry] in
            var offset = limit?.offset ?? 0
            let count = limit?.count ?? -1
            var found: [SortedEntry] = []
            switch resolvedKind {
            case .rank:
                let start = try call.integer(keyAt + 1), stop = try call.integer(keyAt + 2)
                guard let meta = try call.collection(key, .zset) else { return [] }
                return try SortedSetEntries.byRank(call, meta, key, start, stop, reverse: rev)
            case .score:
                let r = try ScoreRange(minArg, maxArg)
                guard let meta = try call.collection(key, .zset), offset >= 0, count != 0 else { return [] }
                try SortedSetEntries.scan(call, meta, key, r, reverse: rev) { e in
                    if offset > 0 { offset -= 1; return true }
                    found.append(e)
                    return count < 0 || found.count < count
                }
            case .lex:
                let r = try LexRange(minArg, maxArg)
                guard let meta = try call.collection(key, .zset), offset >= 0, count != 0 else { return [] }
                try SortedSetEntries.scanLex(call, meta, key, r, reverse: rev) { e in
                    if offset > 0 { offset -= 1; return true }
                    found.append(e)
                    return count < 0 || found.count < count
                }
            }
            return found
        }
        guard store else {
            Scores.writeEntries(try read(), withScores: withScores, &out)
            return
        }
        let stored = try call.locked([call[1], key]) { () throws(CommandError) -> Int in
            try storeEntries(call, call[1], try read(), event: "zrangestore")
        }
        out.integer(stored)
    }

    /// Replaces `destination` with a sorted set of `entries` (deletes it when there are none);
    /// their number. Call under the destination's lock.
    /// `event`: the keyspace event of a non-empty result (an empty one publishes `del`).
    static func storeEntries(_ call: Call, _ destination: [UInt8], _ entries: [SortedEntry], event: String) throws(CommandError) -> Int {
        let stored = try call.writeNew(destination, .zset) { (new: inout NewCollection) throws(CommandError) in
            try SortedSetEntries.putNew(&new, entries)
        }
        if stored.size > 0 { call.notify(.zset, event, destination) }
        return Int(stored.size)
    }
}
