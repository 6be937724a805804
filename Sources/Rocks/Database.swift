import CRocksDB
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What can be read: the database itself, or a snapshot of it.
public protocol KeyValueReader {
    /// The value of `key` (a copy), or nil when missing.
    func get(_ key: [UInt8], in family: ColumnFamily?) throws -> [UInt8]?
    /// Calls `body` with the value in RocksDB's own (pinned) memory, or nil when missing.
    /// The buffer is valid only inside `body`.
    func withValue<R>(forKey key: [UInt8], in family: ColumnFamily?, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R
    func multiGet(_ keys: [[UInt8]], in family: ColumnFamily?) throws -> [[UInt8]?]
    /// A cursor over `family`; close it (or let it go) before closing the database.
    func makeCursor(in family: ColumnFamily?, options: ReadOptions) throws -> Cursor
}

/// One open RocksDB database with all its column families.
///
/// `@unchecked Sendable`: RocksDB documents Get/Put/Write/NewIterator as thread-safe; `raw`
/// never changes and is closed exactly once; mutable bookkeeping is behind `Mutex`/`Atomic`.
/// `close()` must not run concurrently with other calls (the caller pauses its users first).
public final class Database: KeyValueReader, @unchecked Sendable {
    public let path: String
    let raw: OpaquePointer
    private let closedFlag = Atomic<Bool>(false)
    let snapshotCount = Atomic<Int>(0)
    let cursorCount = Atomic<Int>(0)
    private let familiesByName: Mutex<[String: ColumnFamily]>
    /// Dropped families whose C handles still need destroying at close.
    private let droppedFamilies = Mutex<[ColumnFamily]>([])
    private let familyOptions: @Sendable (String) -> ColumnFamilyOptions
    private let options: DatabaseOptions
    /// C objects that must outlive the database: options, compaction filters, the cache.
    private var owned: OwnedObjects
    private let ownedLock = Lock()
    private let defaultHandle: ColumnFamily
    private let cache: OpaquePointer?
    private let readDefault: OpaquePointer
    private let writeOptionsCache: [WriteOptions: OpaquePointer]

    struct OwnedObjects {
        var options: [OpaquePointer] = []
        var filters: [OpaquePointer] = []
        var rowCache: OpaquePointer? = nil
    }

    // MARK: opening

    /// Opens the database at `path` with every column family it has.
    ///
    /// - Parameter familyOptions: options for each family by name, including "default" and
    ///   families created later without explicit options.
    /// - Throws: `StorageError` (`.busy` when another process holds the directory).
    public static func open(
        at path: String, options: DatabaseOptions = .init(),
        familyOptions: @escaping @Sendable (String) -> ColumnFamilyOptions = { _ in .init() }
    ) throws -> Database {
        try Database(path: path, options: options, familyOptions: familyOptions)
    }

