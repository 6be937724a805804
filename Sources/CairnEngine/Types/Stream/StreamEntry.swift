import RESP

/// One stream entry: its ID and its field-value pairs, and the value it is stored as under its
/// ID (`MemberKeys.Tag.member`):
///
/// ```
/// node        8 bytes big-endian   the emulated listpack node it went into (StreamNodes)
/// pairs       4 bytes big-endian   the number of field-value pairs
/// then each field and value: 4-byte big-endian length, bytes
/// ```
struct StreamEntry {
    var id: StreamID
    /// Fields and values, alternating.
    var fields: [[UInt8]]

    static func encode(node: UInt64, _ fields: some Collection<[UInt8]>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + fields.reduce(0) { $0 + 4 + $1.count })
        BigEndian.append(node, to: &out)
        BigEndian.append(UInt32(truncatingIfNeeded: fields.count / 2), to: &out)
        for f in fields {
            BigEndian.append(UInt32(truncatingIfNeeded: f.count), to: &out)
            out += f
        }
        return out
    }

    /// The node a stored entry went into.
    static func node(_ value: [UInt8]) -> UInt64 {
        BigEndian.read(UInt64.self, value)
    }

    /// The fields and values of a stored entry.
    static func fields(_ value: [UInt8]) -> [[UInt8]] {
        guard value.count >= 12 else { return [] }
        let pairs = Int(BigEndian.read(UInt32.self, value[8...]))
        var out: [[UInt8]] = []
        out.reserveCapacity(pairs * 2)
        var at = 12
        for _ in 0..<(pairs * 2) {
            guard at + 4 <= value.count else { break }
            let n = Int(BigEndian.read(UInt32.self, value[at...]))
            at += 4
            guard at + n <= value.count else { break }
            out.append(Array(value[at..<(at + n)]))
            at += n
        }
        return out
    }

    /// `[id, [field, value, ...]]`, as XRANGE and XREAD write an entry.
    func write(to out: inout RESPWriter) {
        out.arrayHeader(2)
        out.bulk(id.text)
        out.arrayHeader(fields.count)
        for f in fields { out.bulk(f) }
    }
}

/// Reads of a stream's entries for the stream commands.
extension Call {
    /// The live stream at `key`, nil when missing; WRONGTYPE for another type.
    func stream(_ key: [UInt8]) throws(CommandError) -> CollectionMetadata? {
        try collection(key, .stream)
    }

    /// Visits the entries with IDs in `from...to` in ID order (backward when `reverse`), while
    /// `body` returns true.
    func scanEntries(_ meta: CollectionMetadata, of key: [UInt8], from: StreamID, to: StreamID, reverse: Bool = false,
                     _ body: (StreamEntry) throws(CommandError) -> Bool) throws(CommandError) {
        guard from <= to else { return }
        try scanMembers(meta, of: key, .member, from: from.bytes, to: to.next?.bytes, reverse: reverse) {
            sub, value throws(CommandError) -> Bool in
            try body(StreamEntry(id: StreamID(bytes: sub), fields: StreamEntry.fields(value)))
        }
    }

    /// `scanEntries` of the stream `change` stages.
    func scanEntries(_ change: CollectionChange, from: StreamID, to: StreamID, reverse: Bool = false,
                     _ body: (_ id: StreamID, _ value: [UInt8]) throws(CommandError) -> Bool) throws(CommandError) {
        guard from <= to else { return }
        try scanMembers(change, .member, from: from.bytes, to: to.next?.bytes, reverse: reverse) {
            sub, value throws(CommandError) -> Bool in
            try body(StreamID(bytes: sub), value)
        }
    }

    /// The entries in `from...to`, at most `count` (0: all).
    func entries(_ meta: CollectionMetadata, of key: [UInt8], from: StreamID, to: StreamID, count: Int = 0,
                 reverse: Bool = false) throws(CommandError) -> [StreamEntry] {
        var out: [StreamEntry] = []
        try scanEntries(meta, of: key, from: from, to: to, reverse: reverse) { e in
            out.append(e)
            return count == 0 || out.count < count
        }
        return out
    }

    /// The entry `id`, nil when the stream has none.
    func entry(_ meta: CollectionMetadata, of key: [UInt8], _ id: StreamID) throws(CommandError) -> StreamEntry? {
        try member(meta, of: key, .member, id.bytes).map { StreamEntry(id: id, fields: StreamEntry.fields($0)) }
    }

    /// The first (or last) entry's ID, nil when the stream is empty.
    func edgeID(_ meta: CollectionMetadata, of key: [UInt8], last: Bool = false) throws(CommandError) -> StreamID? {
        guard meta.size > 0 else { return nil }
        var found: StreamID? = nil
        try scanMembers(meta, of: key, .member, reverse: last) { sub, _ in
            found = StreamID(bytes: sub)
            return false
        }
        return found
    }
}
