/// Reads the records of RocksDB's serialized write batch (db/write_batch.cc): after a 12-byte
/// header (sequence, count), each record is a type byte, for the `ColumnFamily*` types a varint
/// family id, then length-prefixed key and, for puts and merges, value.
struct BatchReader {
    enum Kind { case put, delete, merge, rangeDeletion, logData }
    struct Record {
        var kind: Kind
        var family: UInt32
        var key: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
    }

    private let data: [UInt8]
    private var at = 12

    init(_ data: [UInt8]) { self.data = data }

    private mutating func varint() -> UInt32? {
        var result: UInt32 = 0
        var shift: UInt32 = 0
        while at < data.count && shift <= 28 {
            let b = data[at]
            at += 1
            result |= UInt32(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }

    private mutating func slice() -> ArraySlice<UInt8>? {
        guard let n = varint(), at + Int(n) <= data.count else { return nil }
        defer { at += Int(n) }
        return data[at..<at + Int(n)]
    }

    private var stopped = false

    /// Where the next record starts (after `next()`, where the one it returned ends).
    var offset: Int { at }

    /// Whether every record was read: false after `next()` stopped early, at a type this
    /// reader does not know or at a malformed record.
    var readAll: Bool { !stopped && at >= data.count }

    /// The next record, or nil at the end (or at a type this reader does not know).
    mutating func next() -> Record? {
        guard !stopped, at < data.count else { return nil }
        if let record = read() { return record }
        stopped = true
        return nil
    }

    private mutating func read() -> Record? {
        let tag = data[at]
        at += 1
        var family: UInt32 = 0
        // Types with a family id: ColumnFamilyDeletion 4, Value 5, Merge 6, SingleDeletion 8,
        // RangeDeletion 14.
        if [4, 5, 6, 8, 14].contains(tag) {
            guard let f = varint() else { return nil }
            family = f
        }
        switch tag {
        case 0, 4, 7, 8:  // deletions
            guard let key = slice() else { return nil }
            return Record(kind: .delete, family: family, key: key, value: [])
        case 1, 5:  // values
            guard let key = slice(), let value = slice() else { return nil }
            return Record(kind: .put, family: family, key: key, value: value)
        case 2, 6:  // merges
            guard let key = slice(), let value = slice() else { return nil }
            return Record(kind: .merge, family: family, key: key, value: value)
        case 14, 15:  // range deletions: key is the start, value the end
            guard let key = slice(), let value = slice() else { return nil }
            return Record(kind: .rangeDeletion, family: family, key: key, value: value)
        case 3:  // log data: the blob in `value`
            guard let blob = slice() else { return nil }
            return Record(kind: .logData, family: 0, key: [], value: blob)
        default:
            return nil
        }
    }
}

/// The 12-byte header of RocksDB's serialized write batch: the sequence number of its first
/// operation (8 bytes, little-endian) and its operation count (4 bytes). Each operation (every
/// record but log data) takes the next sequence number when the batch is written.
enum SerializedBatch {
    static let headerSize = 12

    /// The operation count, or nil when `data` is too short to be a batch.
    static func count(_ data: [UInt8]) -> UInt32? {
        guard data.count >= headerSize else { return nil }
        return UInt32(data[8]) | UInt32(data[9]) << 8 | UInt32(data[10]) << 16 | UInt32(data[11]) << 24
    }

    static func appendHeader(sequence: UInt64, count: UInt32, to out: inout [UInt8]) {
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(i)))) }
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: count >> (8 * UInt32(i)))) }
    }

    /// One batch holding the operations of `batches` in order (each one's records after its
    /// header), numbered from `sequence`: written at once, its operations take the same
    /// sequence numbers they would have taken written one after the other.
    static func joined(_ batches: some Collection<[UInt8]>, sequence: UInt64) -> [UInt8] {
        var count: UInt32 = 0
        var size = headerSize
        for data in batches {
            count += SerializedBatch.count(data) ?? 0
            size += data.count - headerSize
        }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        appendHeader(sequence: sequence, count: count, to: &out)
        for data in batches { out.append(contentsOf: data[headerSize...]) }
        return out
    }

    /// The rest of the batch `data` (which starts at `sequence`) from sequence `from` on: its
    /// first `from - sequence` operations (and the log data among them) left out. A replica
    /// writes several of its primary's batches as one, so its WAL can hold a batch that
    /// starts before the sequence a follower asks for. Nil when `from` is not inside the
    /// batch or a record before it cannot be read.
    static func suffix(of data: [UInt8], startingAt sequence: UInt64, from: UInt64) -> [UInt8]? {
        guard let count = count(data), from >= sequence, from - sequence < UInt64(count) else { return nil }
        let skip = Int(from - sequence)
        var reader = BatchReader(data)
        var skipped = 0
        while skipped < skip {
            guard let record = reader.next() else { return nil }
            if record.kind != .logData { skipped += 1 }
        }
        var out: [UInt8] = []
        out.reserveCapacity(headerSize + data.count - reader.offset)
        appendHeader(sequence: from, count: count - UInt32(skip), to: &out)
        out.append(contentsOf: data[reader.offset...])
        return out
    }
}