    private init(path: String, options: DatabaseOptions, familyOptions: @escaping @Sendable (String) -> ColumnFamilyOptions) throws {
        self.path = path
        self.options = options
        self.familyOptions = familyOptions
        let cache = options.blockCacheBytes > 0 ? rocksdb_cache_create_lru(options.blockCacheBytes) : nil
        self.cache = cache
        var owned = OwnedObjects()
        owned.rowCache = options.rowCacheBytes > 0 ? rocksdb_cache_create_lru(options.rowCacheBytes) : nil
        let dbOptions = Database.makeOptions(options, cache: cache, family: ColumnFamilyOptions(), owned: &owned)

        // Existing families; a new database has only "default".
        var names = ["default"]
        var count = 0
        var err: UnsafeMutablePointer<CChar>? = nil
        if let list = rocksdb_list_column_families(dbOptions, path, &count, &err) {
            names = (0..<count).map { String(cString: list[$0]!) }
            rocksdb_list_column_families_destroy(list, count)
        }
        if let err { rocksdb_free(err) }  // a missing database: open creates it
        if names.isEmpty { names = ["default"] }

        let familyOpts: [OpaquePointer?] = names.map { name in
            Database.makeOptions(options, cache: cache, family: familyOptions(name), owned: &owned)
        }
        var handles = [OpaquePointer?](repeating: nil, count: names.count)
        let cNames = names.map { strdup($0) }
        defer { cNames.forEach { free($0) } }
        /// On a failed open nothing else owns these yet.
        func releaseOwned() {
            owned.options.forEach { rocksdb_options_destroy($0) }
            owned.filters.forEach { rocksdb_compactionfilter_destroy($0) }
            if let cache { rocksdb_cache_destroy(cache) }
            if let rowCache = owned.rowCache { rocksdb_cache_destroy(rowCache) }
        }
        let db: OpaquePointer?
        do {
            db = try Database.openRaw(path, options, names: cNames, familyOptions: familyOpts, dbOptions: dbOptions, handles: &handles)
        } catch {
            releaseOwned()
            throw error
        }
        guard let db else {
            releaseOwned()
            throw StorageError(code: .unknown, message: "rocksdb_open returned no database for \(path)")
        }
        raw = db
        var families: [String: ColumnFamily] = [:]
        var defaultFamily: ColumnFamily? = nil
        for (name, handle) in zip(names, handles) {
            let family = ColumnFamily(name: name, raw: handle!)
            families[name] = family
            if name == "default" { defaultFamily = family }
        }
        defaultHandle = defaultFamily!
        familiesByName = Mutex(families)
        self.owned = owned
        readDefault = rocksdb_readoptions_create()
        var writes: [WriteOptions: OpaquePointer] = [:]
        for sync in [false, true] {
            for noSlowdown in [false, true] {
                let w = rocksdb_writeoptions_create()!
                rocksdb_writeoptions_set_sync(w, sync ? 1 : 0)
                rocksdb_writeoptions_set_no_slowdown(w, noSlowdown ? 1 : 0)
                writes[WriteOptions(sync: sync, noSlowdown: noSlowdown)] = w
            }
        }
        writeOptionsCache = writes
    }

    private static func openRaw(
        _ path: String, _ options: DatabaseOptions, names cNames: [UnsafeMutablePointer<CChar>?],
        familyOptions familyOpts: [OpaquePointer?], dbOptions: OpaquePointer, handles: inout [OpaquePointer?]
    ) throws -> OpaquePointer? {
        try cNames.map { UnsafePointer($0) }.withUnsafeBufferPointer { namePtrs in
            try familyOpts.withUnsafeBufferPointer { optPtrs in
                try rocksCall { err in
                    if options.readOnly {
                        rocksdb_open_for_read_only_column_families(
                            dbOptions, path, Int32(cNames.count), namePtrs.baseAddress, optPtrs.baseAddress, &handles, 0, err)
                    } else {
                        rocksdb_open_column_families(
                            dbOptions, path, Int32(cNames.count), namePtrs.baseAddress, optPtrs.baseAddress, &handles, err)
                    }
                }
            }
        }
    }

