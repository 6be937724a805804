import Rocks

/// A new collection written while it is produced: the result of SUNIONSTORE, ZUNIONSTORE,
/// ZRANGESTORE or COPY, which can hold millions of members.
///
/// A new collection has a version of its own (`Call.fresh`), so its members are reachable only
/// once its metadata is written: they can go to RocksDB in pieces as they come, each piece its
/// own write, and the metadata last, in the final write. No journal entry is needed (a crash
/// between pieces leaves only members no key reaches) and the whole result is never held in
/// memory at once, nor copied into one big batch (each entry goes straight into the piece's
/// RocksDB batch). Other clients' writes run between the pieces; the metadata goes last, alone.
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
struct NewCollection: ~Copyable {
    private(set) var change: CollectionChange
    private let call: Call
    private let members: ColumnFamily
    private let writesAhead: Bool
    /// Writing ahead: the entries not yet written, and a member key reused for each of them
    /// (the collection's prefix, then the tag and sub-key of the last one).
    private var pending = WriteBatch()
    private var key: [UInt8]
    /// Whether the in-flight record is written (and so must be deleted by the last write).
    private(set) var inFlight = false

    fileprivate init(_ call: Call, _ key: [UInt8], _ type: KeyType) {
        self.call = call
        members = call.members
        change = call.fresh(key, type)
        writesAhead = call.session.transaction == nil && call.engine.locks.holdsClaim
        self.key = change.prefix
    }

    var meta: CollectionMetadata {
        get { change.meta }
        _modify { yield &change.meta }  // `meta.size += 1` per member, without copying the metadata
    }

    /// Adds a member entry; written ahead, the entries so far go to RocksDB once they fill a piece.
    mutating func put(_ tag: MemberKeys.Tag, _ sub: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws(CommandError) {
        guard writesAhead else {
            change.put(tag, sub, Array(value))
            return
        }
        append(tag, sub, value)
        if pending.count >= Engine.pieceEntries { try writeAhead() }
    }

    mutating func put(_ tag: MemberKeys.Tag, _ sub: [UInt8], _ value: [UInt8]) throws(CommandError) {
        guard writesAhead else {
            change.put(tag, sub, value)
            return
        }
        value.withUnsafeBytes { append(tag, sub, $0) }
        if pending.count >= Engine.pieceEntries { try writeAhead() }
    }

    /// An entry without a value (a set's member).
    static var noValue: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

    /// Adds the entry to the pending piece (copied into it).
    private mutating func append(_ tag: MemberKeys.Tag, _ sub: some Collection<UInt8>, _ value: UnsafeRawBufferPointer) {
        key.removeSubrange(change.prefix.count...)
        key.append(tag.rawValue)
        key.append(contentsOf: sub)
        key.withUnsafeBytes { pending.put($0, value, in: members) }
    }

    /// Adds an entry copied from another collection: `suffix` is its key past that
    /// collection's prefix (tag and sub-key).
    mutating func putCopied(_ suffix: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws(CommandError) {
        guard let tag = suffix.first.flatMap(MemberKeys.Tag.init(rawValue:)) else { return }
        try put(tag, UnsafeRawBufferPointer(rebasing: suffix.dropFirst()), value)
    }

    /// Writes the entries collected so far (with the in-flight record, the first time).
    fileprivate mutating func writeAhead() throws(CommandError) {
        guard writesAhead, pending.count > 0 else { return }
        let engine = call.engine
        guard let meta = engine.database.family(named: Engine.metaFamilyName) else { return }
        if !inFlight { pending.put(Engine.inFlightKey(change.prefix), [], in: meta) }
        // Unsynced: the last write syncs (when asked) and makes everything reachable.
        let options = WriteOptions(sync: false, noSlowdown: engine.writeOptions.noSlowdown)
        try engine.storage("write") { try NormalPriorityThread.shared.run { try engine.database.write(pending, options: options) } }
        inFlight = true
        pending.clear()
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
            if !new.meta.isGone { try new.writeAhead() }
        } catch {
            new.abandon()
            throw error
        }
        guard !new.meta.isGone else {
            if try withStored(key, { t, _, _ in t != nil }) {
                try remove(key)
                // Redis's *STORE commands publish `del` when an empty result deletes the key.
                notify(.generic, "del", key)
            }
            if !also.isEmpty { try commit(also) }
            return new.meta
        }
        try commit([new.change] + also, inFlight: new.inFlight)
        return new.meta
    }
}

extension Call {
    /// Copies every member entry of collection `key` (`meta`) into `new` (COPY): straight from
    /// a RocksDB cursor to the new batch, or through the running transaction's overlay.
    func copyMembers(_ meta: CollectionMetadata, of key: [UInt8], into new: inout NewCollection) throws(CommandError) {
        guard session.transaction == nil else {
            for tag in [MemberKeys.Tag.member, .score] {
                try scanMembers(meta, of: key, tag) { (sub, value) throws(CommandError) -> Bool in
                    try new.put(tag, sub, value)
                    return true
                }
            }
            return
        }
        let prefix = meta.memberPrefix(family: family.name, key: key)
        var options = readOptions
        options.lowerBound = prefix
        options.upperBound = Call.prefixEnd(prefix)
        options.fillCache = false
        let members = self.members
        let database = self.database
        let cursor = try engine.storage("member scan") { try database.makeCursor(in: members, options: options) }
        defer { cursor.close() }
        cursor.seek(prefix)
        var failure: CommandError? = nil
        while cursor.isValid && failure == nil {
            cursor.withKey { k in
                cursor.withValue { v in
                    do throws(CommandError) {
                        try new.putCopied(UnsafeRawBufferPointer(rebasing: k[prefix.count...]), v)
                    } catch {
                        failure = error
                    }
                }
            }
            cursor.next()
        }
        if let failure { throw failure }
        try engine.storage("member scan") { try cursor.check() }
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
