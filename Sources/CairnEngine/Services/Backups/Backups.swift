public import Rocks
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Backups, online restore and checkpoints: the engine's side of BACKUP.*, BGSAVE, LASTSAVE and
/// CHECKPOINT, and of `backup-keep`, `backup-max-age` and `backup-interval`.
///
/// Backups are RocksDB's incremental backups (memtables flushed first, so the WAL is not
/// needed): table files unchanged since an earlier backup are shared, so N backups of a mostly
/// unchanged database take about one copy. https://github.com/facebook/rocksdb/wiki/How-to-backup-RocksDB
///
/// Every operation here is synchronous and may take long; the server runs them off the worker
/// queues (a deferred reply, see `Outcome.deferred`), so they never block other clients. They
/// are serialised by `jobs`: one backup, verify, purge, restore or checkpoint at a time.
public final class Backups: Sendable {
    /// Held for the whole of each job.
    private let jobs = Mutex<Void>(())
    /// The backup engine and the directory it was opened on (reopened when `backup-dir` changes).
    private let opened = Mutex<BackupEngine?>(nil)
    /// BGSAVE or a scheduled backup is running or queued.
    let backgroundInProgress = Atomic<Bool>(false)
    let restoreInProgress = Atomic<Bool>(false)
    private let summary = Mutex(Summary())

    /// What INFO persistence reports, updated after each job (INFO must not wait for one).
    struct Summary {
        var count = 0
        var lastID: UInt32 = 0
        var lastStatusOK = true
        var lastDurationMillis: Int64 = -1
        var lastRestoreID: UInt32 = 0
    }

    init() {}

    func withJob<R>(_ body: () throws(CommandError) -> R) throws(CommandError) -> R {
        try jobs.withLock { _ throws(CommandError) -> R in try body() }
    }

    /// The backup engine for the configured directory, opened on first use.
    private func backupEngine(_ engine: Engine) throws(CommandError) -> BackupEngine {
        let directory = engine.configuration.resolvedBackupDir
        return try engine.storage("opening the backup directory \(directory)") {
            try opened.withLock { be in
                if let current = be, current.directory == directory { return current }
                be?.close()
                try makeDirectory(directory)
                let fresh = try BackupEngine.open(at: directory)
                be = fresh
                return fresh
            }
        }
    }

    /// Flushes and backs up the database, then applies retention. Updates LASTSAVE.
    public func create(_ engine: Engine) throws(CommandError) -> BackupInfo {
        try withJob { () throws(CommandError) -> BackupInfo in
            let started = Clock.milliseconds()
            do throws(CommandError) {
                let be = try backupEngine(engine)
                let db = engine.database
                let info = try engine.storage("backup") { () throws -> BackupInfo in
                    do {
                        return try be.createBackup(of: db, flushFirst: true)
                    } catch let e as StorageError where e.code == .noSpace && e.message.contains(be.directory) {
                        // RocksDB's message names the file it could not write: here a backup file.
                        engine.logger.error("backup failed: \(e)")
                        throw CommandError("ERR", "backup failed: no space left on the backup disk (\(be.directory)); the data is unchanged")
                    }
                }
                engine.lastSave.store(info.timestamp, ordering: .relaxed)
                let elapsed = Clock.milliseconds() - started
                summary.withLock {
                    $0.lastID = info.id
                    $0.lastStatusOK = true
                    $0.lastDurationMillis = elapsed
                }
                engine.logger.notice("backup \(info.id) created in \(engine.configuration.resolvedBackupDir): \(info.fileCount) files, \(info.size) bytes, \(elapsed) ms")
                try applyRetention(engine, be)
                return info
            } catch {
                summary.withLock { $0.lastStatusOK = false }
                throw error
            }
        }
    }

    /// Purges by `backup-keep` and `backup-max-age`; the newest backup always stays.
    private func applyRetention(_ engine: Engine, _ be: BackupEngine) throws(CommandError) {
        let all = try list(engine, be)
        let keep = Backups.retained(all, engine.configuration)
        if keep < all.count { _ = try purge(engine, be, keeping: keep) }
    }

    /// How many of `all` (oldest first) `backup-keep` and `backup-max-age` keep: the newest ones,
    /// at least one.
    static func retained(_ all: [BackupInfo], _ config: Configuration) -> Int {
        var keep = all.count
        if config.backupKeep > 0 { keep = min(keep, config.backupKeep) }
        if config.backupMaxAge > 0 {
            let cutoff = Clock.milliseconds() / 1000 - Int64(config.backupMaxAge)
            keep = min(keep, max(1, all.filter { $0.timestamp >= cutoff }.count))
        }
        return keep
    }

    /// Every backup, oldest first.
    public func list(_ engine: Engine) throws(CommandError) -> [BackupInfo] {
        try withJob { () throws(CommandError) -> [BackupInfo] in try list(engine, try backupEngine(engine)) }
    }