    /// Builds a C options object for the database or one family.
    private static func makeOptions(
        _ o: DatabaseOptions, cache: OpaquePointer?, family f: ColumnFamilyOptions, owned: inout OwnedObjects
    ) -> OpaquePointer {
        let opts = rocksdb_options_create()!
        rocksdb_options_set_create_if_missing(opts, o.createIfMissing ? 1 : 0)
        rocksdb_options_set_create_missing_column_families(opts, 1)
        rocksdb_options_set_error_if_exists(opts, o.errorIfExists ? 1 : 0)
        rocksdb_options_increase_parallelism(opts, Int32(o.backgroundJobs))
        rocksdb_options_set_max_background_jobs(opts, Int32(o.backgroundJobs))
        rocksdb_options_set_info_log_level(opts, o.infoLogLevel.rawValue)
        rocksdb_options_set_max_log_file_size(opts, o.maxLogFileBytes)
        rocksdb_options_set_keep_log_file_num(opts, o.keepLogFiles)
        rocksdb_options_set_bytes_per_sync(opts, o.bytesPerSync)
        rocksdb_options_set_level_compaction_dynamic_level_bytes(opts, o.levelCompactionDynamicLevelBytes ? 1 : 0)
        rocksdb_options_set_write_buffer_size(opts, f.writeBufferBytes ?? o.writeBufferBytes)
        rocksdb_options_set_max_write_buffer_number(opts, Int32(o.maxWriteBufferNumber))
        rocksdb_options_set_compression(opts, (f.compression ?? o.compression).raw)
        rocksdb_options_set_max_open_files(opts, o.maxOpenFiles)
        rocksdb_options_set_enable_pipelined_write(opts, o.enablePipelinedWrite ? 1 : 0)
        rocksdb_options_set_WAL_ttl_seconds(opts, o.walTTLSeconds)
        rocksdb_options_set_WAL_size_limit_MB(opts, o.walSizeLimitMB)
        if o.memtableBloomRatio > 0 {
            rocksdb_options_set_memtable_prefix_bloom_size_ratio(opts, o.memtableBloomRatio)
            rocksdb_options_set_memtable_whole_key_filtering(opts, 1)
        }
        if o.enableStatistics { rocksdb_options_enable_statistics(opts) }
        if let rowCache = owned.rowCache { rocksdb_options_set_row_cache(opts, rowCache) }
        let table = rocksdb_block_based_options_create()!
        if let cache { rocksdb_block_based_options_set_block_cache(table, cache) } else { rocksdb_block_based_options_set_no_block_cache(table, 1) }
        rocksdb_block_based_options_set_block_size(table, f.blockSize ?? o.blockSize)
        if o.dataBlockHashRatio > 0 {
            rocksdb_block_based_options_set_data_block_index_type(
                table, Int32(rocksdb_block_based_table_data_block_index_type_binary_search_and_hash))
            rocksdb_block_based_options_set_data_block_hash_ratio(table, o.dataBlockHashRatio)
        }
        let bits = f.bloomBitsPerKey ?? o.bloomBitsPerKey
        if bits > 0 { rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom_full(bits)) }
        rocksdb_block_based_options_set_cache_index_and_filter_blocks(table, 1)
        if o.partitionedIndexAndFilters {
            rocksdb_block_based_options_set_index_type(table, Int32(rocksdb_block_based_table_index_type_two_level_index_search))
            rocksdb_block_based_options_set_partition_filters(table, 1)
            rocksdb_block_based_options_set_metadata_block_size(table, 4096)
            rocksdb_block_based_options_set_pin_top_level_index_and_filter(table, 1)
        }
        rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(table, 1)
        rocksdb_options_set_block_based_table_factory(opts, table)
        rocksdb_block_based_options_destroy(table)
        if let m = f.mergeOperator { rocksdb_options_set_merge_operator(opts, MergeOperatorBox.make(m)) }
        if f.maxSuccessiveMerges > 0 { rocksdb_options_set_max_successive_merges(opts, f.maxSuccessiveMerges) }
        if let factory = f.compactionFilterFactory {
            // The options take ownership of the C factory.
            rocksdb_options_set_compaction_filter_factory(opts, CompactionFilterFactoryBox.make(factory))
        } else if let c = f.compactionFilter {
            let filter = CompactionFilterBox.make(c)
            rocksdb_options_set_compaction_filter(opts, filter)
            owned.filters.append(filter)
        }
        owned.options.append(opts)
        return opts
    }

    deinit {
        if !closedFlag.load(ordering: .acquiring) { forceClose() }
        rocksdb_readoptions_destroy(readDefault)
        for w in writeOptionsCache.values { rocksdb_writeoptions_destroy(w) }
        if let cache { rocksdb_cache_destroy(cache) }
    }

    // MARK: state

    public var isClosed: Bool { closedFlag.load(ordering: .acquiring) }
    public var openSnapshotCount: Int { snapshotCount.load(ordering: .relaxed) }
    public var openCursorCount: Int { cursorCount.load(ordering: .relaxed) }

    @inline(__always)
    func ensureOpen() throws {
        if closedFlag.load(ordering: .relaxed) { throw StorageError.closedDatabase }
    }

