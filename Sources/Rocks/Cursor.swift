import CRocksDB

/// A position in one column family's ordered keys (a RocksDB iterator).
///
/// Not thread-safe: use it from one thread at a time. Keeps the database, the read options and
/// their bound buffers alive; `close()` (or deinit) destroys the iterator. `key` and `value`
/// copy; `withKey`/`withValue` lend RocksDB's memory until the next move.
public final class Cursor {
    let database: Database
    let family: ColumnFamily?
    private let readOptions: ReadOptionsHandle
    private var iterator: OpaquePointer?

    init(database: Database, family: ColumnFamily?, cf: OpaquePointer, options: ReadOptions) {
        self.database = database
        self.family = family
        self.readOptions = ReadOptionsHandle(options)
        self.iterator = rocksdb_create_iterator_cf(database.raw, readOptions.raw, cf)
        database.cursorCount.add(1, ordering: .relaxed)
    }

    deinit { close() }

    /// Destroys the iterator. Idempotent.
    public func close() {
        guard let it = iterator else { return }
        iterator = nil
        rocksdb_iter_destroy(it)
        database.cursorCount.add(-1, ordering: .relaxed)
    }

    private var it: OpaquePointer {
        precondition(iterator != nil, "cursor used after close()")
        return iterator!
    }

    public func seekToFirst() { rocksdb_iter_seek_to_first(it) }
    public func seekToLast() { rocksdb_iter_seek_to_last(it) }
    /// Moves to the first key >= `key`.
    public func seek(_ key: [UInt8]) { key.withChars { rocksdb_iter_seek(it, $0, $1) } }
    /// Moves to the last key <= `key`.
    public func seekForPrev(_ key: [UInt8]) { key.withChars { rocksdb_iter_seek_for_prev(it, $0, $1) } }
    public func next() { rocksdb_iter_next(it) }
    public func prev() { rocksdb_iter_prev(it) }

    public var isValid: Bool { iterator != nil && rocksdb_iter_valid(it) != 0 }

    public var key: [UInt8] { withKey { Array($0) } }
    public var value: [UInt8] { withValue { Array($0) } }

    public func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var length = 0
        let p = rocksdb_iter_key(it, &length)
        return try body(UnsafeRawBufferPointer(start: p, count: length))
    }

    public func withValue<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var length = 0
        let p = rocksdb_iter_value(it, &length)
        return try body(UnsafeRawBufferPointer(start: p, count: length))
    }

    /// Throws the error that ended the iteration early, if any (call when `isValid` is false).
    public func check() throws {
        try rocksCall { err in rocksdb_iter_get_error(it, err) }
    }
}

@available(*, unavailable)
extension Cursor: Sendable {}
