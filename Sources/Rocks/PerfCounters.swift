import CRocksDB

/// RocksDB's per-thread performance counters (`perf_context`), which Cairn does not read.
///
/// They are on by default, and each key comparison in the memtable then updates a thread-local
/// counter; in a shared library every such access is a `__tls_get_addr` call (about 4,500
/// instructions of a 36,000-instruction GET, scripts/profile). The level is per thread, so a
/// thread that serves requests turns them off itself.
public enum PerfCounters {
    public static func disableOnThisThread() {
        rocksdb_set_perf_level(Int32(rocksdb_disable))
    }
}
