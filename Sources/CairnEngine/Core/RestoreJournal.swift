import Rocks
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Makes a restore atomic: after a crash at any point, the data directory holds exactly the
/// old database or exactly the backup, never a mix and never nothing.
///
/// RocksDB's own restore deletes the data directory's files and then copies the backup's in,
/// so a crash or a full disk in between leaves neither. Cairn never lets it touch the live
/// directory. A restore runs in two steps:
///
/// 1. **Stage.** The journal `RESTORE-IN-PROGRESS` (phase `copying`) is written, then RocksDB
///    restores the backup into `restore-staging/` inside the data directory (same file system,
///    so the files can be renamed into place later). The live database is not touched: the
///    server keeps serving meanwhile, and a crash, a full disk or any error here only leaves a
///    staging directory that is removed. The journal for the next step is written ahead, while
///    there is room, as `RESTORE-IN-PROGRESS.swap`.
/// 2. **Swap.** With the database closed, `RESTORE-IN-PROGRESS.swap` is renamed over the journal
///    (no disk space needed): phase `swapping`, listing the staged files. Then the old
///    database's files that the backup does not have are deleted, each staged file is renamed
///    into the data directory (`CURRENT` last), and the staging directory and the journal go.
///    Every step can be repeated, so startup finishes a swap a crash interrupted.
///
/// Subdirectories of the data directory (the default `backups/`) are never touched, nor are
/// files whose names are not RocksDB's.
public enum RestoreJournal {
    public static let fileName = "RESTORE-IN-PROGRESS"
    static let stagingName = "restore-staging"

    /// The restore a journal records.
    public struct Pending: Equatable, Sendable {
        public enum Phase: String, Sendable {
            /// The backup was being copied into the staging directory; the database is intact.
            case copying
            /// The staged files were replacing the database's; startup must finish that.
            case swapping
            /// A journal written before restores were staged: the old in-place restore.
            case legacy
        }
        public var phase: Phase
        public var backupID: UInt32
        public var backupDirectory: String
        /// Names of the staged files (phase `swapping`).
        public var files: [String] = []
    }

    /// Why a swap failed: before it changed anything (the old database is still whole), or
    /// part-way (the journal stays and startup finishes it).
    public enum SwapFailure: Error {
        case notStarted(String)
        case incomplete(String)
    }

    static func path(_ dataDirectory: String) -> String { dataDirectory + "/" + fileName }
    static func nextPath(_ dataDirectory: String) -> String { path(dataDirectory) + ".swap" }
    static func stagingPath(_ dataDirectory: String) -> String { dataDirectory + "/" + stagingName }

    // MARK: reading the journal

    /// The unfinished restore recorded in `dataDirectory`, if any. A journal that cannot be
    /// parsed reads as backup 0 (it is written whole, so that means damage, not a crash).
    public static func pending(in dataDirectory: String) -> Pending? {
        guard let bytes = readFile(path(dataDirectory)) else { return nil }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.count >= 3, let phase = Pending.Phase(rawValue: lines[0]), let id = UInt32(lines[1]), !lines[2].isEmpty {
            let files = lines.dropFirst(3).filter { !$0.isEmpty }
            return Pending(phase: phase, backupID: id, backupDirectory: lines[2], files: Array(files))
        }
        if lines.count >= 2, let id = UInt32(lines[0]), !lines[1].isEmpty {
            return Pending(phase: .legacy, backupID: id, backupDirectory: lines[1])
        }
        return Pending(phase: .legacy, backupID: 0, backupDirectory: "")
    }

    private static func text(_ p: Pending) -> String {
        ([p.phase.rawValue, String(p.backupID), p.backupDirectory] + p.files).joined(separator: "\n") + "\n"
    }

    // MARK: staging

    /// Copies backup `info` into the staging directory of `dataDirectory`, leaving the
    /// database itself untouched; on return the swap's journal is ready. On any failure the
    /// staging directory and the journal are removed and the error is rethrown: the data
    /// directory is as it was. Refuses up front when the disk has not room for the backup.
    static func stage(_ info: BackupInfo, from be: BackupEngine, into dataDirectory: String) throws {
        let needed = info.size + info.size / 50 + (8 << 20)
        if let free = freeBytes(dataDirectory), free < needed {
            throw StorageError(
                code: .noSpace,
                message: "not enough free space on the data disk to restore backup \(info.id): it needs about \(megabytes(needed)) beside the current data and \(megabytes(free)) is free")
        }
        try stage(Pending(phase: .copying, backupID: info.id, backupDirectory: be.directory), into: dataDirectory) { staging in
            try be.restore(info.id, toDatabaseAt: staging)
        }
    }

