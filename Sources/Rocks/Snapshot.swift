import CRocksDB

/// A consistent read-only view of the database at one sequence number.
///
/// A reader only (the design's rule: capabilities are protocols). Keeps its database alive;
/// `close()` on the database refuses while a snapshot is open. Release it when done: an open
/// snapshot keeps old versions of keys from being compacted away.
public final class Snapshot: KeyValueReader, @unchecked Sendable {
    public let database: Database
    private var handle: OpaquePointer?
    private let lock = Lock()
    public let sequenceNumber: UInt64

    init(database: Database) {
        self.database = database
        // RocksDB 7.8's C API has no snapshot_get_sequence_number; a new snapshot sits at the
        // latest sequence number, read just before (writes in between are not in it either way).
        sequenceNumber = rocksdb_get_latest_sequence_number(database.raw)
        handle = rocksdb_create_snapshot(database.raw)
        database.snapshotCount.add(1, ordering: .relaxed)
    }

    var raw: OpaquePointer? { lock.withLock { handle } }
    public var isReleased: Bool { raw == nil }

    /// Releases the snapshot. Idempotent; reads afterwards throw.
    public func release() {
        guard let snap = lock.withLock({ () -> OpaquePointer? in
            defer { handle = nil }
            return handle
        }) else { return }
        if !database.isClosed { rocksdb_release_snapshot(database.raw, snap) }
        database.snapshotCount.add(-1, ordering: .relaxed)
    }

    deinit { release() }

    private func options() throws -> ReadOptions {
        guard !isReleased else { throw StorageError(code: .invalidArgument, message: "the snapshot was released") }
        var o = ReadOptions()
        o.snapshot = self
        return o
    }

    public func get(_ key: [UInt8], in family: ColumnFamily? = nil) throws -> [UInt8]? {
        try database.get(key, in: family, options: options())
    }

    public func withValue<R>(forKey key: [UInt8], in family: ColumnFamily? = nil, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try database.withValue(forKey: key, in: family, options: options(), body)
    }

    public func multiGet(_ keys: [[UInt8]], in family: ColumnFamily? = nil) throws -> [[UInt8]?] {
        try database.multiGet(keys, in: family, options: options())
    }

    /// A cursor reading as of the snapshot; `options.snapshot` is replaced by this one.
    public func makeCursor(in family: ColumnFamily? = nil, options: ReadOptions = .default) throws -> Cursor {
        var o = options
        o.snapshot = try self.options().snapshot
        return try database.makeCursor(in: family, options: o)
    }
}
