import Rocks
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Drops members of collections that are gone (deleted, expired, overwritten, their family
/// dropped or flushed) when compaction meets them, so that DEL of a collection of any size
/// writes one tombstone and the space still comes back without anyone running COMPACT.
///
/// An entry lives while its user key holds collection metadata with the entry's version
/// (`MemberKeys`), read from the latest data, a `moved` record sends it to a key that does
/// (`CollectionMoves`), or its collection is new and still being written (`NewCollection`). One filter serves one compaction, on one thread; entries arrive in key
/// order, so one collection's entries come together and one lookup serves them all: the
/// filter remembers the last collection's prefix and answer, and compares each key's start with
/// it (no parsing, allocation or hashing per entry). (A collection deleted during a compaction
/// keeps its members until the next one.)
struct MembersCompactionFilterFactory: CompactionFilterFactory {
    var name: String { "cairn.members.v1" }
    let liveness: CollectionLiveness

    func makeFilter() -> any CompactionFilter { MembersCompactionFilter(liveness: liveness) }
}

final class MembersCompactionFilter: CompactionFilter, @unchecked Sendable {
    var name: String { "cairn.members.v1" }
    let liveness: CollectionLiveness
    /// The prefix (family, key, version) of the collection last decided, and the answer. Only
    /// this compaction's thread uses them.
    private var lastPrefix: [UInt8] = []
    private var lastLive = true

    init(liveness: CollectionLiveness) {
        self.liveness = liveness
    }

    func filter(level: Int, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> CompactionDecision {
        // The same collection as the last entry: its whole prefix, then a tag byte (the
        // lengths inside the prefix keep another collection's keys from sharing it).
        if !lastPrefix.isEmpty && key.count > lastPrefix.count
            && lastPrefix.withUnsafeBytes({ memcmp($0.baseAddress!, key.baseAddress!, $0.count) == 0 }) {
            return lastLive ? .keep : .remove
        }
        guard let parsed = MemberKeys.parse(key) else { return .keep }
        lastPrefix = Array(key[..<parsed.tagOffset])
        lastLive = liveness.isLive(parsed)
        return lastLive ? .keep : .remove
    }
}

/// Answers whether a collection version is still the one its key holds, for the members
/// family's compaction filter. Attached to the database once it is open; until then (and once
/// it closes) everything counts as live.
final class CollectionLiveness: Sendable {
    private struct Target: @unchecked Sendable {
        weak var database: Database?
    }
    private let target = Mutex(Target())
    private let clock: @Sendable () -> Int64

    init(clock: @escaping @Sendable () -> Int64 = Clock.milliseconds) {
        self.clock = clock
    }

    func attach(_ database: Database) {
        target.withLock { $0.database = database }
    }

    /// Whether a member entry belongs to a live collection: the one at its key with its
    /// version, or the one a `moved` record sends it to (`CollectionMoves`). Both are read from
    /// one snapshot, so a RENAME committing meanwhile cannot make a live collection look gone.
    func isLive(_ entry: MemberKeys.Parsed) -> Bool {
        if entry.family == Engine.metaFamilyName || entry.family == Engine.membersFamilyName { return true }
        return withSnapshot { database, options in
            guard let family = database.family(named: entry.family) else { return false }
            if let meta = try metadata(entry.key, in: family, database, options), meta.version == entry.version, meta.home == nil {
                return true
            }
            guard let metaFamily = database.family(named: Engine.metaFamilyName) else { return false }
            // A new collection still being written: its metadata comes with its last piece.
            let prefix = MemberKeys.prefix(family: entry.family, key: entry.key, version: entry.version)
            if try database.get(Engine.inFlightKey(prefix), in: metaFamily, options: options) != nil { return true }
            guard let target = try database.get(CollectionMoves.recordKey(family: entry.family, home: entry.key, version: entry.version), in: metaFamily, options: options)
            else { return false }
            guard let meta = try metadata(target, in: family, database, options) else { return false }
            return meta.version == entry.version && meta.home == entry.key
        }
    }

    /// Whether a `moved` record still names its collection (`MovedRecordsFilter`).
    func movedRecordIsLive(_ record: MemberKeys.Parsed, target: [UInt8]) -> Bool {
        withSnapshot { database, options in
            guard let family = database.family(named: record.family),
                  let meta = try metadata(target, in: family, database, options)
            else { return false }
            return meta.version == record.version && meta.home == record.key
        }
    }

    /// Runs `body` over a snapshot of the attached database; true (keep) when there is none or
    /// a read fails: unsure, a later compaction decides.
    private func withSnapshot(_ body: (Database, ReadOptions) throws -> Bool) -> Bool {
        guard let database = target.withLock({ $0.database }), !database.isClosed else { return true }
        do {
            let snapshot = try database.snapshot()
            defer { snapshot.release() }
            var options = ReadOptions()
            options.snapshot = snapshot
            options.fillCache = false
            return try body(database, options)
        } catch {
            return true
        }
    }

    /// The live collection metadata at `key`, or nil.
    private func metadata(_ key: [UInt8], in family: ColumnFamily, _ database: Database, _ options: ReadOptions) throws -> CollectionMetadata? {
        let now = clock()
        return try database.withValue(forKey: key, in: family, options: options) { raw in
            guard let raw, let h = ValueFormat.header(of: raw), let type = KeyType(rawValue: h.type), type != .string,
                  !h.isExpired(now: now)
            else { return nil }
            return CollectionMetadata(type: type, payload: UnsafeRawBufferPointer(rebasing: raw[h.payloadOffset...]), expiresAt: h.expiresAt)
        }
    }
}
