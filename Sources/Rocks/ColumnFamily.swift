import CRocksDB
import Synchronization

/// A column family of an open database: a separate key space with its own options.
///
/// The C handle is destroyed exactly once: when the database closes, or when the last
/// reference goes away after a drop. `@unchecked Sendable`: the handle is thread-safe in
/// RocksDB and its state is atomic.
public final class ColumnFamily: @unchecked Sendable {
    public let name: String
    let raw: OpaquePointer
    /// `State`'s raw value: read on every batch entry (`WriteBatch.put`), so an atomic rather
    /// than a lock. A dropped family's handle lives while a batch holds the family.
    private let state = Atomic<UInt8>(State.open.rawValue)

    enum State: UInt8 { case open, dropped, destroyed }

    init(name: String, raw: OpaquePointer) {
        self.name = name
        self.raw = raw
    }

    public var isDropped: Bool { state.load(ordering: .acquiring) != State.open.rawValue }

    func checkedRaw() throws -> OpaquePointer {
        switch State(rawValue: state.load(ordering: .acquiring)) {
        case .open?: return raw
        case .dropped?: throw StorageError(code: .familyDropped, message: "column family '\(name)' was dropped")
        default: throw StorageError(code: .closed, message: "the database of column family '\(name)' is closed")
        }
    }

    func markDropped() {
        _ = state.compareExchange(expected: State.open.rawValue, desired: State.dropped.rawValue, ordering: .acquiringAndReleasing)
    }

    /// Destroys the C handle (at database close). Later calls throw `.closed`.
    func destroy() {
        let before = state.exchange(State.destroyed.rawValue, ordering: .acquiringAndReleasing)
        if before != State.destroyed.rawValue { rocksdb_column_family_handle_destroy(raw) }
    }
}