    private func list(_ engine: Engine, _ be: BackupEngine) throws(CommandError) -> [BackupInfo] {
        let all = try engine.storage("listing backups") { try be.backups() }
        summary.withLock {
            $0.count = all.count
            if let last = all.last { $0.lastID = last.id }
        }
        return all
    }

    /// Checks that the backup's files exist with their recorded sizes, then (unless `quick`)
    /// re-reads each file and compares its CRC32C with the one recorded in the backup's meta
    /// file, so flipped bytes are found too (RocksDB's C API only checks sizes).
    public func verify(_ engine: Engine, id: UInt32, quick: Bool = false) throws(CommandError) {
        try withJob { () throws(CommandError) in
            let be = try backupEngine(engine)
            try requireExists(engine, be, id)
            try verify(engine, be, id: id, quick: quick)
        }
    }

    private func verify(_ engine: Engine, _ be: BackupEngine, id: UInt32, quick: Bool) throws(CommandError) {
        do {
            try be.verify(id)
            if !quick { try be.verifyChecksums(id) }
        } catch {
            engine.logger.error("backup \(id) failed verification: \(error)")
            throw CommandError("ERR", "backup \(id) failed verification (a file is missing, truncated or corrupted); see the server log")
        }
    }

    private func requireExists(_ engine: Engine, _ be: BackupEngine, _ id: UInt32) throws(CommandError) {
        guard try list(engine, be).contains(where: { $0.id == id }) else {
            throw CommandError("ERR", "no such backup \(id); BACKUP.LIST shows them")
        }
    }

    /// Deletes all but the newest `count` backups; returns how many went.
    public func purge(_ engine: Engine, keeping count: Int) throws(CommandError) -> Int {
        try withJob { () throws(CommandError) -> Int in try purge(engine, try backupEngine(engine), keeping: count) }
    }

    private func purge(_ engine: Engine, _ be: BackupEngine, keeping count: Int) throws(CommandError) -> Int {
        let before = try list(engine, be).count
        try engine.storage("purging backups") { try be.purge(keeping: count) }
        let after = try list(engine, be).count
        if before > after { engine.logger.notice("purged \(before - after) backup(s), keeping the newest \(count)") }
        return before - after
    }

    /// Restores backup `id` (nil: the newest) into the live data directory, online.
    ///
    /// Checks the backup first (sizes and checksums), then copies it into a staging directory
    /// while clients are still served (`RestoreJournal.stage`: the live database is untouched,
    /// so a crash, a full disk or any error here leaves the data as it was). Then, while the
    /// server has every client paused (`ServerHooks.withClientsPaused`), which takes only
    /// renames: closes every snapshot and iterator (their owners get a clear error on next
    /// use), closes the database, switches the staged files in, reopens, and points each
    /// session at the reopened family of the same name. A session whose family the backup does
    /// not have gets errors until CF.USE (never silently the default family). WATCHed
    /// transactions abort and SCAN cursors are forgotten.
    public func restore(_ engine: Engine, id requested: UInt32?, caller: Session) throws(CommandError) {
        try withJob { () throws(CommandError) in
            let be = try backupEngine(engine)
            let all = try list(engine, be)
            guard let id = requested ?? all.last?.id else { throw CommandError("ERR", "there are no backups to restore") }
            guard let info = all.first(where: { $0.id == id }) else {
                throw CommandError("ERR", "no such backup \(id); BACKUP.LIST shows them")
            }
            try verify(engine, be, id: id, quick: false)
            guard !restoreInProgress.exchange(true, ordering: .acquiringAndReleasing) else {
                throw CommandError("ERR", "restore in progress")
            }
            defer { restoreInProgress.store(false, ordering: .releasing) }
            let directory = engine.configuration.dir
            do {
                try RestoreJournal.stage(info, from: be, into: directory)
            } catch {
                engine.logger.error("restoring backup \(id) failed while copying it beside the data; the data is unchanged: \(error)")
                throw Backups.stagingFailure(id, error)
            }
            var result: Result<Void, CommandError> = .success(())
            let body = { (sessions: [Session]) in
                result = Result { () throws(CommandError) in try engine.reopen(swappingIn: id, sessions: sessions) }
            }
            if let hooks = engine.hooks { hooks.withClientsPaused(body) } else { body([caller]) }
            try result.get()
            // Other data: replicas can no longer continue the old history.
            engine.replication.startNewHistory(engine)
            summary.withLock { $0.lastRestoreID = id }
        }
    }

    /// The client's error for a restore that failed while staging (nothing was changed).
    static func stagingFailure(_ id: UInt32, _ error: any Error) -> CommandError {
        if let e = error as? StorageError, e.code == .noSpace {
            if e.message.hasPrefix("not enough free space") { return CommandError("ERR", "\(e.message); the data is unchanged") }
            return CommandError("ERR", "restoring backup \(id) failed: no space left on the data disk; the data is unchanged")
        }
        return CommandError("ERR", "restoring backup \(id) failed before it changed anything; the data is unchanged (see the server log)")
    }

