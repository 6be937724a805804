/// Reads and writes of one sorted set's two entries per member: `.member` (sub-key = member,
/// value = its score, 8 bytes) for ZSCORE and membership, and `.score` (sub-key = the
/// order-preserving score + member, empty value) for everything in score order.
enum SortedSetEntries {
    /// The score-index sub-key of a member.
    static func indexKey(_ member: [UInt8], _ score: Double) -> [UInt8] {
        MemberKeys.orderedScore(score) + member
    }

    /// A score-index sub-key read back.
    static func entry(index sub: [UInt8]) -> SortedEntry {
        SortedEntry(member: Array(sub[8...]), score: MemberKeys.score(ordered: sub[..<8]))
    }

    /// The scores of `members` (nil for those not in the set).
    static func scores(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ members: [[UInt8]]) throws(CommandError) -> [Double?] {
        try call.members(meta, of: key, .member, members).map { $0.map { MemberKeys.score(value: $0) } }
    }

    /// The scores of `members` of the sorted set `change` stages (nil for those not in it).
    static func scores(_ call: Call, _ change: CollectionChange, _ members: [[UInt8]]) throws(CommandError) -> [Double?] {
        try call.members(change, .member, members).map { $0.map { MemberKeys.score(value: $0) } }
    }

    static func score(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ member: [UInt8]) throws(CommandError) -> Double? {
        try call.member(meta, of: key, .member, member).map { MemberKeys.score(value: $0) }
    }

    /// Stages `member` at `score`; `old` is its current score (nil when new). Keeps the size.
    static func put(_ change: inout CollectionChange, _ member: [UInt8], _ score: Double, old: Double?) {
        if let old {
            if old == score { return }
            change.delete(.score, indexKey(member, old))
        } else {
            change.meta.size += 1
        }
        change.put(.member, member, MemberKeys.scoreValue(score))
        change.put(.score, indexKey(member, score), [])
    }

    /// The members of a new sorted set (distinct), all member entries first, then the score
    /// index: each run in key order as far as the input's order allows, so RocksDB's memtable
    /// inserts each entry next to the last one instead of searching for its place.
    static func putNew(_ new: inout NewCollection, _ entries: [SortedEntry]) throws(CommandError) {
        for e in entries { try new.put(.member, e.member, MemberKeys.scoreValue(e.score)) }
        for e in entries { try new.put(.score, indexKey(e.member, e.score), []) }
        new.meta.size += UInt64(entries.count)
    }

    static func remove(_ change: inout CollectionChange, _ entry: SortedEntry) {
        change.delete(.member, entry.member)
        change.delete(.score, indexKey(entry.member, entry.score))
        change.meta.size -= 1
    }

    /// Visits entries in score order (backward when `reverse`) within `range`, while `body`
    /// returns true.
    static func scan(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ range: ScoreRange? = nil, reverse: Bool = false,
                     _ body: (SortedEntry) throws(CommandError) -> Bool) throws(CommandError) {
        if let range, range.isEmpty { return }
        try call.scanMembers(meta, of: key, .score, from: range?.lowerKey, to: range?.upperKey, reverse: reverse) {
            (sub, _) throws(CommandError) -> Bool in
            let e = entry(index: sub)
            if let range, !range.contains(e.score) {
                // Only the bounds' own scores can fall outside: skip them, stop past the far end.
                return reverse ? range.above(e.score) : range.below(e.score)
            }
            return try body(e)
        }
    }

    /// Visits members in byte order (backward when `reverse`) within `range`, with their scores.
    static func scanLex(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ range: LexRange, reverse: Bool = false,
                        _ body: (SortedEntry) throws(CommandError) -> Bool) throws(CommandError) {
        if case .last = range.min { return }
        if case .first = range.max { return }
        try call.scanMembers(meta, of: key, .member, from: range.lowerKey, to: range.upperKey, reverse: reverse) {
            (member, value) throws(CommandError) -> Bool in
            guard range.above(member) && range.below(member) else { return true }
            return try body(SortedEntry(member: member, score: MemberKeys.score(value: value)))
        }
    }

    /// The entries of ranks `start...stop` (Redis's index rules: negative counts from the end,
    /// out-of-range clipped), in score order or from the highest when `reverse`.
    static func byRank(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ start: Int64, _ stop: Int64, reverse: Bool) throws(CommandError) -> [SortedEntry] {
        let size = Int64(meta.size)
        var start = start < 0 ? start + size : start
        var stop = stop < 0 ? stop + size : stop
        if start < 0 { start = 0 }
        guard start <= stop, start < size else { return [] }
        if stop >= size { stop = size - 1 }
        var skipped: Int64 = 0
        var out: [SortedEntry] = []
        out.reserveCapacity(Int(min(stop - start + 1, 1 << 16)))
        try scan(call, meta, key, reverse: reverse) { e in
            if skipped < start {
                skipped += 1
                return true
            }
            out.append(e)
            return Int64(out.count) < stop - start + 1
        }
        return out
    }

    /// The 0-based rank of `member` in score order (nil when absent): counts the entries before
    /// it, so it costs O(rank).
    static func rank(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ member: [UInt8], reverse: Bool) throws(CommandError) -> Int64? {
        guard let score = try score(call, meta, key, member) else { return nil }
        var before: Int64 = 0
        try call.scanMembers(meta, of: key, .score, to: indexKey(member, score)) { _, _ in
            before += 1
            return true
        }
        return reverse ? Int64(meta.size) - 1 - before : before
    }
}
