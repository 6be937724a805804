import CRocksDB

/// One backup as the backup engine lists it.
public struct BackupInfo: Sendable, Hashable {
    public var id: UInt32
    /// Unix seconds.
    public var timestamp: Int64
    public var size: UInt64
    public var fileCount: UInt32
}

/// Incremental backups of a database into a directory: table files unchanged since an earlier
/// backup are shared, so N backups of a mostly unchanged database take about one copy.
/// https://github.com/facebook/rocksdb/wiki/How-to-backup-RocksDB
///
/// `@unchecked Sendable`: calls are serialised by `lock` (RocksDB's BackupEngine is not
/// thread-safe).
public final class BackupEngine: @unchecked Sendable {
    private var raw: OpaquePointer?
    private let lock = Lock()
    public let directory: String

    private init(raw: OpaquePointer, directory: String) {
        self.raw = raw
        self.directory = directory
    }

    public static func open(at directory: String) throws -> BackupEngine {
        BackupEngine(raw: try openRaw(at: directory), directory: directory)
    }

    private static func openRaw(at directory: String) throws -> OpaquePointer {
        let opts = rocksdb_options_create()
        defer { rocksdb_options_destroy(opts) }
        let be = try rocksCall { err in rocksdb_backup_engine_open(opts, directory, err) }
        guard let be else { throw StorageError(code: .unknown, message: "no backup engine for \(directory)") }
        return be
    }

    private func withEngine<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        try lock.withLock {
            guard let be = raw else { throw StorageError(code: .closed, message: "the backup engine is closed") }
            return try body(be)
        }
    }

    /// Backs up `db` (flushing memtables first when `flushFirst`, so the WAL is not needed).
    @discardableResult
    public func createBackup(of db: Database, flushFirst: Bool = true) throws -> BackupInfo {
        try db.ensureOpen()
        try withEngine { be in
            try rocksCall { err in rocksdb_backup_engine_create_new_backup_flush(be, db.raw, flushFirst ? 1 : 0, err) }
        }
        guard let latest = try backups().last else {
            throw StorageError(code: .unknown, message: "backup created but not listed")
        }
        return latest
    }

    /// Every backup, oldest first.
    public func backups() throws -> [BackupInfo] {
        try withEngine { be in
            let info = rocksdb_backup_engine_get_backup_info(be)
            defer { rocksdb_backup_engine_info_destroy(info) }
            let n = rocksdb_backup_engine_info_count(info)
            return (0..<n).map { i in
                BackupInfo(
                    id: rocksdb_backup_engine_info_backup_id(info, i),
                    timestamp: rocksdb_backup_engine_info_timestamp(info, i),
                    size: rocksdb_backup_engine_info_size(info, i),
                    fileCount: rocksdb_backup_engine_info_number_files(info, i))
            }
        }
    }

    /// Checks that every file of the backup exists with the recorded size and checksum.
    public func verify(_ id: UInt32) throws {
        try withEngine { be in try rocksCall { err in rocksdb_backup_engine_verify_backup(be, id, err) } }
    }

    /// Deletes all but the newest `count` backups.
    public func purge(keeping count: Int) throws {
        try withEngine { be in try rocksCall { err in rocksdb_backup_engine_purge_old_backups(be, UInt32(count), err) } }
    }

    /// Restores backup `id` (nil = the latest) into `dbDirectory`, which must not be open.
    /// When it throws, nothing is writing into `dbDirectory` any more.
    public func restore(_ id: UInt32? = nil, toDatabaseAt dbDirectory: String, walDirectory: String? = nil) throws {
        try lock.withLock {
            guard let be = raw else { throw StorageError(code: .closed, message: "the backup engine is closed") }
            let ro = rocksdb_restore_options_create()
            defer { rocksdb_restore_options_destroy(ro) }
            let wal = walDirectory ?? dbDirectory
            do {
                try rocksCall { err in
                    if let id {
                        rocksdb_backup_engine_restore_db_from_backup(be, dbDirectory, wal, ro, id, err)
                    } else {
                        rocksdb_backup_engine_restore_db_from_latest_backup(be, dbDirectory, wal, ro, err)
                    }
                }
            } catch {
                // RocksDB returns at the first file that failed while its copier thread goes on
                // through the files queued after it. Closing the engine joins that thread.
                rocksdb_backup_engine_close(be)
                raw = try? Self.openRaw(at: directory)
                throw error
            }
        }
    }

    public func close() {
        lock.withLock {
            if let b = raw { rocksdb_backup_engine_close(b) }
            raw = nil
        }
    }

    deinit { close() }
}
