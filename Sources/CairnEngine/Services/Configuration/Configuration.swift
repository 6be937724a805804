#if canImport(Glibc)
import Glibc
#endif

/// Every setting of the engine, as one documented value, plus the settings of the modules
/// around it (`ConfigurationExtension`: the server's listener and client limit live in
/// CairnServer's `ServerSettings`).
///
/// `config/cairn.conf` and `cairnd`'s flags only fill this in; `CONFIG GET/SET/REWRITE` use the
/// same names through one `ConfigTable`. Each property's comment gives its default and effect.
public struct Configuration: Sendable, Equatable {
    /// Where the database lives. Default `./data`.
    public var dir = "./data"
    /// Where backups go; empty means `<dir>/backups`.
    public var backupDir = ""
    /// Backups kept: after each new backup all but the newest N are purged; 0 keeps all. Default 0.
    public var backupKeep = 0
    /// Backups older than this many seconds are purged after each new backup (the newest always
    /// stays); 0 never. Default 0.
    public var backupMaxAge = 0
    /// Take a backup in the background every this many seconds; 0 never. Default 0.
    public var backupInterval = 0
    /// Password of the default user; empty means no authentication. Default empty.
    public var requirepass = ""
    /// Users from `user` lines (AccessControl.swift), passwords as SHA-256 digests only.
    /// Default none: only the default user, with every permission.
    public var users: [ACLUser] = []
    /// A file of `user` lines (Redis's ACL file format) that holds the users instead of this
    /// file's `user` lines: read at start and by ACL LOAD, written by ACL SAVE. Default empty
    /// (users come from `user` lines; ACL SAVE and ACL LOAD refuse).
    public var aclfile = ""
    /// ACL LOG keeps at most this many entries. Default 128.
    public var acllogMaxLen = 128
    /// Failed AUTHs one client address may make per minute before AUTH is refused for the rest
    /// of that minute; 0 disables the limit. Default 100 (a client library that retries a
    /// wrong password, as redis-py does, should not lock its host out at once).
    public var authMaxFailures = 100
    /// Failed AUTHs from all addresses together per minute before AUTH is refused for everyone
    /// (already authenticated connections go on) for the rest of that minute; 0 disables the
    /// limit. Default 1000: many source addresses cannot multiply `auth-max-failures`. An
    /// attacker can use it up to keep new logins out for a minute at a time; that is the price
    /// of bounding guesses.
    public var authMaxFailuresTotal = 1000
    /// Largest key a write command may store, bytes; 0 means no limit beyond
    /// `proto-max-bulk-len`. Default 64 KiB.
    public var maxKeySize = 64 * 1024
    /// Largest value (any argument of a write command, and a value APPEND or SETRANGE grows),
    /// bytes; 0 means no limit beyond `proto-max-bulk-len`. Default 512 MiB.
    public var maxValueSize = 512 * 1024 * 1024
    /// Most arguments of one request (multibulk count). Default 1,048,576.
    public var maxArgs = 1024 * 1024
    /// Close a client idle this many seconds; 0 never. Default 0.
    public var timeout = 0
    /// Seconds between TCP keepalive probes; 0 disables. Default 300.
    public var tcpKeepalive = 300
    /// Largest single bulk string a client may send. Default 512 MiB.
    public var protoMaxBulkLen = 512 * 1024 * 1024
    /// Most bytes of unparsed requests kept for one client. Default 1 GiB.
    public var clientQueryBufferLimit = 1024 * 1024 * 1024
    /// Most bytes of pending replies for one client before it is disconnected; 0 (the
    /// default, as Redis's `normal 0 0 0`): no limit. A client that does not read is not served
    /// further once about 1 MiB of replies wait, whatever this says, so it costs about one
    /// reply; a limit only closes it sooner. A limit below `max-value-size` means values
    /// larger than it can be stored but not read back.
    public var clientOutputBufferLimit = 0
    /// `client-output-buffer-limit pubsub <hard>`: unsent bytes a subscribed client may have
    /// before it is closed, so publishers never wait for it (32mb, as Redis).
    public var clientOutputBufferLimitPubsub = 32 << 20
    /// WAL sync policy, as Redis's appendfsync: `always` (sync before replying; concurrent writers
    /// share one sync), `everysec` (default: sync once a second, a process crash loses nothing, an
    /// OS crash at most about a second), `no` (the OS decides).
    public var appendfsync = FsyncPolicy.everysec
    /// Log level: one of `logLevels`, Redis's names (debug, verbose, notice, warning, nothing)
    /// then swift-log's (trace, info, error). Default notice.
    public var loglevel = "notice"
    /// Shared LRU block cache for all column families, bytes. Default 256 MiB.
    public var blockCacheSize = 256 * 1024 * 1024
    /// Cache of whole key-value pairs read from table files, bytes; 0 (default) disables. Pays off
    /// when reads repeat keys that left the memtables (GET -P16 +19% once warm, over 1M keys
    /// with 256mb); costs an insert on every miss.
    public var rowCacheSize = 0
    /// Cairn's own cache of hot values in front of RocksDB, bytes (`ValueCache`): a GET of a
    /// key read recently skips RocksDB's memtable search and block cache. 0 disables. Changeable
    /// with CONFIG SET (a smaller size evicts at once). Default 0.
    public var valueCacheSize = 0
    /// Table files RocksDB keeps open (its `max_open_files`, a cache: more are reopened as
    /// needed), at least 20. Counted with the server's `maxclients` against the open files limit,
    /// and lowered with it at start when the limit cannot hold both. Default 8192.
    public var maxOpenFiles = 8192
    /// Memtable size per column family, bytes. Default 64 MiB.
    public var writeBufferSize = 64 * 1024 * 1024
    /// Free space to keep on the data disk, bytes: below it writes are refused (disk-full mode,
    /// `DiskGuard`) until space returns. Default 0: twice `writeBufferSize` plus 8 MiB.
    public var minFreeDisk = 0
    /// Table compression: no, snappy, zlib, lz4, zstd. Default lz4.
    public var compression = "lz4"
    /// Bloom filter bits per key; 0 disables. Default 10.
    public var bloomBitsPerKey = 10.0
    /// Share of each memtable used for a bloom filter over whole keys; 0 disables. Default 0.1:
    /// reads of keys the memtable lacks skip its search (in-process GET +70% at 1M keys,
    /// `cairn-bench-rocks --memtable-bloom-ratio`), for 10% more memtable memory.
    public var memtableBloomRatio = 0.1
    /// Hash index buckets per key in each table data block; 0 disables. Default 0.75: point
    /// reads find their key in a block by hash rather than by binary search.
    public var dataBlockHashRatio = 0.75
    /// RocksDB background flush and compaction jobs. Default: the cores this process may use
    /// (`AvailableCores`), at least 2.
    public var maxBackgroundJobs = Configuration.defaultBackgroundJobs
    /// Commands slower than this many microseconds go to the slow log; negative disables. Default 10000.
    public var slowlogLogSlowerThan = 10000
    /// Entries kept in the slow log. Default 128.
    public var slowlogMaxLen = 128
    /// Requests at least this many milliseconds long are latency events (`LATENCY LATEST`,
    /// events `command` and `fast-command`); 0 turns the latency monitor off. Default 0.
    public var latencyMonitorThreshold = 0
    /// Accepted for Redis tools and reported by INFO and CONFIG GET, bytes; 0 (the default)
    /// means no limit. Cairn keeps its data on disk and never evicts keys, so this limits
    /// nothing: its memory is the block cache, the row cache and the memtables
    /// (`block-cache-size`, `row-cache-size`, `write-buffer-size`).
    public var maxmemory = 0
    /// Always `noeviction`: Cairn never evicts keys (data larger than memory lives on disk).
    public var maxmemoryPolicy = "noeviction"
    /// Redis's encoding thresholds (`hash-max-listpack-entries`...), accepted and reported so
    /// tools and test suites that tune them run. Cairn stores every collection one entry per
    /// member whatever its size, so they change nothing (docs/commands.md).
    public var encodingThresholds = ConfigOption.encodingDefaults
    /// The largest sparse HyperLogLog, header included: a PFADD or PFMERGE that would grow one
    /// past it turns it dense (12,304 bytes), as Redis's `hll-sparse-max-bytes`. Default 3000.
    public var hllSparseMaxBytes = HyperLogLog.defaultSparseMaxBytes
    /// Snapshots one connection may hold. Default 16.
    public var maxSnapshotsPerClient = 16
    /// Snapshots the whole server may hold. Default 1024.
    public var maxSnapshots = 1024
    /// Snapshots one ACL user may hold across all its connections, so one user cannot take
    /// the whole of `maxSnapshots` from the others. Default 256.
    public var maxSnapshotsPerUser = 256
    /// A snapshot older than this many seconds is released (so a forgotten one cannot pin old
    /// data forever); 0 never. Default 3600.
    public var snapshotMaxAge = 3600
    /// Server-side iterators one connection may hold. Default 16.
    public var maxIteratorsPerClient = 16
    /// An iterator unused this many seconds is closed; 0 never. Default 300.
    public var iteratorIdleTimeout = 300
    /// How hard the background expiry sweep works, 1...10 (Redis's name): each 100 ms it may
    /// spend 25 ms of one core at 1, up to 43 ms at 10. Default 1.
    public var activeExpireEffort = 1
    /// Milliseconds a script may run before other clients' commands get `-BUSY` (and SCRIPT
    /// KILL may stop it); 0 or less: never BUSY. Redis's `busy-reply-threshold`, alias
    /// `lua-time-limit`. Default 5000.
    public var busyReplyThreshold = 5000

