public import Logging
public import RESP
package import Rocks
public import Synchronization

/// Runs Redis commands against a RocksDB database, in-process.
///
/// One engine serves every connection. `execute(_:session:out:)` is called on the session's
/// connection queue, many sessions at once: RocksDB's reads and writes are thread-safe, and
/// `KeyLocks` serialises writers of the same key. Handlers live in `Commands/`, one file per family.
///
/// `@unchecked Sendable`: `database` is replaced only by `reopen(_:)`, which the server calls while
/// it holds every worker queue (no command runs); everything else is immutable or locked.
public final class Engine: @unchecked Sendable {
    public let logger: Logger
    public let clients = ClientRegistry()
    public let stats: EngineStats
    public let table: CommandTable
    let locks = KeyLocks()
    /// Lengths of values APPEND just grew (`AppendLengths`).
    let appendLengths = AppendLengths()
    /// Hot values in front of RocksDB (`value-cache-size`, ValueCache.swift).
    let valueCache: ValueCache
    let scanCursors = ScanCursors()
    /// Lua scripting: the interpreter, the script cache, the running script (Scripting/).
    let scripting = Scripting()
    /// Background deletion of expired keys; the server steps it from a timer.
    public let expirySweep = ExpirySweep()
    /// INFO keyspace's count of keys and keys with a TTL, kept in the background; the server
    /// steps it from a timer (KeyspaceCount.swift).
    public let keyspaceCount = KeyspaceCount()
    let config: Mutex<Configuration>
    /// The options CONFIG knows: the engine's and those registered by the server (`register(_:)`).
    private let configOptions = Mutex(ConfigTable.engine)
    /// Access control, failed-AUTH throttling and key/value size limits (AccessControl.swift).
    public let guardrails: Guardrails
    let syncWrites: Atomic<Bool>
    /// `notify-keyspace-events` as `KeyspaceEvents.active` gives it: 0 when off.
    let keyspaceEventClasses: Atomic<Int>
    let startedAt = Clock.microseconds()
    /// Unix seconds of the last successful backup (the start time until one is made): LASTSAVE.
    public let lastSave = Atomic<Int64>(Clock.milliseconds() / 1000)
    var database: Database
    let families: Mutex<[String: Family]>
    var defaultFamily: Family
    /// Backups, online restore and checkpoints (Backups.swift).
    public let backups = Backups()
    /// Disk-full mode: refuses writes before RocksDB runs out of space (DiskSpace.swift).
    public let diskGuard = DiskGuard()
    /// Set by the server when it syncs the WAL for `appendfsync always` itself (group commit,
    /// see `Outcome.wroteToWAL`); until then writes under `always` sync one by one.
    public let groupCommit = Atomic<Bool>(false)
    /// Clients in MONITOR mode (Monitors.swift).
    public let monitors = Monitors()
    /// CLIENT PAUSE (ClientPause.swift).
    public let pause = ClientPause()
    /// Set once by the server before it serves.
    public nonisolated(unsafe) weak var hooks: (any ServerHooks)?

    /// The family that records which merge operator each family uses.
    static let metaFamilyName = "cairn.meta"
    /// The family holding the members of every family's hashes, sets, sorted sets and lists
    /// (`MemberKeys`); hidden like `metaFamilyName`.
    static let membersFamilyName = "cairn.members"
    /// Channels, patterns and their subscribers.
    public let pubsub = PubSub()
    /// Versions for new collections (`CollectionMetadata.version`).
    let collectionVersions = VersionClock()
    /// Clients parked by a blocking pop, per key (Blocking/BlockedClients.swift).
    public let blocking = BlockedClients()
    /// Primary or replica, the replicas and the link to the primary (Replication/).
    public let replication = Replication()
    /// Held while a column family is created or dropped, so families are created in one order
    /// (a replica replays them in that order: see BatchApplier.swift).
    let familyChanges = Mutex<Void>(())
    /// The open database keeps its flushed WAL for replicas (`Replication.keepsWAL`).
    public let walKept = Atomic<Bool>(false)

