import ArgumentParser
import CairnEngine
import Foundation

/// `cairnd backup|restore|check`: offline tools over a data directory. Wiring only; the work is
/// in `OfflineTools` (CairnEngine).

/// Options every offline tool takes: the server's (config file, --dir, --set ...) plus the
/// backup directory.
struct OfflineOptions: ParsableArguments {
    @OptionGroup var server: ServerOptions
    @Option(name: .customLong("backup-dir"), help: "Backup directory (default: backup-dir from the config, or <dir>/backups).")
    var backupDir: String?

    /// Loads the configuration and runs `body` with it, printing a failure (an
    /// `OfflineTools.Failure` or a storage error) as one line and exiting 1.
    func run(_ body: (Configuration) throws -> Void) throws {
        var config = try server.load()
        if let backupDir { config.backupDir = backupDir }
        do {
            try body(config)
        } catch {
            FileHandle.standardError.write(Data("cairnd: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Back up a stopped data directory (incrementally) into the backup directory.")
    @OptionGroup var options: OfflineOptions

    func run() throws {
        try options.run { config in
            let info = try OfflineTools.backup(config)
            print("backup \(info.id): \(info.fileCount) files, \(info.size) bytes, in \(config.resolvedBackupDir)")
        }
    }
}

struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore", abstract: "Restore a backup into a data directory no server is using (replacing its contents).")
    @OptionGroup var options: OfflineOptions
    @Option(help: "The backup id (default: the newest; BACKUP.LIST shows them).") var id: UInt32?

    func run() throws {
        try options.run { config in
            let info = try OfflineTools.restore(config, id: id)
            print("restored backup \(info.id) (\(info.fileCount) files, \(info.size) bytes) into \(config.dir)")
        }
    }
}

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Check that a data directory opens and reads back; report its families and keys.")
    @OptionGroup var options: OfflineOptions

    func run() throws {
        try options.run { config in
            let families = try OfflineTools.check(config)
            print("\(config.dir): ok, \(families.count) column famil\(families.count == 1 ? "y" : "ies")")
            for f in families {
                print("  \(f.name): \(f.keys) keys, \(f.expired) expired\(f.mergeOperator.map { ", merge \($0)" } ?? "")")
            }
        }
    }
}
