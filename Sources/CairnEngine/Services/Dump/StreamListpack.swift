/// One node of a Redis 7.0 stream, a listpack built as `streamAppendItem` builds it: the master
/// entry (live count, deleted count, the first entry's field names, a 0 terminator), then each
/// entry as its flags, its ID as the difference from the master ID, its fields (only the values
/// when they are the master's, flag SAMEFIELDS), and lp-count, how many listpack elements the
/// entry took so it can be walked backward.
/// https://github.com/redis/redis/blob/7.0/src/t_stream.c (streamAppendItem)
struct StreamListpack {
    /// Entry flags (t_stream.c).
    static let deletedFlag: Int64 = 1
    static let sameFieldsFlag: Int64 = 2

    /// The node's key in Redis's radix tree: its first entry's ID.
    let master: StreamID
    /// The master entry's field names.
    let masterFields: [[UInt8]]
    private var entries = ListpackWriter()
    private(set) var live = 0

    /// A node whose first entry has fields and values `fields` (alternating).
    init(master: StreamID, fields: [[UInt8]]) {
        self.master = master
        masterFields = stride(from: 0, to: fields.count - 1, by: 2).map { fields[$0] }
    }

    /// Appends entry `id` (above every ID already in) with fields and values `fields`.
    mutating func append(_ id: StreamID, _ fields: [[UInt8]]) {
        let pairs = fields.count / 2
        let same = pairs == masterFields.count && (0..<pairs).allSatisfy { fields[2 * $0] == masterFields[$0] }
        entries.append(integer: same ? Self.sameFieldsFlag : 0)
        // Unsigned differences read as signed, as Redis stores them (the sequence's is negative
        // when the millisecond part grew).
        entries.append(integer: Int64(bitPattern: id.ms &- master.ms))
        entries.append(integer: Int64(bitPattern: id.seq &- master.seq))
        if !same { entries.append(integer: Int64(pairs)) }
        for i in 0..<pairs {
            if !same { entries.append(fields[2 * i]) }
            entries.append(fields[2 * i + 1])
        }
        entries.append(integer: Int64(3 + pairs + (same ? 0 : pairs + 1)))
        live += 1
    }

    /// The listpack's bytes.
    func finish() -> [UInt8] {
        var lp = ListpackWriter()
        lp.append(integer: Int64(live))
        lp.append(integer: 0)  // deleted: Cairn keeps no deleted entries
        lp.append(integer: Int64(masterFields.count))
        for f in masterFields { lp.append(f) }
        lp.append(integer: 0)
        lp.append(contentsOf: entries)
        return lp.finish()
    }
}