    /// Opens (creating if needed) the database in `configuration.dir`.
    public init(configuration: Configuration, logger: Logger) throws {
        // Made here, on a thread of normal priority, whose nice value it inherits.
        _ = NormalPriorityThread.shared
        self.logger = logger
        self.config = Mutex(configuration)
        self.guardrails = try Guardrails(configuration)
        self.syncWrites = Atomic(configuration.appendfsync == .always)
        self.keyspaceEventClasses = Atomic(KeyspaceEvents.active(configuration.notifyKeyspaceEvents))
        self.table = CommandTable.standard
        self.valueCache = ValueCache(capacity: configuration.valueCacheSize)
        let stats = EngineStats()
        stats.apply(configuration)
        self.stats = stats
        try RestoreJournal.recover(in: configuration.dir, logger: logger)
        // Opening for writing replays the WAL into new table files and starts a new WAL; on a
        // full disk RocksDB fails that (or aborts, in assertion builds), so open read-only and
        // switch to writing once space returns (DiskGuard.poll).
        let readOnly = DiskGuard.mustOpenReadOnly(configuration)
        if readOnly {
            logger.warning("the data disk has less than min-free-disk free: opening the database read-only; writes are refused until space returns")
        }
        let (db, families, defaultFamily) = try Engine.openDatabase(configuration, stats: stats, readOnly: readOnly)
        self.database = db
        self.families = Mutex(families)
        self.defaultFamily = defaultFamily
        walKept.store(Replication.keepsWAL(dir: configuration.dir, configuration: configuration), ordering: .relaxed)
        if readOnly { diskGuard.openedReadOnly() }
        if DiskGuard.reserveIsCapped(for: configuration) {
            logger.warning("min-free-disk (or its default, twice write-buffer-size plus 8 MiB) is more than a quarter of the data disk: keeping \(DiskGuard.reserve(for: configuration) / 1_048_576) MiB free instead; set min-free-disk and write-buffer-size for a disk this small")
        }
        diskGuard.poll(self)
        Replication.removeLeftoverCheckpoints(in: configuration.dir)
        let role: Replication.Role
        if let (host, port) = Replication.parseTarget(configuration.replicaof) { role = .replica(host: host, port: port) } else { role = .primary }
        replication.load(dir: configuration.dir, latest: db.latestSequenceNumber, role: role)
        replication.readOnly.store(role != .primary && configuration.replicaReadOnly, ordering: .relaxed)
        finishPendingWrites()
    }

    /// Readies the calling thread to serve requests: RocksDB's per-thread performance counters,
    /// which nothing reads, are turned off (`PerfCounters`). The workers' threads come from
    /// Dispatch's pool, so each round calls this; it is one thread-local store.
    public static func prepareThread() {
        PerfCounters.disableOnThisThread()
    }

    /// The RocksDB options the server opens its database with (also used by `cairn-bench-rocks`).
    package static func databaseOptions(_ c: Configuration) -> DatabaseOptions {
        var o = DatabaseOptions()
        o.blockCacheBytes = c.blockCacheSize
        o.rowCacheBytes = c.rowCacheSize
        o.writeBufferBytes = c.writeBufferSize
        o.bloomBitsPerKey = c.bloomBitsPerKey
        o.compression = Compression(rawValue: c.compression == "no" ? "none" : c.compression) ?? .lz4
        o.backgroundJobs = c.maxBackgroundJobs
        o.maxOpenFiles = Int32(clamping: c.maxOpenFiles)
        o.memtableBloomRatio = c.memtableBloomRatio
        o.dataBlockHashRatio = c.dataBlockHashRatio
        return o
    }

    /// Every family's options: the engine's merge operator and the expiry compaction filter;
    /// the members family's: its own compaction filter (`MembersCompactionFilter`, given
    /// `liveness`). `stats`, when given, counts the expired values compaction drops.
    package static func familyOptions(_ name: String, stats: EngineStats? = nil) -> ColumnFamilyOptions {
        familyOptions(name, stats: stats, liveness: nil)
    }