    /// The C handle of a family (the default family for nil), checked.
    @inline(__always)
    func handle(_ family: ColumnFamily?) throws -> OpaquePointer {
        try ensureOpen()
        guard let family else { return defaultHandle.raw }
        return try family.checkedRaw()
    }

    func writeOptions(_ o: WriteOptions) -> OpaquePointer { writeOptionsCache[o]! }

    /// Runs `body` with C read options for `o` (the shared default when possible).
    func withReadOptions<R>(_ o: ReadOptions, _ body: (OpaquePointer) throws -> R) rethrows -> R {
        if o.isDefault { return try body(readDefault) }
        let ro = ReadOptionsHandle(o)
        return try withExtendedLifetime(ro) { try body(ro.raw) }
    }

    // MARK: families

    public var defaultFamily: ColumnFamily { defaultHandle }

    public func family(named name: String) -> ColumnFamily? { familiesByName.withLock { $0[name] } }

    public var families: [ColumnFamily] { familiesByName.withLock { Array($0.values) }.sorted { $0.name < $1.name } }

    /// Creates a column family; `options` nil means `familyOptions(name)` from open.
    public func createFamily(named name: String, options: ColumnFamilyOptions? = nil) throws -> ColumnFamily {
        try ensureOpen()
        if family(named: name) != nil {
            throw StorageError(code: .invalidArgument, message: "column family '\(name)' already exists")
        }
        let opts = ownedLock.withLock {
            Database.makeOptions(self.options, cache: cache, family: options ?? familyOptions(name), owned: &owned)
        }
        let handle = try rocksCall { err in rocksdb_create_column_family(raw, opts, name, err) }
        guard let handle else { throw StorageError(code: .unknown, message: "no handle for new family \(name)") }
        let family = ColumnFamily(name: name, raw: handle)
        familiesByName.withLock { $0[name] = family }
        return family
    }

    /// Drops a family: its data is gone at once (files are deleted as they become unused).
    /// The handle stays valid for other holders, whose calls then throw `.familyDropped`.
    public func dropFamily(_ family: ColumnFamily) throws {
        try ensureOpen()
        guard family.name != "default" else {
            throw StorageError(code: .invalidArgument, message: "the default column family cannot be dropped")
        }
        let handle = try family.checkedRaw()
        try rocksCall { err in rocksdb_drop_column_family(raw, handle, err) }
        family.markDropped()
        familiesByName.withLock { _ = $0.removeValue(forKey: family.name) }
        droppedFamilies.withLock { $0.append(family) }
    }

    // MARK: reads

    public func get(_ key: [UInt8], in family: ColumnFamily? = nil) throws -> [UInt8]? {
        try get(key, in: family, options: .default)
    }

    public func get(_ key: [UInt8], in family: ColumnFamily? = nil, options: ReadOptions) throws -> [UInt8]? {
        try withValue(forKey: key, in: family, options: options) { $0.map { Array($0) } }
    }

    public func withValue<R>(forKey key: [UInt8], in family: ColumnFamily? = nil, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try withValue(forKey: key, in: family, options: .default, body)
    }

    public func withValue<R>(
        forKey key: [UInt8], in family: ColumnFamily? = nil, options: ReadOptions,
        _ body: (UnsafeRawBufferPointer?) throws -> R
    ) throws -> R {
        let cf = try handle(family)
        let pinned = try withReadOptions(options) { ro in
            try rocksCall { err in key.withChars { rocksdb_get_pinned_cf(raw, ro, cf, $0, $1, err) } }
        }
        guard let pinned else { return try body(nil) }
        defer { rocksdb_pinnableslice_destroy(pinned) }
        var length = 0
        let p = rocksdb_pinnableslice_value(pinned, &length)
        return try body(UnsafeRawBufferPointer(start: p, count: length))
    }

    public func multiGet(_ keys: [[UInt8]], in family: ColumnFamily? = nil) throws -> [[UInt8]?] {
        try multiGet(keys, in: family, options: .default)
    }

