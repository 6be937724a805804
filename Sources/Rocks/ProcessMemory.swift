import CRocksDB

/// Process-wide malloc settings for a process that runs RocksDB.
public enum ProcessMemory {
    /// Caps glibc malloc's arenas. glibc gives each thread that allocates its own arena (up to 8
    /// per core), and with RocksDB's background threads plus a server's own, memory fragments
    /// well past what is in use; a couple of arenas keep RSS near the block cache plus
    /// memtables. Call it first thing in `main`, before threads start. Returns false when glibc
    /// refused. https://github.com/facebook/rocksdb/wiki/Memory-usage-in-RocksDB
    @discardableResult
    public static func limitMallocArenas(to count: Int32) -> Bool {
        mallopt(M_ARENA_MAX, count) == 1
    }
}