    static func familyOptions(_ name: String, stats: EngineStats? = nil, liveness: CollectionLiveness?) -> ColumnFamilyOptions {
        var o = ColumnFamilyOptions()
        if name == membersFamilyName {
            if let liveness { o.compactionFilterFactory = MembersCompactionFilterFactory(liveness: liveness) }
            return o
        }
        if name == metaFamilyName {
            // Its records are Cairn's own (no value header to expire); stale `moved` records go.
            if let liveness { o.compactionFilterFactory = MovedRecordsFilterFactory(liveness: liveness) }
            return o
        }
        o.mergeOperator = EngineMergeOperator()
        // APPEND and MERGE write operands; a key appended to many times would otherwise make
        // every read (and APPEND's own length check) fold all of them.
        o.maxSuccessiveMerges = 64
        o.compactionFilter = ExpiryCompactionFilter(stats: stats)
        return o
    }

    static func openDatabase(_ c: Configuration, stats: EngineStats, readOnly: Bool = false) throws -> (Database, [String: Family], Family) {
        try makeDirectory(c.dir)
        try refuseHalfADatabase(c.dir)
        var options = databaseOptions(c)
        options.readOnly = readOnly
        if Replication.keepsWAL(dir: c.dir, configuration: c) {
            // Flushed WAL is kept for replicas that were away (Replication/WALFeed.swift).
            options.walTTLSeconds = UInt64(max(0, c.replBacklogTTL))
            options.walSizeLimitMB = UInt64(max(1, c.replBacklogSize >> 20))
        }
        let liveness = CollectionLiveness()
        let db = try openWithRecordedOptions(dir: c.dir, options: options) { familyOptions($0, stats: stats, liveness: liveness) }
        let meta = try db.family(named: metaFamilyName)
            ?? db.createFamily(named: metaFamilyName, options: familyOptions(metaFamilyName, liveness: liveness))
        let members = try db.family(named: membersFamilyName)
            ?? db.createFamily(named: membersFamilyName, options: familyOptions(membersFamilyName, liveness: liveness))
        liveness.attach(db)
        var families: [String: Family] = [:]
        for handle in db.families where !hiddenFamilyNames.contains(handle.name) {
            let settings = try db.get(FamilySettings.key(handle.name), in: meta).map { FamilySettings(decoding: $0) }
            families[handle.name] = Family(name: handle.name, handle: handle, settings: settings ?? .init(), members: members)
        }
        guard let defaultFamily = families["default"] else {
            throw StorageError(code: .corruption, message: "the database has no default column family")
        }
        return (db, families, defaultFamily)
    }

    /// Families Cairn keeps for itself: not listed, not usable by CF.USE, not creatable.
    static let hiddenFamilyNames: Set<String> = [metaFamilyName, membersFamilyName]

    /// Closes the database. The server calls this at shutdown, after the last command ran.
    /// The WAL is synced first; when that fails (RocksDB has a write error it has not recovered
    /// from) the database is closed all the same: every acknowledged write is in the WAL file,
    /// and the next start replays it.
    public func close() throws {
        backups.close()
        keyspaceCount.forget()
        if !diskGuard.isReadOnly {
            do {
                try syncWALOrFail()
                // Synced: the next start may continue this history (Replication.load).
                replication.save(dir: configuration.dir, cleanAt: database.latestSequenceNumber)
            } catch {
                logger.warning("the WAL could not be synced while stopping (\(error)); the next start replays it")
            }
        }
        try database.close()
    }

    /// Syncs the WAL (the `everysec` timer calls this once a second, the group commit of
    /// `always` whenever writes wait): every write that returned before the call is durable
    /// after it. RocksDB syncs the WAL files beside its write queue, so writers do not wait for
    /// the disk. False when the sync failed (logged, and noted by `DiskGuard`), or was not
    /// tried: the database is open read-only, or RocksDB has a write error (it would answer
    /// every sync with it until it recovers, and the log once a second).
    @discardableResult
    public func syncWAL() -> Bool {
        if diskGuard.isFaulted || diskGuard.isReadOnly { return false }
        do {
            try syncWALOrFail()
            stats.walSyncs.increment()
            return true
        } catch {
            logger.error("WAL sync failed: \(error)")
            return false
        }
    }