    /// The values of `keys` (copies), nil where missing, all read at one sequence number.
    public func multiGet(_ keys: [[UInt8]], in family: ColumnFamily? = nil, options: ReadOptions) throws -> [[UInt8]?] {
        try withValues(forKeys: keys, in: family, options: options) { values in values.map { $0.map { Array($0) } } }
    }

    /// Looks `keys` up in one family with RocksDB's batched MultiGet (one pass over memtables
    /// and table files, one sequence number for all) and calls `body` with each value in
    /// RocksDB's pinned memory, nil when missing. The buffers are valid only inside `body`.
    /// https://github.com/facebook/rocksdb/wiki/MultiGet-Performance
    public func withValues<R>(
        forKeys keys: [[UInt8]], in family: ColumnFamily? = nil, options: ReadOptions = .default,
        _ body: ([UnsafeRawBufferPointer?]) throws -> R
    ) throws -> R {
        let cf = try handle(family)
        let n = keys.count
        guard n > 0 else { return try body([]) }
        // One buffer holds every key, so a single array of pointers can point into it.
        var joined: [UInt8] = []
        joined.reserveCapacity(keys.reduce(0) { $0 + $1.count })
        for k in keys { joined += k }
        let sizes = keys.map(\.count)
        var slices = [OpaquePointer?](repeating: nil, count: n)
        var errs = [UnsafeMutablePointer<CChar>?](repeating: nil, count: n)
        defer { for s in slices { if let s { rocksdb_pinnableslice_destroy(s) } } }
        joined.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                var pointers: [UnsafePointer<CChar>?] = []
                pointers.reserveCapacity(n)
                var offset = 0
                for size in sizes {
                    pointers.append(chars.baseAddress.map { UnsafePointer($0 + offset) })
                    offset += size
                }
                withReadOptions(options) { ro in
                    rocksdb_batched_multi_get_cf(raw, ro, cf, n, pointers, sizes, &slices, &errs, false)
                }
            }
        }
        var failure: StorageError? = nil
        for case let e? in errs {
            if failure == nil { failure = StorageError(status: String(cString: e)) }
            rocksdb_free(e)
        }
        if let failure { throw failure }
        let values = slices.map { slice -> UnsafeRawBufferPointer? in
            guard let slice else { return nil }
            var length = 0
            let p = rocksdb_pinnableslice_value(slice, &length)
            return UnsafeRawBufferPointer(start: p, count: length)
        }
        return try body(values)
    }

    public func makeCursor(in family: ColumnFamily? = nil, options: ReadOptions = .default) throws -> Cursor {
        let cf = try handle(family)
        return Cursor(database: self, family: family, cf: cf, options: options)
    }

    /// Runs `body` with a cursor that is closed when it returns.
    /// Every entry whose key starts with `prefix`, in order (a few small records, such as
    /// those Cairn keeps in its metadata family).
    public func entries(withPrefix prefix: [UInt8], in family: ColumnFamily? = nil) throws -> [(key: [UInt8], value: [UInt8])] {
        try withCursor(in: family) { cursor in
            var found: [(key: [UInt8], value: [UInt8])] = []
            cursor.seek(prefix)
            while cursor.isValid, cursor.key.starts(with: prefix) {
                found.append((cursor.key, cursor.value))
                cursor.next()
            }
            try cursor.check()
            return found
        }
    }

    public func withCursor<R>(in family: ColumnFamily? = nil, options: ReadOptions = .default, _ body: (Cursor) throws -> R) throws -> R {
        let cursor = try makeCursor(in: family, options: options)
        defer { cursor.close() }
        return try body(cursor)
    }

    /// A consistent, read-only view of the database as of now. Release it when done.
    public func snapshot() throws -> Snapshot {
        try ensureOpen()
        return Snapshot(database: self)
    }

    // MARK: writes

    public func put(_ key: [UInt8], _ value: [UInt8], in family: ColumnFamily? = nil, options: WriteOptions = .default) throws {
        let cf = try handle(family)
        let w = writeOptions(options)
        try rocksCall { err in
            key.withChars { k, kl in value.withChars { v, vl in rocksdb_put_cf(raw, w, cf, k, kl, v, vl, err) } }
        }
    }

    public func delete(_ key: [UInt8], in family: ColumnFamily? = nil, options: WriteOptions = .default) throws {
        let cf = try handle(family)
        let w = writeOptions(options)
        try rocksCall { err in key.withChars { rocksdb_delete_cf(raw, w, cf, $0, $1, err) } }
    }

    public func merge(_ key: [UInt8], _ operand: [UInt8], in family: ColumnFamily? = nil, options: WriteOptions = .default) throws {
        let cf = try handle(family)
        let w = writeOptions(options)
        try rocksCall { err in
            key.withChars { k, kl in operand.withChars { v, vl in rocksdb_merge_cf(raw, w, cf, k, kl, v, vl, err) } }
        }
    }

    /// Deletes every key in `[begin, end)` with one range tombstone.
    public func deleteRange(from begin: [UInt8], to end: [UInt8], in family: ColumnFamily? = nil, options: WriteOptions = .default) throws {
        let cf = try handle(family)
        let w = writeOptions(options)
        try rocksCall { err in
            begin.withChars { b, bl in end.withChars { e, el in rocksdb_delete_range_cf(raw, w, cf, b, bl, e, el, err) } }
        }
    }

    /// Applies every operation of `batch` atomically, or none.
    public func write(_ batch: borrowing WriteBatch, options: WriteOptions = .default) throws {
        try ensureOpen()
        for family in batch.families { _ = try family.checkedRaw() }
        let w = writeOptions(options)
        try rocksCall { err in rocksdb_write(raw, w, batch.raw, err) }
    }

    // MARK: maintenance

    /// Flushes the family's memtable to a table file and waits for it.
    public func flush(_ family: ColumnFamily? = nil) throws {
        let cf = try handle(family)
        let fo = rocksdb_flushoptions_create()
        defer { rocksdb_flushoptions_destroy(fo) }
        rocksdb_flushoptions_set_wait(fo, 1)
        try rocksCall { err in rocksdb_flush_cf(raw, fo, cf, err) }
    }

    /// Writes the WAL buffer to the file, and fsyncs it when `sync`: every write that returned
    /// before the call is durable after it. RocksDB syncs the WAL files beside its write queue
    /// (`DB::SyncWAL`), so writers go on while the disk syncs.
    public func flushWAL(sync: Bool) throws {
        try ensureOpen()
        try rocksCall { err in rocksdb_flush_wal(raw, sync ? 1 : 0, err) }
    }

    /// Compacts `[from, to]` (nil = unbounded) of the family, synchronously.
    public func compactRange(from: [UInt8]? = nil, to: [UInt8]? = nil, in family: ColumnFamily? = nil) throws {
        let cf = try handle(family)
        func with(_ b: [UInt8]?, _ body: (UnsafePointer<CChar>?, Int) -> Void) {
            if let b { b.withChars { body($0, $1) } } else { body(nil, 0) }
        }
        with(from) { s, sl in with(to) { e, el in rocksdb_compact_range_cf(raw, cf, s, sl, e, el) } }
    }

    /// A RocksDB property as text, e.g. `rocksdb.stats`. https://github.com/facebook/rocksdb/blob/main/include/rocksdb/db.h
    public func property(_ name: String, in family: ColumnFamily? = nil) -> String? {
        guard let cf = try? handle(family), let p = rocksdb_property_value_cf(raw, cf, name) else { return nil }
        defer { rocksdb_free(p) }
        return String(cString: p)
    }

    /// A numeric RocksDB property, e.g. `rocksdb.estimate-num-keys`.
    public func integerProperty(_ name: String, in family: ColumnFamily? = nil) -> UInt64? {
        guard let cf = try? handle(family) else { return nil }
        var value: UInt64 = 0
        return rocksdb_property_int_cf(raw, cf, name, &value) == 0 ? value : nil
    }

    /// The statistics dump, or nil when `enableStatistics` was off.
    public func statisticsText() -> String? {
        guard options.enableStatistics, let opts = ownedLock.withLock({ owned.options.first }),
              let p = rocksdb_options_statistics_get_string(opts) else { return nil }
        defer { rocksdb_free(p) }
        return String(cString: p)
    }

    /// Bytes held by the row cache (0 without one).
    public var rowCacheUsage: Int {
        ownedLock.withLock { owned.rowCache.map { Int(rocksdb_cache_get_usage($0)) } ?? 0 }
    }

    public var latestSequenceNumber: UInt64 { isClosed ? 0 : rocksdb_get_latest_sequence_number(raw) }

    /// Writes an openable copy of the database to `directory` (must not exist); table files are
    /// hard-linked when on the same file system.
    public func checkpoint(to directory: String) throws {
        try ensureOpen()
        let cp = try rocksCall { err in rocksdb_checkpoint_object_create(raw, err) }
        defer { rocksdb_checkpoint_object_destroy(cp) }
        try rocksCall { err in rocksdb_checkpoint_create(cp, directory, 0, err) }
    }

    // MARK: closing

    /// Closes the database and releases its directory lock.
    ///
    /// Throws `.busy` while snapshots or cursors made from it are open. Family handles held
    /// elsewhere become closed (their calls throw `.closed`). Idempotent. No other call may run
    /// concurrently with it.
    public func close() throws {
        if isClosed { return }
        let snapshots = openSnapshotCount, cursors = openCursorCount
        if snapshots > 0 || cursors > 0 {
            throw StorageError(code: .busy, message: "cannot close: \(snapshots) snapshot(s) and \(cursors) cursor(s) still open")
        }
        forceClose()
    }

    private func forceClose() {
        guard !closedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let all = familiesByName.withLock { Array($0.values) } + droppedFamilies.withLock { $0 }
        for f in all { f.destroy() }
        defaultHandle.destroy()
        rocksdb_close(raw)
        ownedLock.withLock {
            owned.options.forEach { rocksdb_options_destroy($0) }
            owned.filters.forEach { rocksdb_compactionfilter_destroy($0) }
            if let rowCache = owned.rowCache { rocksdb_cache_destroy(rowCache) }
            owned = OwnedObjects()
        }
    }
}

