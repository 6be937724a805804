import Rocks

/// A new collection written while it is produced: the result of SUNIONSTORE, ZUNIONSTORE,
/// ZRANGESTORE or COPY, which can hold millions of members.
///
/// A new collection has a version of its own (`Call.fresh`), so its members are reachable only
/// once its metadata is written: they can go to RocksDB in pieces as they come, each piece its
/// own write, and the metadata last, in the final write. No journal entry is needed (a crash
/// between pieces leaves only members no key reaches) and the whole result is never held in
/// memory at once, nor copied into one big batch. Other clients' writes run between the pieces.
///
/// Between the first piece and the last, the members family's compaction filter would see
/// members of a version no key holds yet and drop them. An *in-flight record*,
/// `new-collection:` + the collection's member prefix in `cairn.meta`, is written with the
/// first piece and deleted with the metadata, in the same writes, so any snapshot sees the
/// record or the metadata (`CollectionLiveness` keeps members the record names). Replicas
/// receive both writes like any other. A start on a primary deletes the records a crash left
/// (`Engine.dropInterruptedNewCollections`): their members are unreachable and compaction may
/// take them.
///
/// Pieces go ahead only where a big write would go in pieces (`Engine.writeClaimed`): outside
/// a transaction, script or MULTI, in a command running under a claim on its keys
/// (`LongWork`). Elsewhere the members collect in the change and commit together.
struct NewCollection {
    private(set) var change: CollectionChange
    private let call: Call
    private let writesAhead: Bool
    /// Whether the in-flight record is written (and so must be deleted by the last write).
    private(set) var inFlight = false

    fileprivate init(_ call: Call, _ key: [UInt8], _ type: KeyType) {
        self.call = call
        change = call.fresh(key, type)
        writesAhead = call.session.transaction == nil && call.engine.locks.holdsClaim
    }

    var meta: CollectionMetadata {
        get { change.meta }
        set { change.meta = newValue }
    }

    /// Adds a member entry; the entries so far go to RocksDB once they fill a piece.
    mutating func put(_ tag: MemberKeys.Tag, _ sub: some Collection<UInt8>, _ value: [UInt8]) throws(CommandError) {
        change.put(tag, sub, value)
        if writesAhead && change.puts.count >= Engine.pieceEntries { try writeAhead() }
    }

    /// Writes the member entries collected so far (with the in-flight record, the first time).
    private mutating func writeAhead() throws(CommandError) {
        let engine = call.engine
        guard let meta = engine.database.family(named: Engine.metaFamilyName) else { return }
        var batch = WriteBatch()
        if !inFlight { batch.put(Engine.inFlightKey(change.prefix), [], in: meta) }
        for (k, v) in change.puts { batch.put(k, v, in: call.members) }
        // Unsynced: the last write syncs (when asked) and makes everything reachable.
        let options = WriteOptions(sync: false, noSlowdown: engine.writeOptions.noSlowdown)
        try engine.storage("write") { try NormalPriorityThread.shared.run { try engine.database.write(batch, options: options) } }
        inFlight = true
        change.removePuts()
    }

    /// Deletes the in-flight record after a failure, so the members written so far count as
    /// unreachable (best effort: a start deletes what is left).
    fileprivate func abandon() {
        guard inFlight, let meta = call.engine.database.family(named: Engine.metaFamilyName) else { return }
        var batch = WriteBatch()
        batch.delete(Engine.inFlightKey(change.prefix), in: meta)
        try? call.engine.database.write(batch, options: WriteOptions(sync: false))
    }
}

extension Call {
    /// Replaces whatever `key` holds with a new collection of `type` that `fill` puts members
    /// into (setting its size), committed with `also` (other collections' changes, e.g. a
    /// moved source's deletion) in the last write; a result left empty deletes `key`
    /// instead. Returns the new collection's metadata. Call under the keys' locks.
    @discardableResult
    func writeNew(
        _ key: [UInt8], _ type: KeyType, also: [CollectionChange] = [],
        _ fill: (inout NewCollection) throws(CommandError) -> Void
    ) throws(CommandError) -> CollectionMetadata {
        var new = NewCollection(self, key, type)
        do {
            try fill(&new)
        } catch {
            new.abandon()
            throw error
        }
        guard new.meta.size > 0 else {
            if try withStored(key, { t, _, _ in t != nil }) { try remove(key) }
            if !also.isEmpty { try commit(also) }
            return new.meta
        }
        try commit([new.change] + also, inFlight: new.inFlight)
        return new.meta
    }
}

extension Engine {
    static let inFlightPrefix = Array("new-collection:".utf8)

    /// The in-flight record of the new collection whose members start with `memberPrefix`.
    static func inFlightKey(_ memberPrefix: [UInt8]) -> [UInt8] { inFlightPrefix + memberPrefix }

    /// Deletes the in-flight records of new collections whose writing a crash (or a primary's
    /// departure) interrupted; their members were never reachable. On a primary only, while no
    /// command runs or under every key lock, like `finishPendingWrites`.
    func dropInterruptedNewCollections() throws {
        guard !replication.isReplica, !diskGuard.isReadOnly, let meta = database.family(named: Engine.metaFamilyName) else { return }
        let records = try database.entries(withPrefix: Engine.inFlightPrefix, in: meta)
        guard !records.isEmpty else { return }
        var batch = WriteBatch()
        for r in records { batch.delete(r.key, in: meta) }
        try database.write(batch, options: WriteOptions(sync: true))
        logger.notice("dropped \(records.count) new collection(s) whose writing was interrupted")
    }
}