    /// `syncWAL` that throws, for a caller that must stop on a failure (a restore closing the
    /// database, shutdown).
    func syncWALOrFail() throws {
        do {
            try database.flushWAL(sync: true)
        } catch let error as StorageError {
            diskGuard.noteFailure(error, engine: self)
            throw error
        }
    }

    public var configuration: Configuration { config.withLock { $0 } }

    /// Returns free heap memory to the system (`ProcessMemory.releaseFreeMemory`); the server
    /// calls it every few seconds off the request path. The time it took, in milliseconds.
    public func releaseFreeMemory() -> Int64 {
        let started = Clock.milliseconds()
        ProcessMemory.releaseFreeMemory()
        return Clock.milliseconds() - started
    }

    /// The options of the config file and CONFIG: the engine's, then every registered module's.
    public var configTable: ConfigTable { configOptions.withLock { $0 } }

    /// Adds the options of a module's settings (the server's) to `configTable`, so CONFIG GET,
    /// SET and REWRITE handle them as the engine's own. Called once, before serving.
    public func register<Settings: ConfigurationExtension>(_ type: Settings.Type) {
        configOptions.withLock { $0 = $0.adding(type) }
    }

    /// Changes a module's own settings without CONFIG SET's notification
    /// (`ServerHooks.configurationChanged`): for a value the module itself settled, such as the
    /// port bound after `port 0`, which `CONFIG GET port` then answers.
    public func updateExtension<Settings: ConfigurationExtension>(
        _ type: Settings.Type, _ change: (inout Settings) -> Void
    ) {
        config.withLock { change(&$0[type]) }
    }

    /// Applies a new configuration (CONFIG SET, already validated).
    func update(_ change: (inout Configuration) throws(CommandError) -> Void) throws(CommandError) {
        let updated = try config.withLock { (c: inout Configuration) throws(CommandError) -> Configuration in
            var copy = c
            try change(&copy)
            c = copy
            return copy
        }
        syncWrites.store(updated.appendfsync == .always, ordering: .relaxed)
        keyspaceEventClasses.store(KeyspaceEvents.active(updated.notifyKeyspaceEvents), ordering: .relaxed)
        guardrails.apply(updated)
        stats.apply(updated)
        if updated.valueCacheSize != valueCache.capacityBytes { valueCache.resize(to: updated.valueCacheSize) }
        hooks?.configurationChanged(updated)
    }

    var writeOptions: WriteOptions {
        WriteOptions(sync: syncWrites.load(ordering: .relaxed) && !groupCommit.load(ordering: .relaxed))
    }

    /// Whether a write acknowledged now must wait for a WAL sync (`appendfsync always` with the
    /// server's group commit).
    public var repliesWaitForSync: Bool {
        syncWrites.load(ordering: .relaxed) && groupCommit.load(ordering: .relaxed)
    }

    // MARK: sessions and dispatch

    /// A session for a new connection, in the default family.
    public func makeSession(record: ClientRecord, canDefer: Bool = false) -> Session {
        let session = Session(record: record, authenticated: false, family: defaultFamily, canDefer: canDefer)
        logInAsDefault(session)
        return session
    }

    /// Logs a new (or RESET) session in as the default user when that user needs no password;
    /// otherwise leaves it unauthenticated.
    func logInAsDefault(_ session: Session) {
        let acl = guardrails.accessControl
        if acl.defaultNeedsNoAuth, let user = acl.users["default"] {
            session.logIn(user)
        } else {
            session.authenticated = false
            session.user = "default"
            session.acl = nil
            session.aclGeneration = -1
        }
    }

    /// Snapshots held by all connections and by each user (`max-snapshots`, `max-snapshots-per-user`).
    let snapshotQuota = SnapshotQuota()
    /// Ids for snapshots and iterators, unique server-wide.
    let nextHandleID = Atomic<Int64>(1)

    /// Releases what a closed connection owned: its snapshots and iterators.
    public func connectionClosed(_ session: Session) {
        unsubscribeAll(session)
        session.queued = nil
        session.watched = []
        for it in session.iterators.values { it.cursor.close() }
        session.iterators = [:]
        session.readSnapshot = nil
        for snap in session.snapshots.values { release(snap) }
        session.snapshots = [:]
    }