    /// Stages a database that `fill` writes into the staging directory it is given (a backup's
    /// restore, or a replica's full sync with `backupID` 0 and `replicationSource` as the
    /// directory), with the journal for the swap ready on return. On any failure the staging
    /// directory and the journal are removed and the error is rethrown.
    static func stage(_ pending: Pending, into dataDirectory: String, fill: (String) throws -> Void) throws {
        try makeDirectory(dataDirectory)
        removeTree(stagingPath(dataDirectory))
        unlink(nextPath(dataDirectory))
        var journal = pending
        journal.phase = .copying
        guard writeFileAtomically(path(dataDirectory), text(journal)), syncDirectory(dataDirectory) else {
            throw StorageError(code: errno == ENOSPC ? .noSpace : .ioError, message: "cannot write \(path(dataDirectory)): \(String(cString: strerror(errno)))")
        }
        do {
            let staging = stagingPath(dataDirectory)
            try makeDirectory(staging)
            try fill(staging)
            journal.files = try listFiles(staging).sorted()
            for name in journal.files {
                guard syncFile(staging + "/" + name) else { throw StorageError(code: errno == ENOSPC ? .noSpace : .ioError, message: "cannot sync \(staging)/\(name): \(String(cString: strerror(errno)))") }
            }
            journal.phase = .swapping
            guard syncDirectory(staging), writeFileAtomically(nextPath(dataDirectory), text(journal)), syncDirectory(dataDirectory) else {
                throw StorageError(code: errno == ENOSPC ? .noSpace : .ioError, message: "cannot write \(nextPath(dataDirectory)): \(String(cString: strerror(errno)))")
            }
        } catch {
            abandon(dataDirectory)
            throw error
        }
    }

    /// What a full sync's journal names as its backup directory.
    static let replicationSource = "replication"

    /// Removes a staged restore that will not be swapped in, and its journal.
    static func abandon(_ dataDirectory: String) {
        removeTree(stagingPath(dataDirectory))
        unlink(nextPath(dataDirectory))
        unlink(path(dataDirectory))
        _ = syncDirectory(dataDirectory)
    }

    // MARK: swapping

    /// Replaces the (closed) database in `dataDirectory` by the staged backup. Throws
    /// `SwapFailure.notStarted` when nothing was changed, `.incomplete` when the journal stays
    /// for startup to finish.
    static func swapIn(_ dataDirectory: String) throws(SwapFailure) {
        guard rename(nextPath(dataDirectory), path(dataDirectory)) == 0, syncDirectory(dataDirectory) else {
            let reason = String(cString: strerror(errno))
            abandon(dataDirectory)
            throw .notStarted("cannot start the swap: \(reason)")
        }
        guard let journal = pending(in: dataDirectory), journal.phase == .swapping else {
            throw .incomplete("the journal \(path(dataDirectory)) cannot be read back")
        }
        do {
            try finishSwap(journal, in: dataDirectory)
        } catch {
            throw .incomplete("\(error)")
        }
    }

    /// The repeatable part of the swap: delete the old database's files the backup does not
    /// have, rename every staged file into place (`CURRENT` last), drop the staging directory
    /// and the journal.
    private static func finishSwap(_ journal: Pending, in dataDirectory: String) throws {
        let staged = Set(journal.files)
        for name in try listFiles(dataDirectory) where isRocksDBFile(name) && !staged.contains(name) {
            guard unlink(dataDirectory + "/" + name) == 0 || errno == ENOENT else {
                throw StorageError(code: .ioError, message: "cannot remove \(dataDirectory)/\(name): \(String(cString: strerror(errno)))")
            }
        }
        let staging = stagingPath(dataDirectory)
        let order = journal.files.filter { $0 != "CURRENT" } + journal.files.filter { $0 == "CURRENT" }
        for name in order {
            var st = stat()
            guard stat(staging + "/" + name, &st) == 0 else { continue }  // moved before a crash
            guard rename(staging + "/" + name, dataDirectory + "/" + name) == 0 else {
                throw StorageError(code: .ioError, message: "cannot move \(staging)/\(name) into place: \(String(cString: strerror(errno)))")
            }
        }
        guard syncDirectory(dataDirectory) else {
            throw StorageError(code: .ioError, message: "cannot sync \(dataDirectory): \(String(cString: strerror(errno)))")
        }
        removeTree(staging)
        guard unlink(path(dataDirectory)) == 0 || errno == ENOENT, syncDirectory(dataDirectory) else {
            throw StorageError(code: .ioError, message: "cannot remove \(path(dataDirectory)): \(String(cString: strerror(errno)))")
        }
    }

