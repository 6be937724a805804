public import Logging
public import RESP
public import Rocks
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
    let scanCursors = ScanCursors()
    /// Background deletion of expired keys; the server steps it from a timer.
    public let expirySweep = ExpirySweep()
    let config: Mutex<Configuration>
    /// Access control, failed-AUTH throttling and key/value size limits (AccessControl.swift).
    public let guardrails: Guardrails
    let syncWrites: Atomic<Bool>
    let startedAt = Clock.microseconds()
    /// Unix seconds of the last successful backup (the start time until one is made): LASTSAVE.
    public let lastSave = Atomic<Int64>(Clock.milliseconds() / 1000)
    public internal(set) var database: Database
    let families: Mutex<[String: Family]>
    public internal(set) var defaultFamily: Family
    /// Backups, online restore and checkpoints (Backups.swift).
    public let backups = Backups()
    /// Set by the server when it syncs the WAL for `appendfsync always` itself (group commit,
    /// see `Session.unsyncedWrite`); until then writes under `always` sync one by one.
    public let groupCommit = Atomic<Bool>(false)
    /// Set once by the server before it serves.
    public nonisolated(unsafe) weak var hooks: (any ServerHooks)?

    /// The family that records which merge operator each family uses.
    static let metaFamilyName = "cairn.meta"

    /// Opens (creating if needed) the database in `configuration.dir`.
    public init(configuration: Configuration, logger: Logger) throws {
        self.logger = logger
        self.config = Mutex(configuration)
        self.guardrails = Guardrails(configuration)
        self.syncWrites = Atomic(configuration.appendfsync == .always)
        self.table = CommandTable.standard
        let stats = EngineStats()
        self.stats = stats
        try RestoreJournal.finishInterrupted(in: configuration.dir, logger: logger)
        let (db, families, defaultFamily) = try Engine.openDatabase(configuration, stats: stats)
        self.database = db
        self.families = Mutex(families)
        self.defaultFamily = defaultFamily
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

    /// Every family's options: the engine's merge operator and the expiry compaction filter.
    /// `stats`, when given, counts the expired values compaction drops.
    package static func familyOptions(_ name: String, stats: EngineStats? = nil) -> ColumnFamilyOptions {
        var o = ColumnFamilyOptions()
        o.mergeOperator = EngineMergeOperator()
        o.compactionFilter = ExpiryCompactionFilter(stats: stats)
        return o
    }

    static func openDatabase(_ c: Configuration, stats: EngineStats) throws -> (Database, [String: Family], Family) {
        try makeDirectory(c.dir)
        let db = try Database.open(at: c.dir, options: databaseOptions(c)) { familyOptions($0, stats: stats) }
        let meta = try db.family(named: metaFamilyName) ?? db.createFamily(named: metaFamilyName)
        var families: [String: Family] = [:]
        for handle in db.families where handle.name != metaFamilyName {
            let op = try db.get(Array("family:\(handle.name)".utf8), in: meta).map { Bytes.text($0) }
            families[handle.name] = Family(name: handle.name, handle: handle, mergeOperator: op?.isEmpty == false ? op : nil)
        }
        guard let defaultFamily = families["default"] else {
            throw StorageError(code: .corruption, message: "the database has no default column family")
        }
        return (db, families, defaultFamily)
    }

    /// Closes the database. The server calls this at shutdown, after the last command ran.
    public func close() throws {
        backups.close()
        try database.flushWAL(sync: true)
        try database.close()
    }

    /// Syncs the WAL (the `everysec` timer calls this once a second, the group commit of
    /// `always` whenever writes wait). False when the sync failed (logged).
    @discardableResult
    public func syncWAL() -> Bool {
        do {
            try database.flushWAL(sync: true)
            stats.walSyncs.increment()
            return true
        } catch {
            logger.error("WAL sync failed: \(error)")
            return false
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

    /// Records the port the listener really bound, so `CONFIG GET port` answers it after `port 0`.
    public func noteListeningPort(_ port: Int) {
        config.withLock { $0.port = port }
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
        guardrails.apply(updated)
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
    public func makeSession(record: ClientRecord) -> Session {
        let session = Session(record: record, authenticated: false, family: defaultFamily)
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
            session.permissions = []
            session.record.state.withLock { $0.user = "default" }
        }
    }

    /// Snapshots held by all connections (capped by `max-snapshots`).
    let snapshotCount = Atomic<Int>(0)
    /// Ids for snapshots and iterators, unique server-wide.
    let nextHandleID = Atomic<Int64>(1)

    /// Releases what a closed connection owned: its snapshots and iterators.
    public func connectionClosed(_ session: Session) {
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
        snapshotCount.add(-1, ordering: .relaxed)
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

    /// Runs one request and appends its reply to `out`.
    public func execute(_ argv: [[UInt8]], session: Session, out: inout RESPWriter) {
        stats.commandsProcessed.increment()
        guard let first = argv.first else { return }
        let lookedUp = lookup(argv, first: first)
        let command: Command
        switch lookedUp {
        case .failure(let error):
            if session.inTransaction { session.transactionFailed = true }
            reply(error, to: &out)
            return
        case .success(let c):
            command = c
        }
        let now = Clock.milliseconds()
        session.record.state.withLock {
            $0.lastCommand = command.name
            $0.lastInteraction = now
        }
        if !session.authenticated && !command.flags.contains(.noAuth) {
            if session.inTransaction { session.transactionFailed = true }
            reply(.noAuth, to: &out)
            return
        }
        if session.authenticated, let refusal = guardrails.check(command, argv, session: session) {
            if session.inTransaction { session.transactionFailed = true }
            if refusal.prefix == "NOPERM" {
                logger.info("refused '\(command.name)' to user \(session.user) (client \(session.id), \(session.record.address))")
            }
            reply(refusal, to: &out)
            return
        }
        if session.inTransaction && !command.flags.contains(.noMulti) {
            session.queued?.append(argv)
            out.simpleString("QUEUED")
            return
        }
        run(command, argv, session: session, out: &out)
    }

    /// True for a plain `GET key` that may run grouped with its neighbours (`executePlainGets`):
    /// authenticated, outside MULTI, allowed to read.
    @inline(__always)
    public func isPlainGet(_ argv: [[UInt8]], session: Session) -> Bool {
        argv.count == 2 && argv[0].isKeyword("GET") && session.authenticated && !session.inTransaction
            && session.permissions.contains(.read)
    }

    /// Runs consecutive plain GETs of one read as one RocksDB batched MultiGet: one pass over
    /// memtables and table files for the group, all read at one sequence number (as if they ran
    /// back to back with no write between, which a pipeline allows), values copied once, from
    /// RocksDB's pinned memory into the replies. Expired values read as missing; the sweep
    /// deletes them. Writing stops once `out` holds more than `stopPast` bytes: the caller
    /// closes a client whose replies pass its output limit, so the rest would never be sent,
    /// and memory stays bounded by the limit plus one value.
    public func executePlainGets(_ requests: [[[UInt8]]], session: Session, out: inout RESPWriter, stopPast: Int = .max) {
        guard requests.count > 1 else {
            execute(requests[0], session: session, out: &out)
            return
        }
        stats.commandsProcessed.increment(by: requests.count)
        var options = ReadOptions()
        options.snapshot = session.readSnapshot?.snapshot
        let handle = session.family.handle
        let now = Clock.milliseconds()
        do {
            let hits = try storage("grouped GET") {
                try database.withValues(forKeys: requests.map { $0[1] }, in: handle, options: options) { values in
                    var hits = 0
                    for value in values where out.bytes.count <= stopPast {
                        if let payload = ValueFormat.livePayload(of: value, now: now) {
                            out.bulk(payload)
                            hits += 1
                        } else {
                            out.null()
                        }
                    }
                    return hits
                }
            }
            stats.keyspaceHits.increment(by: hits)
            stats.keyspaceMisses.increment(by: requests.count - hits)
        } catch {
            for _ in requests { reply(error, to: &out) }
        }
    }

    /// Runs an already-checked command; used by EXEC for each queued request too.
    func run(_ command: Command, _ argv: [[UInt8]], session: Session, out: inout RESPWriter) {
        let call = Call(engine: self, session: session, argv: argv, name: command.name)
        if command.flags.contains(.write) { session.unsyncedWrite = true }
        do {
            try command.handler(call, &out)
        } catch {
            reply(error, to: &out)
        }
    }

    func reply(_ error: CommandError, to out: inout RESPWriter) {
        stats.errorReplies.increment()
        out.error(error.wire)
    }

    /// Finds the command (and subcommand) and checks arity, with Redis's error texts.
    func lookup(_ argv: [[UInt8]], first: [UInt8]) -> Result<Command, CommandError> {
        guard let command = table.commands[Bytes.lowercased(first)] else {
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
    func unregisterFamily(_ name: String) { families.withLock { _ = $0.removeValue(forKey: name) } }

    /// Runs a storage call, turning a RocksDB failure into a reply a person can act on.
    /// The detail goes to the log.
    func storage<T>(_ what: String, _ body: () throws -> T) throws(CommandError) -> T {
        do {
            return try body()
        } catch let error as StorageError {
            logger.error("\(what) failed: \(error)")
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
        case .noSpace: CommandError("ERR", "write failed: no space left on the data disk; reads still work")
        case .familyDropped: CommandError("ERR", "the column family was dropped; use CF.USE to pick another")
        case .closed: CommandError("ERR", "the database is closed (restore or shutdown in progress)")
        case .busy, .tryAgain: CommandError("ERR", "storage busy, try again")
        case .corruption: CommandError("ERR", "storage corruption detected; see the server log")
        case .ioError: CommandError("ERR", "storage I/O error; see the server log")
        default: CommandError("ERR", "storage error; see the server log")
        }
    }
}
