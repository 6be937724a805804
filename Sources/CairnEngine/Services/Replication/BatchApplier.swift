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
/// Batches that arrived together and follow one another (each starts where the one before
/// ends) are written as one RocksDB write (`SerializedBatch.joined`): one WAL record and one
/// write group instead of one per batch, which is most of what a small batch costs. Their
/// operations still take the primary's sequence numbers, since every operation takes the next
/// one whatever batch it is in. The replica's WAL then holds batch boundaries the primary's did
/// not; its own feeders start inside such a batch when asked to (`WALFeed`).
///
/// Column families are created and dropped outside the WAL, but CF.CREATE and CF.DROP record
/// the family in the `cairn.meta` family (`family:NAME`) in the same order, so a batch that
/// puts such a key creates the family on the replica first, and one that deletes it drops the
/// family first too (the primary dropped it before writing that batch). The put's value
/// carries the family's merge operator and table options (`FamilySettings`), so the replica's
/// family is created as the primary's was. A crash between the family change and the write
/// repeats the batch at restart, and the change is idempotent. CF.CREATE and CF.DROP are
/// serialised on the primary (`Engine.familyChanges`), so both sides create families in the
/// same order and RocksDB gives them the same ids, which is how serialized batches name them.
/// Such a batch (and one that changes function libraries) is written alone, never joined.
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

    /// One batch as the primary sent it: its first sequence number and its serialized bytes.
    public struct ReceivedBatch: Sendable {
        public var sequence: UInt64
        public var data: [UInt8]
        public init(sequence: UInt64, data: [UInt8]) {
            self.sequence = sequence
            self.data = data
        }
    }

    /// Batches joined into one write reach at most about this many bytes, so one write does
    /// not hold the keys' stripes (and the link's reports) for long.
    public static let joinedBytesLimit = 4 << 20

    /// Writes one batch from the primary; false when it was applied before (skipped). With a
    /// `generation` (a link's), only while that generation is current.
    @discardableResult
    public func apply(_ engine: Engine, sequence: UInt64, data: [UInt8], generation: Int? = nil) throws(ApplyError) -> Bool {
        try apply(engine, [ReceivedBatch(sequence: sequence, data: data)], generation: generation).batches == 1
    }

    /// Writes `batches` from the primary in order, each run of batches that follow one another
    /// as one write; returns how many batches were written (the others had been applied before)
    /// and in how many writes. Stops at the first error: the batches before it stay written.
    /// With a `generation` (a link's), only while that generation is current.
    @discardableResult
    public func apply(_ engine: Engine, _ batches: [ReceivedBatch], generation: Int? = nil) throws(ApplyError) -> (batches: Int, writes: Int) {
        var at = 0
        var written = 0
        var writes = 0
        while at < batches.count {
            let run = try linkGate.withLock { (_: inout Void) throws(ApplyError) -> Range<Int> in
                if let generation, generation != self.generation { throw .linkEnded }
                return try applyGate.withLock { (closed: inout Bool) throws(ApplyError) -> Range<Int> in
                    guard !closed else { throw .storage("the server is stopping") }
                    return try applyRun(engine, batches, from: at)
                }
            }
            if !run.isEmpty {
                written += run.count
                writes += 1
            }
            at = max(run.upperBound, at + 1)
        }
        return (written, writes)
    }

    /// Writes the batches from `start` on that follow one another with no family event (at
    /// least the one at `start`); returns the range written, empty when the batch at `start`
    /// was applied before.
    private func applyRun(_ engine: Engine, _ batches: [ReceivedBatch], from start: Int) throws(ApplyError) -> Range<Int> {
        let first = batches[start]
        guard let firstCount = SerializedBatch.count(first.data) else {
            throw .storage("a batch of \(first.data.count) bytes is not a write batch")
        }
        guard firstCount > 0 else { return start..<start }
        let database = engine.database
        guard !database.isClosed else { throw .storage("the database is being replaced") }
        let latest = database.latestSequenceNumber
        if first.sequence + UInt64(firstCount) - 1 <= latest { return start..<start }
        guard first.sequence == latest + 1 else { throw .outOfOrder(expected: latest + 1, got: first.sequence) }
        let metaID = metaFamilyID(database)
        let events = FamilyEvents.find(in: first.data, metaID: metaID)
        var end = start + 1
        var count = UInt64(firstCount)
        if events.isEmpty {
            var bytes = first.data.count
            while end < batches.count && bytes < Self.joinedBytesLimit {
                let next = batches[end]
                guard let c = SerializedBatch.count(next.data), c > 0, next.sequence == first.sequence + count,
                      count + UInt64(c) <= UInt64(UInt32.max),
                      FamilyEvents.find(in: next.data, metaID: metaID).isEmpty else { break }
                count += UInt64(c)
                bytes += next.data.count
                end += 1
            }
        }
        let data = end == start + 1 ? first.data : SerializedBatch.joined(batches[start..<end].map(\.data), sequence: first.sequence)
        try write(engine, data, sequence: first.sequence, count: count, events: events)
        return start..<end
    }

    /// Writes `data` (a batch from the primary, or several joined) after its family changes.
    private func write(_ engine: Engine, _ data: [UInt8], sequence: UInt64, count: UInt64, events: FamilyEvents.Found) throws(ApplyError) {
        let database = engine.database
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
            writes.wakeBlocked(engine)
            if events.functionsChanged { engine.scripting.librariesChanged() }
            // The primary's keyspace events, now that the writes they describe are here.
            if engine.activeEventClasses != 0 { Self.publishEvents(in: data, engine: engine) }
        } catch {
            if let e = error as? StorageError { engine.diskGuard.noteFailure(e, engine: engine) }
            throw .storage("writing the batch at sequence \(sequence) failed: \(error)")
        }
        let after = database.latestSequenceNumber
        guard after == sequence + count - 1 else {
            throw .storage("after the batch at sequence \(sequence) (\(count) operations) the latest sequence is \(after), not \(sequence + count - 1)")
        }
    }

    /// Publishes the keyspace events a primary wrote into `data` as log data, in order
    /// (`KeyspaceEvents`), filtered by this server's own `notify-keyspace-events`.
    static func publishEvents(in data: [UInt8], engine: Engine) {
        var reader = BatchReader(data)
        while let record = reader.next() {
            guard record.kind == .logData, let events = KeyspaceEvents.decode(record.value) else { continue }
            engine.publish(events)
        }
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

    struct Found {
        var created: [Created] = []
        var dropped: [String] = []
        var functionsChanged = false

        var isEmpty: Bool { created.isEmpty && dropped.isEmpty && !functionsChanged }
    }

    static let marker = Array("family:".utf8)

    static func find(in data: [UInt8], metaID: UInt32?) -> Found {
        guard let metaID else { return Found() }
        let families = contains(data, marker)
        let functions = contains(data, Scripting.libraryKeyPrefix)
        guard families || functions else { return Found() }
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
        return Found(created: created, dropped: dropped, functionsChanged: functionsChanged)
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
