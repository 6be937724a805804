#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Makes the WAL durable by fsyncing its files from our own descriptors, beside RocksDB's
/// write queue rather than in it.
///
/// A sync write (`WriteOptions(sync: true)`) syncs inside RocksDB's write group: every write
/// queued behind it waits for the fsync, so once a second all clients stall for as long as
/// the disk takes (at -P 1 this alone made SET's p99 several times Redis's). RocksDB writes
/// each write group's WAL records to the file before the write returns (`manual_wal_flush`
/// off), so they are in the page cache, and an `fdatasync` of the file from any descriptor
/// makes them durable: that is what `appendfsync everysec` promises, as Redis's background
/// fsync does. `rocksdb_flush_wal(sync)` would also sync beside the queue, but it aborts
/// Debian's librocksdb (built with assertions) when an append just failed on a full disk;
/// our own `fdatasync` of that file only returns an error or nothing to do.
///
/// Every live `*.log` in the database directory is synced, because a write may have gone to a
/// log that was current a moment ago; a log that has since gone (archived or deleted) was
/// flushed to a synced table file first. When a new log has appeared, the directory is synced
/// too, so the new file's name survives a power loss (RocksDB would do so on its first sync
/// write).
public final class WALFileSync: Sendable {
    /// What one sync covered.
    public struct Report: Sendable, Equatable {
        /// The log files synced, by name.
        public var files: [String]
        /// Whether the directory was synced too (a log had appeared since the last sync).
        public var directorySynced: Bool
    }

    private let directory: String
    /// The logs whose names the directory sync has already made durable.
    private let known = Mutex<Set<String>>([])

    init(directory: String) { self.directory = directory }

    func sync() throws -> Report {
        let names = try walFileNames()
        let appeared = known.withLock { known in
            let new = !names.isSubset(of: known)
            known = names
            return new
        }
        var synced: [String] = []
        for name in names.sorted() {
            let fd = open(directory + "/" + name, O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                if errno == ENOENT { continue }  // archived or deleted since the listing: flushed
                throw WALFileSync.error("open", name)
            }
            defer { close(fd) }
            if fdatasync(fd) != 0 { throw WALFileSync.error("fdatasync", name) }
            synced.append(name)
        }
        if appeared {
            let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw WALFileSync.error("open", directory) }
            defer { close(fd) }
            if fsync(fd) != 0 {
                known.withLock { $0 = [] }  // try the directory again next time
                throw WALFileSync.error("fsync", directory)
            }
        }
        return Report(files: synced, directorySynced: appeared)
    }

    private func walFileNames() throws -> Set<String> {
        guard let dir = opendir(directory) else { throw WALFileSync.error("opendir", directory) }
        defer { closedir(dir) }
        var names: Set<String> = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.hasSuffix(".log") { names.insert(name) }
        }
        return names
    }

    private static func error(_ call: String, _ name: String) -> StorageError {
        let code: StorageError.Code = errno == ENOSPC ? .noSpace : .ioError
        return StorageError(code: code, message: "\(call) \(name): \(String(cString: strerror(errno)))")
    }
}