    /// Writes an openable copy of the database to `directory` (which must not exist); table
    /// files are hard links when on the same file system, so it is cheap.
    public func checkpoint(_ engine: Engine, to directory: String) throws(CommandError) {
        try withJob { () throws(CommandError) in
            var st = stat()
            guard stat(directory, &st) != 0 else { throw CommandError("ERR", "\(directory) already exists; CHECKPOINT needs a new directory") }
            let db = engine.database
            try engine.storage("checkpoint to \(directory)") { try db.checkpoint(to: directory) }
            engine.logger.notice("checkpoint written to \(directory)")
        }
    }

    /// INFO persistence lines about backups.
    func infoLines(_ engine: Engine) -> [(String, String)] {
        let s = summary.withLock { $0 }
        let c = engine.configuration
        return [
            ("backup_in_progress", backgroundInProgress.load(ordering: .relaxed) ? "1" : "0"),
            ("restore_in_progress", restoreInProgress.load(ordering: .relaxed) ? "1" : "0"),
            ("backups", String(s.count)),
            ("last_backup_id", String(s.lastID)),
            ("last_backup_status", s.lastStatusOK ? "ok" : "err"),
            ("last_backup_duration_ms", String(s.lastDurationMillis)),
            ("last_restored_backup_id", String(s.lastRestoreID)),
            ("backup_keep", String(c.backupKeep)),
            ("backup_max_age", String(c.backupMaxAge)),
            ("backup_interval", String(c.backupInterval)),
        ]
    }

    var lastStatusOK: Bool { summary.withLock { $0.lastStatusOK } }

    /// Starts a backup in the background (BGSAVE, the schedule). False when one is already
    /// running or queued.
    public func startBackground(_ engine: Engine, reason: String) -> Bool {
        guard !backgroundInProgress.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        let work: @Sendable () -> Void = { [self] in
            defer { backgroundInProgress.store(false, ordering: .releasing) }
            do {
                _ = try create(engine)
            } catch {
                engine.logger.error("\(reason) failed: \(error)")
            }
        }
        if let hooks = engine.hooks { hooks.runInBackground(work) } else { work() }
        return true
    }

    /// Closes the backup engine (at shutdown).
    public func close() {
        jobs.withLock { _ in opened.withLock { $0?.close(); $0 = nil } }
    }
}

extension Engine {
    /// Swaps the database for the staged backup `id` (`RestoreJournal.stage` ran). Runs while
    /// no command runs (the server pauses every worker); `sessions` are every connected client's.
    func reopen(swappingIn id: UInt32, sessions: [Session]) throws(CommandError) {
        try reopen(swappingIn: "backup \(id)", sessions: sessions)
    }

    /// Swaps the database for the staged one (`RestoreJournal.stage` ran): `what` names it in
    /// the log and errors ("backup 3", "the primary's copy").
    func reopen(swappingIn what: String, sessions: [Session]) throws(CommandError) {
        try replication.excludingReplication { () throws(CommandError) in try reopenAlone(swappingIn: what, sessions: sessions) }
    }

    private func reopenAlone(swappingIn what: String, sessions: [Session]) throws(CommandError) {
        detachForSwap(sessions)
        let old = database
        do {
            try storage("closing the database for restore") {
                try syncWALOrFail()
                try old.close()
            }
        } catch {
            RestoreJournal.abandon(configuration.dir)
            throw error
        }
        logger.notice("switching in \(what) in \(configuration.dir)")
        var failure: CommandError? = nil
        do throws(RestoreJournal.SwapFailure) {
            try RestoreJournal.swapIn(configuration.dir)
        } catch {
            switch error {
            case .notStarted(let reason):
                logger.error("restoring \(what) failed before it changed anything: \(reason); reopening the database as it is")
                failure = CommandError("ERR", "restoring \(what) failed before it changed anything; the data is unchanged (see the server log)")
            case .incomplete(let reason):
                // Serving what is left would look like data loss. A restart finishes the swap.
                logger.critical("restoring \(what) stopped part-way: \(reason); every command fails until cairnd restarts and finishes the restore")
                throw CommandError("ERR", "restoring \(what) stopped part-way; restart cairnd to finish the restore (see the server log)")
            }
        }
        guard let (opened, _) = openWritableOrReadOnly() else {
            throw CommandError("ERR", "reopening the database after restore failed; see the server log")
        }
        install(opened, sessions: sessions)
        // The sweep keeps only a family name and a key to resume after (no handles); restored
        // keys may carry TTLs no write announced, so it starts a fresh pass.
        expirySweep.wake()
        if let failure { throw failure }
        logger.notice("\(what) restored; serving again")
    }

    /// Closes the session's snapshots and iterators (which read the old database), remembering
    /// their ids so their next use gets a clear error.
    func closeHandlesForRestore(_ s: Session) {
        s.closedByRestore.formUnion(s.snapshots.keys)
        s.closedByRestore.formUnion(s.iterators.keys)
        for it in s.iterators.values { it.cursor.close() }
        s.iterators = [:]
        s.readSnapshot = nil
        for snap in s.snapshots.values { release(snap) }
        s.snapshots = [:]
    }
}
