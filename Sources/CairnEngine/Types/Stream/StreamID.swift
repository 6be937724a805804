/// A stream entry's ID, `<milliseconds>-<sequence>`, ordered as Redis orders them: by time,
/// then sequence. Stored as 16 bytes big-endian (`bytes`), so the entries of a stream sort in
/// ID order in the members family.
struct StreamID: Comparable, Hashable, Sendable, CustomStringConvertible {
    var ms: UInt64
    var seq: UInt64

    static let zero = StreamID(ms: 0, seq: 0)
    static let max = StreamID(ms: .max, seq: .max)

    static func < (a: StreamID, b: StreamID) -> Bool {
        a.ms != b.ms ? a.ms < b.ms : a.seq < b.seq
    }

    var description: String { "\(ms)-\(seq)" }
    var text: [UInt8] { Array(description.utf8) }

    /// The 16-byte sub-key of the entry (and of its pending-list records).
    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        BigEndian.append(ms, to: &out)
        BigEndian.append(seq, to: &out)
        return out
    }

    init(ms: UInt64, seq: UInt64) {
        self.ms = ms
        self.seq = seq
    }

    init(bytes: some Collection<UInt8>) {
        let a = Array(bytes)
        ms = BigEndian.read(UInt64.self, a[0...])
        seq = BigEndian.read(UInt64.self, a[8...])
    }

    init(raw: UnsafeRawBufferPointer, at offset: Int = 0) {
        ms = BigEndian.read(UInt64.self, raw, at: offset)
        seq = BigEndian.read(UInt64.self, raw, at: offset + 8)
    }

    /// The next ID up, nil past the last one.
    var next: StreamID? {
        if seq < .max { return StreamID(ms: ms, seq: seq + 1) }
        if ms < .max { return StreamID(ms: ms + 1, seq: 0) }
        return nil
    }

    /// The next ID down, nil below 0-0.
    var previous: StreamID? {
        if seq > 0 { return StreamID(ms: ms, seq: seq - 1) }
        if ms > 0 { return StreamID(ms: ms - 1, seq: .max) }
        return nil
    }

    /// Redis's `streamGenericParseIDOrReply`: `ms-seq`, or `ms` alone (the sequence then
    /// `missingSequence`); `-` and `+` as the lowest and highest IDs when `specials`. Nil when
    /// malformed.
    static func parse(_ bytes: [UInt8], missingSequence: UInt64 = 0, specials: Bool = true) -> StreamID? {
        if specials && bytes.count == 1 {
            if bytes[0] == UInt8(ascii: "-") { return .zero }
            if bytes[0] == UInt8(ascii: "+") { return .max }
        }
        guard bytes.count <= 127 else { return nil }
        if let dash = bytes.firstIndex(of: UInt8(ascii: "-")) {
            guard let ms = unsigned(bytes[..<dash]), let seq = unsigned(bytes[(dash + 1)...]) else { return nil }
            return StreamID(ms: ms, seq: seq)
        }
        guard let ms = unsigned(bytes[...]) else { return nil }
        return StreamID(ms: ms, seq: missingSequence)
    }

    /// Redis's `string2ull`: decimal digits only, within 64 bits (a leading `-` is refused, as
    /// `strtoull` would wrap it).
    private static func unsigned(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 20 else { return nil }
        var v: UInt64 = 0
        for d in digits {
            guard d >= 48 && d <= 57 else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(d - 48))
            guard !o1 && !o2 else { return nil }
            v = s
        }
        return v
    }
}
