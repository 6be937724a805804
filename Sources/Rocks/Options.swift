import CRocksDB

/// Table compression.
public enum Compression: String, Sendable, CaseIterable {
    case none, snappy, zlib, lz4, zstd, bz2

    var raw: Int32 {
        switch self {
        case .none: Int32(rocksdb_no_compression)
        case .snappy: Int32(rocksdb_snappy_compression)
        case .zlib: Int32(rocksdb_zlib_compression)
        case .lz4: Int32(rocksdb_lz4_compression)
        case .zstd: Int32(rocksdb_zstd_compression)
        case .bz2: Int32(rocksdb_bz2_compression)
        }
    }
}

/// Severity levels of RocksDB's `LOG` file (`InfoLogLevel` in rocksdb/env.h).
public enum InfoLogLevel: Int32, Sendable {
    case debug = 0, info, warn, error, fatal, header
}

/// Database-wide options. Defaults follow RocksDB's tuning guide.
/// https://github.com/facebook/rocksdb/wiki/Setup-Options-and-Basic-Tuning
public struct DatabaseOptions: Sendable {
    public var createIfMissing = true
    public var errorIfExists = false
    /// Open without writing (many processes may open read-only at once).
    public var readOnly = false
    /// One LRU block cache shared by all column families; 0 = no cache. Default 256 MiB.
    public var blockCacheBytes = 256 << 20
    /// Bloom filter bits per key; 0 = none. Default 10 (about 1% false positives).
    public var bloomBitsPerKey: Double = 10
    /// LRU cache of whole key-value pairs found in table files, checked before their blocks;
    /// 0 = none (default). A hit skips the filter, index and data block lookups of a point read.
    /// https://github.com/facebook/rocksdb/wiki/Row-Cache
    public var rowCacheBytes = 0
    public var compression: Compression = .lz4
    /// Memtable size per family. Default 64 MiB.
    public var writeBufferBytes = 64 << 20
    public var maxWriteBufferNumber = 4
    /// Flush and compaction threads. Default: the number of cores (at least 2).
    public var backgroundJobs = Swift.max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    public var bytesPerSync: UInt64 = 1 << 20
    public var levelCompactionDynamicLevelBytes = true
    /// Collect statistics (`Database.statisticsText()`); costs a little CPU.
    public var enableStatistics = false
    public var maxOpenFiles: Int32 = -1
    public var enablePipelinedWrite = false
    /// The least severe message RocksDB writes to its `LOG` file in the database directory.
    /// Default `.info` (RocksDB's own default).
    public var infoLogLevel: InfoLogLevel = .info
    /// `LOG` is rotated at this size (0: never), and `keepLogFiles` of the old ones are kept,
    /// so RocksDB's log never takes more than their product on the data disk.
    public var maxLogFileBytes = 8 << 20
    public var keepLogFiles = 4
    public var blockSize = 16 << 10
    /// Share of each memtable given to a bloom filter over whole keys; 0 disables. A point
    /// lookup of a key the memtable lacks (a miss, or a key already flushed to a table file)
    /// then skips the skip-list search, which dominates reads otherwise.
    /// https://github.com/facebook/rocksdb/wiki/RocksDB-Bloom-Filter#memtable-bloom-filter
    public var memtableBloomRatio = 0.0
    /// Hash index in each data block, buckets per key; 0 keeps binary search alone. A point
    /// lookup then finds its key in a block by hash instead of a binary search over restart
    /// points and a scan, for a few percent larger blocks.
    /// https://github.com/facebook/rocksdb/wiki/Data-Block-Hash-Index
    public var dataBlockHashRatio = 0.0
    /// Index and bloom filter of each table file in 4 KiB partitions under a small top level
    /// (kept pinned in the block cache), instead of one block each. A 64 MB table file's
    /// filter is megabytes; with a small block cache split in shards of about 1 MiB it no
    /// longer fits one and every point read fetched and parsed it again (650 µs a GET after
    /// COMPACT with a 64 MiB cache). https://github.com/facebook/rocksdb/wiki/Partitioned-Index-Filters
    public var partitionedIndexAndFilters = true
    /// Keep WAL files this long after their data was flushed (RocksDB moves them to
    /// `archive/`), so replicas can read the writes they missed (`Database.updates(since:)`);
    /// 0 deletes them once flushed. `WAL_ttl_seconds`.
    public var walTTLSeconds: UInt64 = 0
    /// Most megabytes of archived WAL kept (oldest deleted first); 0 = no limit beyond the TTL.
    /// `WAL_size_limit_MB`.
    public var walSizeLimitMB: UInt64 = 0

    public init() {}
}

/// Options of one column family; nil fields fall back to the database's.
public struct ColumnFamilyOptions: Sendable {
    public var mergeOperator: (any MergeOperator)? = nil
    public var compactionFilter: (any CompactionFilter)? = nil
    /// A filter per compaction (for filters with state); used instead of `compactionFilter`.
    public var compactionFilterFactory: (any CompactionFilterFactory)? = nil
    public var compression: Compression? = nil
    public var bloomBitsPerKey: Double? = nil
    public var blockSize: Int? = nil
    public var writeBufferBytes: Int? = nil
    /// Most merge operands of one key kept in a memtable (RocksDB's `max_successive_merges`);
    /// past it a merge is folded into a value when written, so reads never fold more than
    /// this many. 0: no limit.
    public var maxSuccessiveMerges = 0

    public init(
        mergeOperator: (any MergeOperator)? = nil, compactionFilter: (any CompactionFilter)? = nil,
        compression: Compression? = nil, bloomBitsPerKey: Double? = nil, blockSize: Int? = nil,
        writeBufferBytes: Int? = nil
    ) {
        self.mergeOperator = mergeOperator
        self.compactionFilter = compactionFilter
        self.compression = compression
        self.bloomBitsPerKey = bloomBitsPerKey
        self.blockSize = blockSize
        self.writeBufferBytes = writeBufferBytes
    }
}

/// Options of reads and cursors.
public struct ReadOptions: Sendable {
    /// Read as of this snapshot.
    public var snapshot: Snapshot? = nil
    public var fillCache = true
    public var verifyChecksums = false
    /// Cursor bounds: lower inclusive, upper exclusive.
    public var lowerBound: [UInt8]? = nil
    public var upperBound: [UInt8]? = nil
    public var prefixSameAsStart = false
    public var totalOrderSeek = false

    public static let `default` = ReadOptions()
    public init() {}

    var isDefault: Bool {
        snapshot == nil && fillCache && !verifyChecksums && lowerBound == nil && upperBound == nil
            && !prefixSameAsStart && !totalOrderSeek
    }
}

/// Options of writes. The WAL is never disabled.
public struct WriteOptions: Sendable, Hashable {
    /// Sync the WAL before the write returns.
    public var sync = false
    /// Fail with `tryAgain` instead of waiting when writes are being slowed down.
    public var noSlowdown = false

    public static let `default` = WriteOptions()
    public init(sync: Bool = false, noSlowdown: Bool = false) {
        self.sync = sync
        self.noSlowdown = noSlowdown
    }
}

#if canImport(Glibc)
import Glibc
#endif