    /// Releases one of the session's snapshots, closing the iterators that read through it.
    func dropSnapshot(_ id: Int64, of session: Session) {
        guard let snap = session.snapshots.removeValue(forKey: id) else { return }
        for (iid, it) in session.iterators where it.snapshot === snap {
            it.cursor.close()
            session.iterators.removeValue(forKey: iid)
        }
        if session.readSnapshot === snap { session.readSnapshot = nil }
        release(snap)
    }

    func release(_ snap: OwnedSnapshot) {
        snap.snapshot.release()
        snapshotQuota.release(for: snap.user)
    }

    /// Releases snapshots past `snapshot-max-age` and closes iterators idle past
    /// `iterator-idle-timeout`. The server calls this about once a second per connection, on the
    /// connection's queue.
    public func reclaimIdle(_ session: Session) {
        guard !session.snapshots.isEmpty || !session.iterators.isEmpty else { return }
        let config = configuration
        let now = Clock.milliseconds()
        if config.iteratorIdleTimeout > 0 {
            for (id, it) in session.iterators where now - it.lastUsed > Int64(config.iteratorIdleTimeout) * 1000 {
                it.cursor.close()
                session.iterators.removeValue(forKey: id)
                logger.info("closed iterator \(id) of client \(session.id): idle past iterator-idle-timeout")
            }
        }
        if config.snapshotMaxAge > 0 {
            for (id, snap) in session.snapshots where snap.id == id && now - snap.createdAt > Int64(config.snapshotMaxAge) * 1000 {
                dropSnapshot(id, of: session)
                logger.info("released snapshot \(id) of client \(session.id): older than snapshot-max-age")
            }
        }
    }

    /// Runs consecutive plain GETs of one read as one RocksDB batched MultiGet: one pass over
    /// memtables and table files for the group, all read at one sequence number (as if they ran
    /// back to back with no write between, which a pipeline allows), values copied once, from
    /// RocksDB's pinned memory into the replies. Expired values read as missing; the sweep
    /// deletes them. Once `out` holds more than `stopPast` bytes no more replies are written
    /// (at least one always is): returns how many requests were answered, from the first; the
    /// caller runs the rest later, once the client has read, so a run of big values costs the
    /// server about `stopPast` plus one value, not the whole run.
    @discardableResult
    public func executePlainGets(_ requests: [[[UInt8]]], session: Session, out: inout RESPWriter, stopPast: Int = .max) -> Int {
        guard requests.count > 1 else {
            execute(requests[0], session: session, out: &out)
            return 1
        }
        let started = MonotonicClock.nanoseconds()
        var options = ReadOptions()
        options.snapshot = session.readSnapshot?.snapshot
        let family = session.family
        let now = Clock.milliseconds()
        var expired: [[UInt8]] = []
        // With keyspace events on: each missing key in order, and whether it had expired.
        var misses: [(key: [UInt8], expired: Bool)] = []
        // Keys the value cache holds are answered from it; the others go to one MultiGet, and
        // what it finds fills the cache (see `Call.withStored`).
        let cache = valueCache
        var cached = [[UInt8]?](repeating: nil, count: cache.isEnabled && options.snapshot == nil ? requests.count : 0)
        var missed: [(index: Int, hash: UInt64, version: UInt64?)] = []  // no version: do not fill
        if !cached.isEmpty {
            for (i, r) in requests.enumerated() {
                let hash = KeyLocks.hash(r[1], in: family)
                switch cache.lookup(r[1], in: family, hash: hash, locks: locks, now: now) {
                case .hit(let stored): cached[i] = stored
                case .miss: missed.append((i, hash, locks.cacheVersion(ofHash: hash)))
                case .busy: missed.append((i, hash, nil))
                }
            }
        }
        let readKeys = cached.isEmpty ? requests.map { $0[1] } : missed.map { requests[$0.index][1] }
        do {
            let (answered, hits) = try storage("grouped GET") {
                try database.withValues(forKeys: readKeys, in: family.handle, options: options) { values in
                    var answered = 0
                    var hits = 0
                    var next = 0  // into `values`
                    for i in requests.indices {
                        if answered > 0 && out.bytes.count > stopPast { break }
                        let answer: GetAnswer
                        if !cached.isEmpty, let fromCache = cached[i] {
                            // No bytes: the cache knows the key is missing.
                            answer = fromCache.isEmpty ? answerGet(nil, now: now, out: &out)
                                : fromCache.withUnsafeBytes { answerGet($0, now: now, out: &out) }
                        } else {
                            let value = values[next]
                            if !cached.isEmpty, let version = missed[next].version,
                               value == nil || ValueFormat.livePayload(of: value, now: now) != nil {
                                cache.fill(requests[i][1], in: family, hash: missed[next].hash, version: version, raw: value, locks: locks)
                            }
                            next += 1
                            answer = answerGet(value, now: now, out: &out)
                        }
                        if answer == .hit { hits += 1 }
                        if answer == .expired { expired.append(requests[i][1]) }
                        if answer == .expired || answer == .missing, activeEventClasses != 0 { misses.append((requests[i][1], answer == .expired)) }
                        answered += 1
                    }
                    return (answered, hits)
                }
            }
            admitted("get", session: session, count: answered)
            stats.keyspaceHits.increment(by: hits)
            stats.keyspaceMisses.increment(by: answered - hits)
            // As a GET run alone does (a snapshot read leaves the live key alone).
            if misses.isEmpty {
                if options.snapshot == nil { for key in expired { reapExpired(key, in: family) } }
            } else {
                // In request order, each `expired` before its `keymiss`, as Redis publishes them.
                let missEvents = activeEventClasses & KeyspaceEvents.Classes.keyMiss.rawValue != 0
                for m in misses {
                    if m.expired && options.snapshot == nil { reapExpired(m.key, in: family) }
                    if missEvents { publish([KeyspaceEvents.Event(type: .keyMiss, name: "keymiss", key: m.key)]) }
                }
            }
            completedGets(requests.prefix(answered), session: session, since: started, failed: 0)
            return answered
        } catch {
            admitted("get", session: session, count: requests.count)
            for _ in requests { reply(error, to: &out) }
            completedGets(requests[...], session: session, since: started, failed: requests.count)
            return requests.count
        }
    }

