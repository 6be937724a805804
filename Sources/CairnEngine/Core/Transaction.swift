import Foundation
import Rocks

/// The writes of one EXEC, script or batched run: a RocksDB write batch plus an overlay so later
/// commands of the same transaction read what earlier ones wrote.
///
/// Collections' metadata is staged apart from the batch (`stage(_:)`): sixteen HSETs of one
/// hash in a group change its metadata sixteen times, but only the last state is written, once.
/// The batch's order still matters when another operation of the same transaction writes the
/// same key or a range over it (SET of the key after an HSET, DEL, DELRANGE, FLUSHDB, MERGE), so
/// the rule is: **every write to the batch other than a member entry first writes the staged
/// metadata** (`writeStagedMetadata`). Staged metadata is therefore always newer than anything
/// in the batch for its key, and writing it at any moment is correct. Member entries live in the
/// members family, where no metadata and no user key is ever written, so their order against the
/// staged metadata does not matter; against each other and against FLUSHDB's range deletion of
/// the members family they keep their order, except that a run of them made in descending key
/// order is held back and written reversed (`writeUnwrittenMembers`), at commit or before that
/// deletion: RocksDB's skip list keeps the place of its last insert, so ascending inserts (a
/// batch of LPUSHes) search on from their neighbour instead of from the top of the list.
final class Transaction {
    /// Written only through the methods below, which keep the rule above.
    private var batch = WriteBatch()
    /// Per family name, per key: the stored bytes (header included) or nil when deleted. A
    /// collection's staged metadata is not here until written (`staged(_:in:)` reads both);
    /// member entries are in `stagedMembers`.
    var overlay: [String: [ByteKey: [UInt8]?]] {
        index()
        return indexed
    }
    /// `overlay` once read; until then writes wait in `unindexed`, so a transaction that never
    /// reads what it wrote (a round of SETs) builds no dictionary at all.
    private var indexed: [String: [ByteKey: [UInt8]?]] = [:]
    private var unindexed: [(family: String, key: [UInt8], stored: [UInt8]?)] = []
    private var read = false
    /// Member entries (members family) written: the value, or nil when deleted. Nothing else
    /// writes that family inside a transaction but FLUSHDB's range deletion, whose collections
    /// are then gone (new ones get new versions), so no cleared flag or range applies here.
    private(set) var stagedMembers: [ByteKey: [UInt8]?] = [:]
    /// Member entries held back from `batch`, in the order made, each before the one before it
    /// (all in `membersHandle`); once one is not (`membersUnordered`), entries go straight in.
    private var unwrittenMembers: [(key: [UInt8], value: [UInt8]?)] = []
    private var membersHandle: ColumnFamily?
    private var membersUnordered = false
    /// Families FLUSHDB'd inside this transaction: keys not in the overlay read as missing.
    private(set) var cleared: Set<String> = []
    /// Ranges `[lower, end)` DELRANGE'd inside this transaction, per family: keys in them not
    /// written again since read as missing.
    private(set) var deletedRanges: [String: [(lower: [UInt8], end: [UInt8])]] = [:]
    /// Lock stripes of the keys this transaction wrote (`changed(stripe:)`): EXEC moves their
    /// versions once the batch committed, so WATCHes fire only for a transaction that changed
    /// something.
    private(set) var changedStripes: [Int] = []

    /// Records that a key of `stripe` was written. Repeats are allowed (appending is cheaper
    /// than hashing, and moving a version twice is harmless), but not in a row: a script
    /// writing one key a million times keeps one entry, not a million.
    func changed(stripe: Int) {
        if changedStripes.last != stripe { changedStripes.append(stripe) }
    }
    /// Keyspace events its commands recorded (`Call.notify`): written into the batch for
    /// replicas (`writeEvents`) and published once it committed.
    var events: [KeyspaceEvents.Event] = []

    /// Writes `events` (but key misses, which replicas do not see) into the batch as log
    /// data, so a replica finds them with the writes they describe.
    func writeEvents() {
        let replicated = events.filter { $0.type != .keyMiss && $0.scope != .local }
        guard !replicated.isEmpty else { return }
        batch.putLogData(KeyspaceEvents.encode(replicated))
    }

