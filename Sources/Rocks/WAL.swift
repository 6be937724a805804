import CRocksDB

/// The write-ahead log as a stream of write batches, for replication: a primary reads the
/// batches written since a sequence number (`updates(since:)`) and ships their bytes; a
/// replica writes those bytes as they are (`write(serializedBatch:)`), so both databases assign
/// the same sequence numbers to the same writes.
/// https://github.com/facebook/rocksdb/wiki/Replication-Helpers
extension Database {
    /// The batches written at or after `sequence`, oldest first, as far as the WAL (live and
    /// archived, see `DatabaseOptions.walTTLSeconds`) still holds them. Throws when the WAL no
    /// longer reaches back to `sequence`.
    public func updates(since sequence: UInt64) throws -> WALIterator {
        try ensureOpen()
        let raw = try rocksCall { err in rocksdb_get_updates_since(self.raw, sequence, nil, err) }
        guard let raw else { throw StorageError(code: .ioError, message: "no WAL iterator for sequence \(sequence)") }
        return WALIterator(raw: raw, owner: self)
    }

    /// Writes a batch in RocksDB's serialized form (`WriteBatch.data`, `WALIterator.Entry.data`):
    /// puts, merges, deletes and range deletes of any family, by the families' ids.
    public func write(serializedBatch bytes: [UInt8], options: WriteOptions = .default) throws {
        try ensureOpen()
        let batch = bytes.withChars { p, n in rocksdb_writebatch_create_from(p, n) }
        guard let batch else { throw StorageError(code: .invalidArgument, message: "not a write batch") }
        defer { rocksdb_writebatch_destroy(batch) }
        let w = writeOptions(options)
        try rocksCall { err in rocksdb_write(raw, w, batch, err) }
    }

    /// RocksDB's id of a family: what serialized batches name it by.
    public func familyID(_ family: ColumnFamily) throws -> UInt32 {
        rocksdb_column_family_handle_get_id(try family.checkedRaw())
    }
}

/// Reads write batches from the WAL in order. Single-owner; destroyed with the value.
public final class WALIterator {
    let raw: OpaquePointer
    /// Keeps the database open while the iterator lives.
    private let owner: Database

    init(raw: OpaquePointer, owner: Database) {
        self.raw = raw
        self.owner = owner
    }

    deinit { rocksdb_wal_iter_destroy(raw) }

    /// One write batch: the sequence number of its first operation, its operation count and
    /// its serialized bytes.
    public struct Entry: Sendable {
        public var sequence: UInt64
        public var count: Int
        public var data: [UInt8]
    }

    private var started = false

    /// The next batch, or nil at the end of what is written so far: calling again later reads
    /// on in the same WAL file. Throws when the WAL is unreadable or has a gap, and (RocksDB's
    /// `TryAgain`) when the writes went on in a newer WAL file: then make a new iterator with
    /// `updates(since:)` from the next sequence number.
    public func next() throws -> Entry? {
        if started { rocksdb_wal_iter_next(raw) } else { started = true }
        guard rocksdb_wal_iter_valid(raw) != 0 else {
            try rocksCall { err in rocksdb_wal_iter_status(raw, err) }
            return nil
        }
        var sequence: UInt64 = 0
        guard let batch = rocksdb_wal_iter_get_batch(raw, &sequence) else { return nil }
        defer { rocksdb_writebatch_destroy(batch) }
        var size = 0
        let p = rocksdb_writebatch_data(batch, &size)
        let data = Array(UnsafeRawBufferPointer(start: p, count: size))
        return Entry(sequence: sequence, count: Int(rocksdb_writebatch_count(batch)), data: data)
    }
}
