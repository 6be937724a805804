import Rocks
#if canImport(Glibc)
import Glibc
#endif

/// A replica writes its primary's batches here, in order, each as RocksDB serialized it.
///
/// Before a batch is written its first sequence number must be the one after the replica's
/// latest: then RocksDB gives its operations the same sequence numbers the primary's have, and
/// the two stay equal. A batch already applied (a resend after a reconnect) is skipped; any
/// other mismatch stops the link and makes the next sync a full one.
///
/// Column families are created and dropped outside the WAL, but CF.CREATE and CF.DROP record
/// the family in the `cairn.meta` family (`family:NAME`) in the same order, so a batch that
/// puts such a key creates the family on the replica first, and one that deletes it drops the
/// family first too (the primary dropped it before writing that batch). The put's value
/// carries the family's merge operator and table options (`FamilySettings`), so the replica's
/// family is created as the primary's was. A crash between the
/// family change and the write repeats the batch at restart, and the change is idempotent. CF.CREATE and CF.DROP are serialised on the primary (`Engine.familyChanges`),
/// so both sides create families in the same order and RocksDB gives them the same ids, which
/// is how serialized batches name them.
///
/// The batch is written holding the lock stripes of the keys it changes, which then move
/// (`ReplicatedWrites`), so a WATCH on the replica fires as it would for a local write.
extension Replication {
    public enum ApplyError: Error, CustomStringConvertible {
        /// Not the next batch: the histories differ.
        case outOfOrder(expected: UInt64, got: UInt64)
        case storage(String)
        /// The link's generation ended (REPLICAOF changed): nothing was written.
        case linkEnded

        public var description: String {
            switch self {
            case .outOfOrder(let expected, let got): "expected the batch at sequence \(expected), got one at \(got)"
            case .storage(let what): what
            case .linkEnded: "the replication target changed"
            }
        }
    }

    /// Writes one batch from the primary; false when it was applied before (skipped). With a
    /// `generation` (a link's), only while that generation is current.
    @discardableResult
    public func apply(_ engine: Engine, sequence: UInt64, data: [UInt8], generation: Int? = nil) throws(ApplyError) -> Bool {
        try linkGate.withLock { (_: inout Void) throws(ApplyError) -> Bool in
            if let generation, generation != self.generation { throw .linkEnded }
            return try applyGate.withLock { (closed: inout Bool) throws(ApplyError) -> Bool in
                guard !closed else { throw .storage("the server is stopping") }
                return try applyOne(engine, sequence: sequence, data: data)
            }
        }
    }

    private func applyOne(_ engine: Engine, sequence: UInt64, data: [UInt8]) throws(ApplyError) -> Bool {
        guard data.count >= 12 else { throw .storage("a batch of \(data.count) bytes is not a write batch") }
        let count = UInt64(data[8]) | UInt64(data[9]) << 8 | UInt64(data[10]) << 16 | UInt64(data[11]) << 24
        guard count > 0 else { return false }
        let database = engine.database
        guard !database.isClosed else { throw .storage("the database is being replaced") }
        let latest = database.latestSequenceNumber
        if sequence + count - 1 <= latest { return false }
        guard sequence == latest + 1 else { throw .outOfOrder(expected: latest + 1, got: sequence) }
        let events = FamilyEvents.find(in: data, metaID: metaFamilyID(database))
        do {
            // Before the write, so the offset never shows a batch whose family change is not
            // done yet. A dropped family: the primary dropped it before writing this batch, so
            // nothing here or later names it.
            for family in events.created { try engine.createReplicatedFamily(family.name, settings: family.settings) }
            for name in events.dropped { try engine.dropReplicatedFamily(name) }
            let writes = ReplicatedWrites.find(in: data, engine: engine)
            try engine.locks.withLocks([], in: engine.defaultFamily, plus: writes.stripes, all: writes.all) { () throws in
                try database.write(serializedBatch: data, options: engine.writeOptions)
                // Landed: WATCHes of these keys fire (the stripes are held, as for any write).
                if writes.all {
                    engine.locks.changedEveryStripe()
                } else {
                    for stripe in writes.stripes { engine.locks.changed(stripe: stripe) }
                }
            }
            if events.functionsChanged { engine.scripting.librariesChanged() }
        } catch {
            if let e = error as? StorageError { engine.diskGuard.noteFailure(e, engine: engine) }
            throw .storage("writing the batch at sequence \(sequence) failed: \(error)")
        }
        let after = database.latestSequenceNumber
        guard after == sequence + count - 1 else {
            throw .storage("after the batch at sequence \(sequence) (\(count) operations) the latest sequence is \(after), not \(sequence + count - 1)")
        }
        return true
    }

    private func metaFamilyID(_ database: Database) -> UInt32? {
        guard let meta = database.family(named: Engine.metaFamilyName) else { return nil }
        return try? database.familyID(meta)
    }
}

/// Families a serialized batch creates or drops: its puts and deletes of `family:NAME` in the
/// meta family; and whether it changes function libraries (`function:NAME` there).
enum FamilyEvents {
    struct Created { var name: String; var settings: FamilySettings }

    static let marker = Array("family:".utf8)

    static func find(in data: [UInt8], metaID: UInt32?) -> (created: [Created], dropped: [String], functionsChanged: Bool) {
        guard let metaID else { return ([], [], false) }
        let families = contains(data, marker)
        let functions = contains(data, Scripting.libraryKeyPrefix)
        guard families || functions else { return ([], [], false) }
        var created: [Created] = []
        var dropped: [String] = []
        var functionsChanged = false
        var reader = BatchReader(data)
        while let record = reader.next() {
            guard record.family == metaID else { continue }
            if record.key.starts(with: Scripting.libraryKeyPrefix) { functionsChanged = true }
            guard record.key.starts(with: marker) else { continue }
            let name = String(decoding: record.key.dropFirst(marker.count), as: UTF8.self)
            switch record.kind {
            case .put: created.append(Created(name: name, settings: FamilySettings(decoding: record.value)))
            case .delete: dropped.append(name)
            default: break
            }
        }
        return (created, dropped, functionsChanged)
    }

    /// Whether `needle` occurs in `data`: memchr for its first byte, then a compare (every
    /// replicated batch is checked, so this must be quick).
    private static func contains(_ data: [UInt8], _ needle: [UInt8]) -> Bool {
        data.withUnsafeBytes { d in
            needle.withUnsafeBytes { n in
                guard let base = d.baseAddress, d.count >= n.count else { return false }
                var at = 0
                while at + n.count <= d.count {
                    guard let hit = memchr(base + at, Int32(n[0]), d.count - n.count + 1 - at) else { return false }
                    let offset = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + offset, n.baseAddress!, n.count) == 0 { return true }
                    at = offset + 1
                }
                return false
            }
        }
    }
}

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
        case 3:  // log data
            guard slice() != nil else { return nil }
            return Record(kind: .logData, family: 0, key: [], value: [])
        default:
            return nil
        }
    }
}
