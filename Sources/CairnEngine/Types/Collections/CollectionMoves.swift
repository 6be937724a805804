import Rocks

/// Where renamed collections went. RENAME of a hash, set, sorted set or list moves only its
/// metadata (O(1), as in Redis): the members stay keyed under the name they were written with,
/// which the metadata now records as its `home`. A record in `cairn.meta`,
///
/// ```
/// "moved:" + MemberKeys.prefix(family, home, version)  ->  the key the collection is at now
/// ```
///
/// written in the same batch as the metadata, lets the members family's compaction filter find
/// it (`CollectionLiveness`): an entry lives if the metadata at its home has its version, or if
/// the record names a key whose metadata has its version and that home. A record whose
/// collection is gone (deleted, expired, overwritten, moved home again) is dropped by the meta
/// family's compaction filter (`MovedRecordsFilter`).
enum CollectionMoves {
    static let recordPrefix = Array("moved:".utf8)

    /// The record of the collection whose members are stored under `home` with `version`.
    static func recordKey(family: String, home: [UInt8], version: UInt64) -> [UInt8] {
        recordPrefix + MemberKeys.prefix(family: family, key: home, version: version)
    }

    /// The home, version and family a record key names; nil for any other key.
    static func parse(_ key: UnsafeRawBufferPointer) -> MemberKeys.Parsed? {
        guard key.count > recordPrefix.count, key.starts(with: recordPrefix) else { return nil }
        return MemberKeys.parse(UnsafeRawBufferPointer(rebasing: key[recordPrefix.count...]))
    }
}

/// Drops `moved` records whose collection is gone (see `CollectionMoves`); keeps everything else
/// in `cairn.meta`.
struct MovedRecordsFilterFactory: CompactionFilterFactory {
    var name: String { "cairn.meta.v1" }
    let liveness: CollectionLiveness

    func makeFilter() -> any CompactionFilter { MovedRecordsFilter(liveness: liveness) }
}

final class MovedRecordsFilter: CompactionFilter, @unchecked Sendable {
    var name: String { "cairn.meta.v1" }
    let liveness: CollectionLiveness

    init(liveness: CollectionLiveness) { self.liveness = liveness }

    func filter(level: Int, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> CompactionDecision {
        guard let parsed = CollectionMoves.parse(key) else { return .keep }
        return liveness.movedRecordIsLive(parsed, target: Array(value)) ? .keep : .remove
    }
}
