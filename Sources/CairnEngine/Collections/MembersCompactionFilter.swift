import Rocks
import Synchronization

/// Drops members of collections that are gone (deleted, expired, overwritten, their family
/// dropped or flushed) when compaction meets them, so that DEL of a collection of any size
/// writes one tombstone and the space still comes back without anyone running COMPACT.
///
/// An entry lives while its user key holds collection metadata with the entry's version
/// (`MemberKeys`), read from the latest data. One filter serves one compaction, on one thread;
/// entries arrive in key order, so it remembers its answers for the compaction's length and
/// one lookup serves a whole collection. (A collection deleted during a compaction keeps its
/// members until the next one.)
struct MembersCompactionFilterFactory: CompactionFilterFactory {
    var name: String { "cairn.members.v1" }
    let liveness: CollectionLiveness

    func makeFilter() -> any CompactionFilter { MembersCompactionFilter(liveness: liveness) }
}

final class MembersCompactionFilter: CompactionFilter, @unchecked Sendable {
    var name: String { "cairn.members.v1" }
    let liveness: CollectionLiveness
    /// Answers by collection prefix (family, key, version). Only this compaction's thread uses it.
    private var answers: [[UInt8]: Bool] = [:]

    init(liveness: CollectionLiveness) {
        self.liveness = liveness
    }

    func filter(level: Int, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> CompactionDecision {
        guard let parsed = MemberKeys.parse(key) else { return .keep }
        let prefix = Array(key[..<parsed.tagOffset])
        if let known = answers[prefix] { return known ? .keep : .remove }
        let live = liveness.isLive(parsed)
        if answers.count >= 4096 { answers.removeAll(keepingCapacity: true) }
        answers[prefix] = live
        return live ? .keep : .remove
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

    func isLive(_ entry: MemberKeys.Parsed) -> Bool {
        let now = clock()
        guard let database = target.withLock({ $0.database }), !database.isClosed else { return true }
        let live: Bool
        if let family = database.family(named: entry.family) {
            do {
                live = try database.withValue(forKey: entry.key, in: family) { raw in
                    guard let raw, let h = ValueFormat.header(of: raw), let type = KeyType(rawValue: h.type), type != .string,
                          !h.isExpired(now: now),
                          let meta = CollectionMetadata(type: type, payload: UnsafeRawBufferPointer(rebasing: raw[h.payloadOffset...]), expiresAt: h.expiresAt)
                    else { return false }
                    return meta.version == entry.version
                }
            } catch {
                return true  // unsure: keep it for a later compaction
            }
        } else {
            live = entry.family == Engine.metaFamilyName || entry.family == Engine.membersFamilyName
        }
        return live
    }
}
