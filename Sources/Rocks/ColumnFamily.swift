import CRocksDB
import Synchronization

/// A column family of an open database: a separate key space with its own options.
///
/// The C handle is destroyed exactly once: when the database closes, or when the last
/// reference goes away after a drop. `@unchecked Sendable`: the handle is thread-safe in
/// RocksDB and its state flags are atomic.
public final class ColumnFamily: @unchecked Sendable {
    public let name: String
    let raw: OpaquePointer
    private let state = Mutex<State>(.open)

    enum State { case open, dropped, destroyed }

    init(name: String, raw: OpaquePointer) {
        self.name = name
        self.raw = raw
    }

    public var isDropped: Bool { state.withLock { $0 != .open } }

    func checkedRaw() throws -> OpaquePointer {
        switch state.withLock({ $0 }) {
        case .open: return raw
        case .dropped: throw StorageError(code: .familyDropped, message: "column family '\(name)' was dropped")
        case .destroyed: throw StorageError(code: .closed, message: "the database of column family '\(name)' is closed")
        }
    }

    func markDropped() { state.withLock { if $0 == .open { $0 = .dropped } } }

    /// Destroys the C handle (at database close). Later calls throw `.closed`.
    func destroy() {
        let shouldDestroy = state.withLock { s -> Bool in
            guard s != .destroyed else { return false }
            s = .destroyed
            return true
        }
        if shouldDestroy { rocksdb_column_family_handle_destroy(raw) }
    }
}
