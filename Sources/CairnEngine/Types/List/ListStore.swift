/// How a list lives on the ordered store: its metadata (`CollectionMetadata`, with `head` and
/// `tail`) under the key, and one members-family `.member` entry per element whose sub-key is
/// its 8-byte big-endian position (`MemberKeys.position`). Elements sit at positions
/// `[head, tail)` with no gaps, so index i is position `head + i`: LINDEX, LSET and the pops are
/// point lookups, LRANGE an ordered scan. LPUSH takes `head - 1`, RPUSH `tail`. LINSERT and
/// LREM in the middle rewrite the positions on one side of the change (O(n), as in Kvrocks).
enum ListEnd {
    case left, right

    /// `LEFT` or `RIGHT`, any case; nil otherwise.
    init?(_ word: [UInt8]) {
        if word.isKeyword("LEFT") {
            self = .left
        } else if word.isKeyword("RIGHT") {
            self = .right
        } else {
            return nil
        }
    }
}

extension Call {
    /// The live list at `key`, or nil; WRONGTYPE when it holds another type.
    func list(_ key: [UInt8]) throws(CommandError) -> CollectionMetadata? {
        try collection(key, .list)
    }

    /// Appends `elements` at one end of the staged list, in order (LPUSH a b c leaves c first).
    func push(_ elements: some Sequence<[UInt8]>, to end: ListEnd, of change: inout CollectionChange) {
        for element in elements {
            switch end {
            case .left:
                change.meta.head -= 1
                change.put(.member, MemberKeys.position(change.meta.head), element)
            case .right:
                change.put(.member, MemberKeys.position(change.meta.tail), element)
                change.meta.tail += 1
            }
            change.meta.size += 1
        }
    }

    /// Takes up to `count` elements off one end of the staged list (point lookups at the
    /// computed positions), in pop order.
    func pop(_ count: Int, from end: ListEnd, of change: inout CollectionChange) throws(CommandError) -> [[UInt8]] {
        let n = UInt64(min(max(count, 0), Int(clamping: change.meta.size)))
        guard n > 0 else { return [] }
        let positions: [UInt64] = switch end {
        case .left: (0..<n).map { change.meta.head + $0 }
        case .right: (0..<n).map { change.meta.tail - 1 - $0 }
        }
        let subs = positions.map(MemberKeys.position)
        var values: [[UInt8]?] = []
        if session.transaction != nil {
            // In a transaction (a batch of pops of one list) the elements are read with the
            // transaction's kept cursor over the list (`scanMembers`): the next pop steps on from
            // where this one stopped instead of looking its element up again. Positions have no
            // gaps, so the scan meets exactly `subs`, in pop order; anything else reads them one
            // by one.
            var met = true
            let (from, to) = end == .left ? (positions[0], positions[0] + n) : (positions[0] + 1 - n, positions[0] + 1)
            values.reserveCapacity(subs.count)
            try scanMembers(change, .member, from: MemberKeys.position(from), to: MemberKeys.position(to), reverse: end == .right) { sub, value in
                met = met && values.count < subs.count && sub == subs[values.count]
                values.append(value)
                return met
            }
            if !met || values.count != subs.count { values = [] }
        }
        if values.isEmpty { values = try members(change, .member, subs) }
        for sub in subs { change.delete(.member, sub) }
        switch end {
        case .left: change.meta.head += n
        case .right: change.meta.tail -= n
        }
        change.meta.size -= n
        return values.map { $0 ?? [] }
    }

    /// The position of index `i` (negative counts from the end), or nil when out of range.
    func position(ofIndex i: Int64, in meta: CollectionMetadata) -> UInt64? {
        let size = Int64(clamping: meta.size)
        let index = i < 0 ? size + i : i
        guard index >= 0, index < size else { return nil }
        return meta.head + UInt64(index)
    }

    /// Elements from index `from` to `to` inclusive (already clamped to the list), in order.
    func elements(of key: [UInt8], _ meta: CollectionMetadata, from: UInt64, to: UInt64, reverse: Bool = false) throws(CommandError) -> [[UInt8]] {
        guard from <= to, to < meta.size else { return [] }
        var out: [[UInt8]] = []
        out.reserveCapacity(Int(min(to - from + 1, 1 << 16)))
        try scanMembers(meta, of: key, .member, from: MemberKeys.position(meta.head + from),
                        to: MemberKeys.position(meta.head + to + 1), reverse: reverse) { _, value in
            out.append(value)
            return true
        }
        return out
    }

    /// Redis's start/stop range of LRANGE and LTRIM, clamped: nil when empty.
    static func listRange(_ start: Int64, _ stop: Int64, size: UInt64) -> (UInt64, UInt64)? {
        let n = Int64(clamping: size)
        var s = start < 0 ? n + start : start
        var e = stop < 0 ? n + stop : stop
        if s < 0 { s = 0 }
        guard s < n, e >= 0, s <= e || e >= n else { return nil }
        if e >= n { e = n - 1 }
        guard s <= e else { return nil }
        return (UInt64(s), UInt64(e))
    }

    /// Rewrites the staged list as `elements` from index `from` on (the elements before it
    /// stay where they are): what LINSERT and LREM do after the point they change.
    func rewrite(_ change: inout CollectionChange, from: UInt64, as elements: [[UInt8]]) {
        let oldTail = change.meta.tail
        var p = change.meta.head + from
        for e in elements {
            change.put(.member, MemberKeys.position(p), e)
            p += 1
        }
        var q = p
        while q < oldTail {
            change.delete(.member, MemberKeys.position(q))
            q += 1
        }
        change.meta.tail = p
        change.meta.size = p - change.meta.head
    }

    /// Rewrites the first `count` elements as `elements` ending where they ended (the list's
    /// head moves): LINSERT near the front shifts the shorter side.
    func rewriteFront(_ change: inout CollectionChange, count: UInt64, as elements: [[UInt8]]) {
        let end = change.meta.head + count
        let newHead = end - UInt64(elements.count)
        for (i, e) in elements.enumerated() { change.put(.member, MemberKeys.position(newHead + UInt64(i)), e) }
        var q = change.meta.head
        while q < newHead {
            change.delete(.member, MemberKeys.position(q))
            q += 1
        }
        change.meta.head = newHead
        change.meta.size = change.meta.tail - newHead
    }
}