    private enum GetAnswer { case hit, missing, expired, wrongType }

    /// GET's reply for a stored value (nil: no such key), as the GET handler answers.
    private func answerGet(_ value: UnsafeRawBufferPointer?, now: Int64, out: inout RESPWriter) -> GetAnswer {
        if let payload = ValueFormat.liveString(of: value, now: now) {
            out.bulk(payload)
            return .hit
        }
        if ValueFormat.livePayload(of: value, now: now) != nil {
            reply(.wrongType, to: &out)  // a collection
            return .wrongType
        }
        out.null()
        return value == nil ? .missing : .expired
    }

    /// Reports a grouped read to `completed` under its command (GET).
    private func completedGets(_ requests: ArraySlice<[[UInt8]]>, session: Session, since started: Int, failed: Int) {
        guard let first = requests.first, let command = table.command(named: first[0]) else { return }
        completed(command, requests, session: session, nanoseconds: MonotonicClock.nanoseconds() - started, failed: failed)
    }

    /// Runs an already-checked command; used by EXEC for each queued request too.
    func run(_ command: Command, _ argv: [[UInt8]], session: Session, out: inout RESPWriter) {
        if let refusal = diskRefusal(command, argv, session: session) {
            rejected(command)
            reply(refusal, to: &out)
            return
        }
        // A big write of this request's keys is committing in pieces: wait for all of it, so
        // no reader sees it half done. (Inside EXEC or under key locks the keys were awaited
        // when the locks were taken.)
        if locks.hasClaims && session.transaction == nil && !session.holdsKeyLocks {
            locks.awaitClaims(on: command.keys(in: argv), in: session.family)
        }
        let call = Call(engine: self, session: session, argv: argv, name: command.name)
        // Before `runsLong`, whose measuring reads keys too (one `keymiss` per key and command).
        session.commandSerial &+= 1
        if command.flags.contains(.write) { session.outcome.wroteToWAL = true }
        if runsLong(command, call) {
            // Off the worker (LongWork.swift): the same handler, later, on another thread.
            session.outcome.runsInBackground = true
            session.outcome.deferred = { [self] w in
                session.runsLong = true
                defer { session.runsLong = false }
                runHandler(command, Call(engine: self, session: session, argv: argv, name: command.name), &w)
            }
            return
        }
        runHandler(command, call, &out)
    }

