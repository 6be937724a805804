import Logging
public import Rocks
#if canImport(Glibc)
import Glibc
#endif

/// What `cairnd backup`, `cairnd restore` and `cairnd check` do, on a data directory no server
/// is using. Each throws `OfflineTools.Failure` with a message meant for the person at the shell.
public enum OfflineTools {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }

    /// One column family as `check` reports it.
    public struct FamilyReport: Sendable {
        public var name: String
        /// Keys with a value that has not expired.
        public var keys: Int
        /// Keys whose TTL has passed (deleted on next read, sweep or compaction).
        public var expired: Int
        public var mergeOperator: String?
    }

    /// Backs up the stopped data directory `configuration.dir` into `resolvedBackupDir`, with
    /// the retention of `backup-keep` and `backup-max-age`.
    public static func backup(_ configuration: Configuration) throws -> BackupInfo {
        try requireDatabase(configuration.dir)
        let db = try openExclusive(configuration, purpose: "use BACKUP.CREATE or BGSAVE on the running server instead")
        defer { try? db.close() }
        try makeDirectory(configuration.resolvedBackupDir)
        let be = try BackupEngine.open(at: configuration.resolvedBackupDir)
        defer { be.close() }
        let info = try be.createBackup(of: db, flushFirst: true)
        let all = try be.backups()
        let keep = Backups.retained(all, configuration)
        if keep < all.count { try be.purge(keeping: keep) }
        return info
    }

    /// Restores backup `id` (nil: the newest) from `resolvedBackupDir` into `configuration.dir`,
    /// replacing what is there. Refuses while a server holds the directory.
    public static func restore(_ configuration: Configuration, id: UInt32?) throws -> BackupInfo {
        let dir = configuration.dir
        var st = stat()
        // Finish or drop what an interrupted restore left, then make sure no server uses it.
        try RestoreJournal.recover(in: dir, logger: Logger(label: "cairnd.restore"))
        if stat(dir + "/CURRENT", &st) == 0 {
            let db = try openExclusive(configuration, purpose: "stop it first, or use BACKUP.RESTORE on the running server")
            try db.close()
        }
        guard stat(configuration.resolvedBackupDir + "/meta", &st) == 0 else {
            throw Failure("no backups in \(configuration.resolvedBackupDir)")
        }
        let be = try BackupEngine.open(at: configuration.resolvedBackupDir)
        defer { be.close() }
        let all = try be.backups()
        guard let chosen = id.map({ wanted in all.first { $0.id == wanted } }) ?? all.last else {
            throw Failure(id.map { "no backup \($0) in \(configuration.resolvedBackupDir)" } ?? "no backups in \(configuration.resolvedBackupDir)")
        }
        try be.verify(chosen.id)
        try be.verifyChecksums(chosen.id)
        try RestoreJournal.restore(chosen, from: be, into: dir)
        return chosen
    }

    /// Opens the data directory read-only (so it works beside a running server too), reads
    /// every key of every family with checksums verified, and reports the families.
    public static func check(_ configuration: Configuration) throws -> [FamilyReport] {
        try requireDatabase(configuration.dir)
        var options = Engine.databaseOptions(configuration)
        options.readOnly = true
        let db = try Database.open(at: configuration.dir, options: options, familyOptions: { Engine.familyOptions($0) })
        defer { try? db.close() }
        let meta = db.family(named: Engine.metaFamilyName)
        let now = Clock.milliseconds()
        var read = ReadOptions()
        read.verifyChecksums = true
        read.fillCache = false
        var reports: [FamilyReport] = []
        for family in db.families.sorted(by: { $0.name < $1.name }) where !Engine.hiddenFamilyNames.contains(family.name) {
            var report = FamilyReport(name: family.name, keys: 0, expired: 0, mergeOperator: nil)
            if let meta, let value = try db.get(FamilySettings.key(family.name), in: meta) {
                report.mergeOperator = FamilySettings(decoding: value).merge
            }
            try db.withCursor(in: family, options: read) { c in
                c.seekToFirst()
                while c.isValid {
                    let expired = c.withValue { ValueFormat.header(of: $0)?.isExpired(now: now) ?? false }
                    if expired { report.expired += 1 } else { report.keys += 1 }
                    c.next()
                }
                try c.check()
            }
            reports.append(report)
        }
        return reports
    }

    static func requireDatabase(_ dir: String) throws {
        if let pending = RestoreJournal.pending(in: dir) {
            throw Failure("the restore of backup \(pending.backupID) into \(dir) did not finish; start cairnd (it finishes the restore, or drops it if the data was not yet touched) or run `cairnd restore` again")
        }
        var st = stat()
        guard stat(dir + "/CURRENT", &st) == 0 else { throw Failure("no Cairn database in \(dir) (no CURRENT file)") }
    }

    /// Opens the database as the server would, turning "a server holds the LOCK" into a clear
    /// message.
    static func openExclusive(_ configuration: Configuration, purpose: String) throws -> Database {
        do {
            // The families' own table options, or RocksDB would record the defaults for them.
            return try Engine.openWithRecordedOptions(dir: configuration.dir, options: Engine.databaseOptions(configuration)) { Engine.familyOptions($0) }
        } catch let error as StorageError where error.code == .busy || error.message.contains("lock") {
            throw Failure("the data directory \(configuration.dir) is in use (a running cairnd holds its LOCK); \(purpose)")
        }
    }
}