    // MARK: one-shot and startup

    /// Stages and swaps in one go, for a database that is not open (`cairnd restore`).
    static func restore(_ info: BackupInfo, from be: BackupEngine, into dataDirectory: String) throws {
        try stage(info, from: be, into: dataDirectory)
        do throws(SwapFailure) {
            try swapIn(dataDirectory)
        } catch {
            switch error {
            case .notStarted(let reason):
                throw StorageError(code: .ioError, message: "restoring backup \(info.id) failed before it changed anything: \(reason)")
            case .incomplete(let reason):
                throw StorageError(code: .ioError, message: "restoring backup \(info.id) stopped part-way (\(reason)); starting cairnd finishes it")
            }
        }
    }

    /// At startup, before the database opens: a restore cut short while staging is dropped
    /// (the database was never touched); one cut short while swapping is finished. Throws,
    /// with what to do, when that is impossible.
    static func recover(in dataDirectory: String, logger: Logger) throws {
        guard let journal = pending(in: dataDirectory) else {
            var st = stat()
            if stat(stagingPath(dataDirectory), &st) == 0 {
                removeTree(stagingPath(dataDirectory))
                unlink(nextPath(dataDirectory))
            }
            return
        }
        switch journal.phase {
        case .copying:
            abandon(dataDirectory)
            if journal.backupDirectory == replicationSource {
                logger.warning("a full sync from the primary was interrupted while its files were being received, before it changed the database; \(dataDirectory) is as it was")
            } else {
                logger.warning("a restore of backup \(journal.backupID) was interrupted while copying, before it changed the database; \(dataDirectory) is as it was")
            }
        case .swapping:
            logger.warning("the restore of backup \(journal.backupID) into \(dataDirectory) was interrupted while its files were being switched in; finishing it")
            do {
                try finishSwap(journal, in: dataDirectory)
            } catch {
                throw StorageError(
                    code: .ioError,
                    message: "an interrupted restore of backup \(journal.backupID) could not be finished (\(error)); fix the cause and start again, or run `cairnd restore` with a backup")
            }
            logger.notice("backup \(journal.backupID) restored into \(dataDirectory)")
        case .legacy:
            // An in-place restore from an earlier version: its files may be gone, so restore
            // the same backup again, the atomic way.
            guard journal.backupID != 0 else {
                throw StorageError(
                    code: .corruption,
                    message: "\(path(dataDirectory)) is unreadable; restore a backup with `cairnd restore` before starting")
            }
            logger.warning("the restore of backup \(journal.backupID) into \(dataDirectory) did not finish; finishing it from \(journal.backupDirectory)")
            do {
                let be = try BackupEngine.open(at: journal.backupDirectory)
                defer { be.close() }
                guard let info = try be.backups().first(where: { $0.id == journal.backupID }) else {
                    throw StorageError(code: .notFound, message: "backup \(journal.backupID) is not in \(journal.backupDirectory)")
                }
                try restore(info, from: be, into: dataDirectory)
            } catch {
                // Staging removes the journal it replaced; this directory is still not a database.
                if pending(in: dataDirectory) == nil {
                    _ = writeFileAtomically(path(dataDirectory), "\(journal.backupID)\n\(journal.backupDirectory)\n")
                }
                throw StorageError(
                    code: .ioError,
                    message: "an interrupted restore of backup \(journal.backupID) from \(journal.backupDirectory) could not be finished (\(error)); "
                        + "the data directory is incomplete: fix the cause, or run `cairnd restore` with another backup, then start again")
            }
            logger.notice("backup \(journal.backupID) restored into \(dataDirectory)")
        }
    }

    /// RocksDB's own file names: what a database directory holds, and all a swap replaces.
    static func isRocksDBFile(_ name: String) -> Bool {
        if ["CURRENT", "IDENTITY", "LOCK", "LOG"].contains(name) { return true }
        if name.hasPrefix("LOG.old.") || name.hasPrefix("MANIFEST-") || name.hasPrefix("OPTIONS-") { return true }
        let numbered = name.split(separator: ".", maxSplits: 1)
        guard numbered.count == 2, numbered[0].allSatisfy(\.isNumber) else { return false }
        return ["sst", "log", "blob", "ldb", "dbtmp"].contains(numbered[1])
    }

    private static func megabytes(_ bytes: UInt64) -> String { "\((bytes + (1 << 20) - 1) >> 20) MB" }
}
