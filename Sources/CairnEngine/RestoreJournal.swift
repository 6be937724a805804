import Rocks
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Makes a restore crash-safe. RocksDB's restore first deletes the data directory's files, then
/// copies the backup's in; a crash in between would leave a partial database that a restart
/// would open (or, with no CURRENT file, replace with an empty one) as if nothing happened.
///
/// So a restore writes `RESTORE-IN-PROGRESS` (the backup id and directory) into the data
/// directory before touching it, and removes it only once every file is in place. While the
/// file exists the directory is not a database: startup finishes the restore from the same
/// backup before opening anything, and `cairnd check` reports it.
public enum RestoreJournal {
    public static let fileName = "RESTORE-IN-PROGRESS"

    /// The restore a journal records.
    public struct Pending: Equatable, Sendable {
        public var backupID: UInt32
        public var backupDirectory: String
    }

    static func path(_ dataDirectory: String) -> String { dataDirectory + "/" + fileName }

    /// Records that `dataDirectory` is about to be replaced by backup `id`; durable on return.
    static func begin(_ dataDirectory: String, restoring id: UInt32, from backupDirectory: String) throws {
        try makeDirectory(dataDirectory)
        let text = "\(id)\n\(backupDirectory)\n"
        guard writeFileAtomically(path(dataDirectory), text), syncDirectory(dataDirectory) else {
            throw StorageError(code: .ioError, message: "cannot write \(path(dataDirectory)): \(String(cString: strerror(errno)))")
        }
    }

    /// Records that the restore finished: every file of the backup is in place.
    static func end(_ dataDirectory: String) throws {
        guard unlink(path(dataDirectory)) == 0 || errno == ENOENT, syncDirectory(dataDirectory) else {
            throw StorageError(code: .ioError, message: "cannot remove \(path(dataDirectory)): \(String(cString: strerror(errno)))")
        }
    }

    /// The unfinished restore recorded in `dataDirectory`, if any.
    public static func pending(in dataDirectory: String) -> Pending? {
        guard let bytes = readFile(path(dataDirectory)) else { return nil }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 2, let id = UInt32(lines[0]), !lines[1].isEmpty else {
            // A journal is written whole (temporary file and rename), so this is not a crash.
            return Pending(backupID: 0, backupDirectory: "")
        }
        return Pending(backupID: id, backupDirectory: String(lines[1]))
    }

    /// Restores backup `id` into `dataDirectory` under the journal.
    static func restore(_ id: UInt32, from be: BackupEngine, into dataDirectory: String) throws {
        try begin(dataDirectory, restoring: id, from: be.directory)
        try be.restore(id, toDatabaseAt: dataDirectory)
        try end(dataDirectory)
    }

    /// At startup: finishes a restore a crash interrupted, from the backup the journal names.
    /// Throws, with what to do, when that backup cannot be restored.
    static func finishInterrupted(in dataDirectory: String, logger: Logger) throws {
        guard let pending = pending(in: dataDirectory) else { return }
        guard pending.backupID != 0 else {
            throw StorageError(
                code: .corruption,
                message: "\(path(dataDirectory)) is unreadable; restore a backup with `cairnd restore` before starting")
        }
        logger.warning("the restore of backup \(pending.backupID) into \(dataDirectory) did not finish; finishing it from \(pending.backupDirectory)")
        do {
            let be = try BackupEngine.open(at: pending.backupDirectory)
            defer { be.close() }
            try be.restore(pending.backupID, toDatabaseAt: dataDirectory)
        } catch {
            throw StorageError(
                code: .ioError,
                message: "an interrupted restore of backup \(pending.backupID) from \(pending.backupDirectory) could not be finished (\(error)); "
                    + "the data directory is incomplete: fix the cause, or run `cairnd restore` with another backup, then start again")
        }
        try end(dataDirectory)
        logger.notice("backup \(pending.backupID) restored into \(dataDirectory)")
    }
}