    /// Runs the handler and reports what the request cost (`completed`).
    private func runHandler(_ command: Command, _ call: Call, _ out: inout RESPWriter) {
        let started = MonotonicClock.nanoseconds()
        var failed = 0
        do {
            try command.handler(call, &out)
        } catch {
            failed = 1
            reply(error, to: &out)
        }
        // Its writes are done: what it recorded is published (a transaction's wait for its commit).
        if !call.session.pendingEvents.isEmpty { flushEvents(of: call.session) }
        completed(command, CollectionOfOne(call.argv), session: call.session, nanoseconds: MonotonicClock.nanoseconds() - started, failed: failed)
    }

    func reply(_ error: CommandError, to out: inout RESPWriter) {
        stats.noteError(error.prefix)
        out.error(error.wire)
    }

    /// Finds the command (and subcommand) and checks arity, with Redis's error texts.
    func lookup(_ argv: [[UInt8]], first: [UInt8]) -> Result<Command, CommandError> {
        guard let command = table.command(named: first) else {
            let args = argv.dropFirst().prefix(20).map { "'\(Bytes.text(Array($0.prefix(128))))'" }.joined(separator: " ")
            return .failure(CommandError("ERR", "unknown command '\(Bytes.text(Array(first.prefix(128))))', with args beginning with: \(args)\(args.isEmpty ? "" : " ")"))
        }
        guard command.accepts(argv.count) else { return .failure(.arity(command.name)) }
        // A bare container (COMMAND, whose arity allows it) runs its own handler.
        if command.subcommands.isEmpty || argv.count < 2 { return .success(command) }
        let subName = Bytes.lowercased(argv[1])
        guard let sub = command.subcommands[subName] else {
            return .failure(CommandError("ERR", "unknown subcommand '\(Bytes.text(Array(argv[1].prefix(128))))'. Try \(command.name.uppercased()) HELP."))
        }
        guard sub.accepts(argv.count) else { return .failure(.arity(sub.name)) }
        return .success(sub)
    }

    // MARK: families

    public func family(named name: String) -> Family? { families.withLock { $0[name] } }
    public var allFamilies: [Family] { families.withLock { Array($0.values) }.sorted { $0.name < $1.name } }

    func registerFamily(_ family: Family) { families.withLock { $0[family.name] = family } }
    func unregisterFamily(_ name: String) {
        families.withLock { _ = $0.removeValue(forKey: name) }
        keyspaceCount.familyDropped(name)
    }

    /// Runs a storage call, turning a RocksDB failure into a reply a person can act on.
    /// The detail goes to the log.
    func storage<T>(_ what: String, _ body: () throws -> T) throws(CommandError) -> T {
        do {
            return try body()
        } catch let error as StorageError {
            logger.error("\(what) failed: \(error)")
            diskGuard.noteFailure(error, engine: self)
            throw Engine.commandError(for: error)
        } catch let error as CommandError {
            throw error
        } catch {
            logger.error("\(what) failed: \(error)")
            throw CommandError("ERR", "internal error; see the server log")
        }
    }

    static func commandError(for error: StorageError) -> CommandError {
        switch error.code {
        case .noSpace: .diskFull
        case .familyDropped: CommandError("ERR", "the column family was dropped; use CF.USE to pick another")
        case .closed: CommandError("ERR", "the database or this connection's column family is closed (a restore replaced it, or the server is stopping); CF.USE picks a family")
        case .busy, .tryAgain: CommandError("ERR", "storage busy, try again")
        case .corruption: CommandError("ERR", "storage corruption detected; see the server log")
        case .ioError: CommandError("ERR", "storage I/O error; see the server log")
        default: CommandError("ERR", "storage error; see the server log")
        }
    }
}