    /// Set by FLUSHDB and DELRANGE inside the transaction: any key may change.
    private(set) var changedUnknownKeys = false
    /// Per collection (its `MemberKeys.prefix`), the keys of `stagedMembers` under it in order:
    /// built by the first ordered read of that collection (`stagedMembers(of:from:to:)`), kept
    /// up to date after, so a run of pops or ranges merges only the entries in its range.
    private var memberOrder: [ByteKey: [[UInt8]]] = [:]
    /// Where the pops of this transaction left the live entries of a sorted set's or set's index
    /// (`PoppedFronts`), by index prefix; shared once the batch committed.
    var poppedBounds: [ByteKey: PoppedFronts.Bounds] = [:]
    /// Cursors over collection indexes (`MemberKeys.prefix` and tag) this transaction scanned,
    /// kept for its later scans of the same index (`Call.scanStored`).
    private var cursors: [ByteKey: IndexCursor] = [:]
    /// Collections' latest metadata not yet in `batch`, per family name, per key.
    private var stagedMetadata: [FamilyKey: StagedCollection] = [:]

    /// A key in a family, hashed in one pass (one hasher for the name and the bytes).
    struct FamilyKey: Hashable {
        let family: String
        let key: [UInt8]

        func hash(into hasher: inout Hasher) {
            hasher.combine(family)
            key.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// A collection's metadata as the transaction last changed it, with what reading it again
    /// would otherwise recompute (the decoded metadata, its members' key prefix).
    struct StagedCollection {
        let handle: ColumnFamily
        /// Gone (`isGone`: a size of 0) deletes the key.
        var meta: CollectionMetadata
        /// `MemberKeys.prefix` of this version.
        var prefix: [UInt8]
    }

    /// `expectedCommands`: how many commands will run in it (a batched run knows), so the
    /// member overlay is sized once instead of rehashing as it grows.
    init(expectedCommands: Int = 0) {
        expected = expectedCommands
        if expectedCommands > 1 { changedStripes.reserveCapacity(expectedCommands) }
    }

    /// `expectedCommands`: each family's overlay is sized for that many keys when first written.
    private let expected: Int

    /// Records `key`'s latest value for later reads of the transaction: in `unindexed` until
    /// something reads, then in the overlay of `family`, made with room for the expected keys (a
    /// batched round of 800 SETs grew it eight times, rehashing every key each time).
    private func noteStaged(_ key: [UInt8], _ stored: [UInt8]?, in family: String) {
        guard read else {
            unindexed.append((family, key, stored))
            return
        }
        if indexed[family] == nil { indexed[family] = Dictionary(minimumCapacity: max(expected, unindexed.count)) }
        indexed[family]![ByteKey(key)] = .some(stored)
    }

    /// Moves the writes waiting in `unindexed` into the overlay, in order; from now on writes
    /// go straight there.
    private func index() {
        guard !read else { return }
        read = true
        let waiting = unindexed
        unindexed = []
        for w in waiting { noteStaged(w.key, w.stored, in: w.family) }
    }

    /// Whether nothing was written (a read-only EXEC, a script that wrote nothing).
    var isEmpty: Bool { batch.isEmpty && stagedMetadata.isEmpty && unwrittenMembers.isEmpty }

    /// What this transaction staged for `key`: `.some(bytes)`, `.some(nil)` when it deleted
    /// the key (directly, by FLUSHDB or by DELRANGE), or nil when the database decides.
    func staged(_ key: [UInt8], in family: String) -> [UInt8]?? {
        if !stagedMetadata.isEmpty, let c = stagedMetadata[FamilyKey(family: family, key: key)] { return .some(c.meta.isGone ? nil : c.meta.stored) }
        if let value = overlay[family]?[ByteKey(key)] { return value }
        if cleared.contains(family) { return .some(nil) }
        for r in deletedRanges[family] ?? [] where !key.lexicographicallyPrecedes(r.lower) && key.lexicographicallyPrecedes(r.end) {
            return .some(nil)
        }
        return nil
    }

    /// What this transaction staged for member entry `key`, like `staged(_:in:)`.
    func stagedMember(_ key: [UInt8]) -> [UInt8]?? {
        stagedMembers.isEmpty ? nil : stagedMembers[ByteKey(key)]
    }

    /// The metadata this transaction staged for collection `key` and not yet wrote, if any.
    func stagedCollection(_ key: [UInt8], in family: String) -> StagedCollection? {
        stagedMetadata.isEmpty ? nil : stagedMetadata[FamilyKey(family: family, key: key)]
    }

    /// The cursor kept over collection index `index`, made by `make` the first time.
    func cursor(over index: [UInt8], make: () throws -> Cursor) rethrows -> IndexCursor {
        if let kept = cursors[ByteKey(index)] { return kept }
        let made = IndexCursor(try make())
        cursors[ByteKey(index)] = made
        return made
    }

    /// A cursor over one collection index, kept by a transaction across its scans, and the
    /// last key it stepped over: no stored key lies between that key and where the cursor
    /// stands (it moved from one to the other), so a scan starting between them need not seek.
    final class IndexCursor {
        let cursor: Cursor
        private var reverse = false
        /// Nil when the cursor was placed by a seek and has not moved since.
        var passed: [UInt8]?

        init(_ cursor: Cursor) { self.cursor = cursor }

        /// Whether the cursor already stands where a seek would place it: forward, on the first
        /// key at or after `lower`; backward, on the last key before `upper`.
        func standsAtFirst(_ lower: [UInt8]?, before upper: [UInt8]?, reverse: Bool) -> Bool {
            guard reverse == self.reverse, let passed else { return false }
            if !reverse {
                guard let lower, Bytes.compare(lower, passed) > 0 else { return false }
                return !cursor.isValid || cursor.withKey { Self.compare(lower, $0) <= 0 }
            }
            guard let upper, Bytes.compare(upper, passed) <= 0 else { return false }
            return !cursor.isValid || cursor.withKey { Self.compare(upper, $0) > 0 }
        }

        /// After a scan: the cursor moved (backward when `reverse`), last stepping over `passed`.
        func moved(reverse: Bool, passed: [UInt8]?) {
            guard let passed else { return }
            self.reverse = reverse
            self.passed = passed
        }

        private static func compare(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Int {
            let common = min(a.count, b.count)
            let c = a.withUnsafeBytes { x in common == 0 ? 0 : memcmp(x.baseAddress!, b.baseAddress!, common) }
            return c != 0 ? Int(c) : a.count - b.count
        }
    }

    // MARK: writes

    /// Stages a collection's new metadata (deleting the key when its size is 0); written to the
    /// batch once, at commit or before the next write that is not a member entry.
    func stage(_ key: [UInt8], _ meta: CollectionMetadata, prefix: [UInt8], in family: Family) {
        stagedMetadata[FamilyKey(family: family.name, key: key)] = StagedCollection(handle: family.handle, meta: meta, prefix: prefix)
    }

    /// Writes the staged metadata into the batch (and the overlay). Always correct: staged
    /// metadata is newer than anything in the batch for its key.
    private func writeStagedMetadata() {
        guard !stagedMetadata.isEmpty else { return }
        for (at, c) in stagedMetadata {
            let stored: [UInt8]? = c.meta.isGone ? nil : c.meta.stored
            if let stored { batch.put(at.key, stored, in: c.handle) } else { batch.delete(at.key, in: c.handle) }
            noteStaged(at.key, stored, in: at.family)
        }
        stagedMetadata.removeAll()
    }

    /// Puts a member entry of the collection whose entries start with `collection`
    /// (`MemberKeys.prefix`): no metadata to write first (see the type's comment).
    func putMember(_ key: [UInt8], _ value: [UInt8], collection: [UInt8], in members: ColumnFamily) {
        stageMember(key, [UInt8]?.some(value), collection: collection, in: members)
    }

    func deleteMember(_ key: [UInt8], collection: [UInt8], in members: ColumnFamily) {
        stageMember(key, [UInt8]?.none, collection: collection, in: members)
    }

    /// Records a member entry's latest value and writes it to the batch, or holds it back while
    /// the entries staged so far run in descending key order (`writeUnwrittenMembers`).
    private func stageMember(_ key: [UInt8], _ value: [UInt8]?, collection: [UInt8], in members: ColumnFamily) {
        if let handle = membersHandle, handle !== members { writeUnwrittenMembers() }
        membersHandle = members
        if !membersUnordered, let last = unwrittenMembers.last, Bytes.compare(key, last.key) >= 0 {
            writeUnwrittenMembers()
            membersUnordered = true
        }
        if membersUnordered {
            if let value { batch.put(key, value, in: members) } else { batch.delete(key, in: members) }
        } else {
            unwrittenMembers.append((key, value))
        }
        // Sized at the first entry, not before: most rounds of plain writes stage none.
        if stagedMembers.isEmpty && expected > 1 { stagedMembers.reserveCapacity(2 * expected) }
        if stagedMembers.updateValue(value, forKey: ByteKey(key)) == nil { noteOrder(of: key, in: collection) }
    }

    /// Writes the held-back member entries into the batch, reversed: they were made in
    /// descending key order (LPUSHes and RPOPs of a list move its head or tail down) and RocksDB
    /// inserts an ascending run faster. Distinct keys, so their order changes nothing else.
    /// (Sorting every batch was measured too: random fields, as HSET and ZADD write them, gained
    /// nothing from it and paid for the sort.)
    private func writeUnwrittenMembers() {
        guard let members = membersHandle else { return }
        for (key, value) in unwrittenMembers.reversed() {
            if let value { batch.put(key, value, in: members) } else { batch.delete(key, in: members) }
        }
        unwrittenMembers.removeAll(keepingCapacity: true)
    }

    /// A key new to `stagedMembers` joins its collection's order, when one was built.
    private func noteOrder(of key: [UInt8], in collection: [UInt8]) {
        guard !memberOrder.isEmpty, let i = memberOrder.index(forKey: ByteKey(collection)) else { return }
        let at = Self.firstIndex(notBefore: key, in: memberOrder.values[i])
        memberOrder.values[i].insert(key, at: at)  // in place: one lookup, no copy
    }

    /// The member-entry keys this transaction staged in `[lower, upper)` (nil: no upper bound)
    /// of the collection whose entries start with `collection`, in order.
    func stagedMembers(of collection: [UInt8], from lower: [UInt8], to upper: [UInt8]?) -> ArraySlice<[UInt8]> {
        guard !stagedMembers.isEmpty else { return [] }
        let order: [[UInt8]]
        if let built = memberOrder[ByteKey(collection)] {
            order = built
        } else {
            order = stagedMembers.keys.lazy.map(\.bytes).filter { $0.starts(with: collection) }.sorted { Bytes.compare($0, $1) < 0 }
            memberOrder[ByteKey(collection)] = order
        }
        let from = Self.firstIndex(notBefore: lower, in: order)
        let to = upper.map { Self.firstIndex(notBefore: $0, in: order) } ?? order.count
        return from < to ? order[from..<to] : []
    }

    /// Binary search: the index of the first key of `order` not before `key`.
    private static func firstIndex(notBefore key: [UInt8], in order: [[UInt8]]) -> Int {
        var low = 0, high = order.count
        while low < high {
            let mid = (low + high) / 2
            if Bytes.compare(order[mid], key) < 0 { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Stores an encoded value (header included) under `key`.
    func put(_ key: [UInt8], _ stored: [UInt8], in family: Family) {
        writeStagedMetadata()
        batch.put(key, stored, in: family.handle)
        noteStaged(key, stored, in: family.name)
    }

    func delete(_ key: [UInt8], in family: Family) {
        writeStagedMetadata()
        batch.delete(key, in: family.handle)
        noteStaged(key, nil, in: family.name)
    }

    /// Stages a merge of `operand` into `key`; `result` is the merged value later reads of the
    /// transaction see.
    func merge(_ key: [UInt8], _ operand: [UInt8], result: [UInt8], in family: Family) {
        writeStagedMetadata()
        batch.merge(key, operand, in: family.handle)
        noteStaged(key, result, in: family.name)
    }

    /// Stages a range deletion: later reads of the transaction see the range empty.
    func deleteRange(from lower: [UInt8], to end: [UInt8], in family: Family) {
        writeStagedMetadata()
        batch.deleteRange(from: lower, to: end, in: family.handle)
        changedUnknownKeys = true
        deletedRanges[family.name, default: []].append((lower, end))
        index()
        if var staged = indexed[family.name] {
            for key in staged.keys where !key.bytes.lexicographicallyPrecedes(lower) && key.bytes.lexicographicallyPrecedes(end) {
                staged[key] = .some(nil)
            }
            indexed[family.name] = staged
        }
    }

    /// FLUSHDB of `family` inside the transaction: deletes every key before `storedEnd` (just
    /// past the last stored key, nil when none) and every key written earlier in the
    /// transaction, with the family's collections' members; later reads see it empty.
    func clear(_ family: Family, storedEnd: [UInt8]?) {
        // Past the stored keys and the ones written earlier in this transaction, which the
        // database does not hold yet.
        let staged = endPastStagedKeys(in: family.name)
        if let end = [storedEnd, staged].compactMap({ $0 }).max(by: { $0.lexicographicallyPrecedes($1) }) {
            batch.deleteRange(from: [], to: end, in: family.handle)
            let members = MemberKeys.familyRange(family.name)
            writeUnwrittenMembers()  // entries staged before the deletion go before it
            batch.deleteRange(from: members.lower, to: members.upper, in: family.members)
            changedUnknownKeys = true
        }
        index()
        indexed[family.name] = [:]
        cleared.insert(family.name)
    }

    /// Just past the largest key this transaction wrote in `family` (nil when none): an
    /// unbounded DELRANGE inside EXEC must cover keys only the batch holds. Writes the staged
    /// metadata first, so those keys count.
    func endPastStagedKeys(in family: String) -> [UInt8]? {
        writeStagedMetadata()
        return overlay[family]?.compactMap { $0.value == nil ? nil : $0.key.bytes }.max { $0.lexicographicallyPrecedes($1) }.map { $0 + [0] }
    }

    /// Calls `body` with the finished batch (staged metadata written): what commits.
    func withBatch<R, E: Error>(_ body: (borrowing WriteBatch) throws(E) -> R) throws(E) -> R {
        writeUnwrittenMembers()
        writeStagedMetadata()
        return try body(batch)
    }
}
