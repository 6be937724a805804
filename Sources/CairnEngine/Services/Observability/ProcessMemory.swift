import CMalloc

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

    /// Serves allocations of `bytes` or more from their own mappings, returned to the system
    /// when freed. By default glibc raises this threshold (up to 32 MiB) each time such a block
    /// is freed, after which RocksDB's memtable arena blocks (write buffer / 8) come from the
    /// heaps and, once their memtable is flushed, stay resident between the block cache's
    /// blocks. After the same redis-benchmark run (SET/GET/INCR/MSET at -P 1 and -P 16, twice),
    /// RSS beyond the block cache and memtables went from 283 MiB to 114 MiB.
    @discardableResult
    public static func mapLargeAllocations(from bytes: Int32 = 1 << 20) -> Bool {
        mallopt(M_MMAP_THRESHOLD, bytes) == 1
    }

    /// Gives free memory inside malloc's heaps back to the system (glibc's `malloc_trim`, which
    /// also releases whole free pages between live blocks). RocksDB frees memtables and block
    /// cache entries in an order that leaves such holes: after a redis-benchmark run, one call
    /// took RSS beyond the block cache and memtables from 196 MiB to 58 MiB. Each arena is
    /// locked while it is walked, so call it now and then, off the request path.
    /// Returns true when memory was released.
    @discardableResult
    public static func releaseFreeMemory() -> Bool {
        malloc_trim(0) == 1
    }
}