/// C read options built from a `ReadOptions`, with the bound buffers they point into
/// (RocksDB keeps pointers to them, not copies).
final class ReadOptionsHandle {
    let raw: OpaquePointer
    private var lower: UnsafeMutablePointer<CChar>?
    private var upper: UnsafeMutablePointer<CChar>?
    let snapshot: Snapshot?

    init(_ o: ReadOptions) {
        raw = rocksdb_readoptions_create()
        snapshot = o.snapshot
        if let s = o.snapshot, let sr = s.raw { rocksdb_readoptions_set_snapshot(raw, sr) }
        rocksdb_readoptions_set_fill_cache(raw, o.fillCache ? 1 : 0)
        rocksdb_readoptions_set_verify_checksums(raw, o.verifyChecksums ? 1 : 0)
        rocksdb_readoptions_set_prefix_same_as_start(raw, o.prefixSameAsStart ? 1 : 0)
        rocksdb_readoptions_set_total_order_seek(raw, o.totalOrderSeek ? 1 : 0)
        if let b = o.lowerBound {
            lower = ReadOptionsHandle.copy(b)
            rocksdb_readoptions_set_iterate_lower_bound(raw, lower, b.count)
        }
        if let b = o.upperBound {
            upper = ReadOptionsHandle.copy(b)
            rocksdb_readoptions_set_iterate_upper_bound(raw, upper, b.count)
        }
    }

    static func copy(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar> {
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: Swift.max(1, bytes.count))
        bytes.withUnsafeBytes { if let b = $0.baseAddress { memcpy(p, b, bytes.count) } }
        return p
    }

    deinit {
        rocksdb_readoptions_destroy(raw)
        lower?.deallocate()
        upper?.deallocate()
    }
}