    // Replication (Replication/). Redis's names and defaults where Redis has the option.

    /// The primary this server replicates, as `host port`; empty: this server is a primary.
    /// Changed by REPLICAOF (and written back by CONFIG REWRITE).
    public var replicaof = ""
    /// Password (and user) a replica authenticates with at its primary.
    public var masterauth = ""
    public var masteruser = ""
    /// A replica refuses writes from clients (`-READONLY`). Default yes.
    public var replicaReadOnly = true
    /// Sentinel's preference when promoting a replica: lower first, 0 never. Default 100.
    public var replicaPriority = 100
    /// The address and port a replica tells its primary to list (behind NAT or a proxy);
    /// empty/0: the connection's own.
    public var replicaAnnounceIP = ""
    public var replicaAnnouncePort = 0
    /// How long, in seconds, the WAL is kept after its data was flushed, so a replica that was
    /// away that long resumes with a partial sync. Redis's `repl-backlog-ttl`; default 3600.
    public var replBacklogTTL = 3600
    /// Most bytes of kept WAL (oldest dropped first), whatever the TTL. Redis's
    /// `repl-backlog-size` (there a memory buffer; here files beside the data). Default 1gb.
    public var replBacklogSize = 1 << 30
    /// Seconds without a byte from the other side before a replication link is dropped (and
    /// retried). Default 60.
    public var replTimeout = 60

    /// `notify-keyspace-events`: the classes of keyspace events published (Redis's letters,
    /// `KeyspaceEvents`). Default none: no event, and a write pays one atomic load for it.
    var notifyKeyspaceEvents: KeyspaceEvents.Classes = []

    /// The settings of the modules around the engine, by type: `self[Settings.self]`.
    var extensions = ConfigurationExtensions()

    public init() {}

    /// The values `loglevel` takes.
    public static let logLevels = ["debug", "verbose", "notice", "warning", "nothing", "trace", "info", "error"]

    /// The cores this process may use (`AvailableCores`), at least 2: a flush and a compaction.
    public static var defaultBackgroundJobs: Int {
        max(2, AvailableCores.count)
    }

    /// The directory backups go to.
    public var resolvedBackupDir: String { backupDir.isEmpty ? dir + "/backups" : backupDir }
}

/// How often the WAL is synced; names as Redis's `appendfsync`.
public enum FsyncPolicy: String, Sendable, CaseIterable {
    case always, everysec, no
}

