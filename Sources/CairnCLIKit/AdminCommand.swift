import ArgumentParser

/// The admin subcommands: a lower-case first word `backup`, `info`, `scan` or `range`. Anything
/// else (including `INFO`, `BACKUP.LIST`, `get k`) is sent to the server as a raw command.
public enum AdminCommand: Equatable, Sendable {
    case backupCreate
    case backupList
    case backupVerify(id: Int64, quick: Bool)
    /// A nil id restores the newest backup (`latest`).
    case backupRestore(id: Int64?)
    case backupPurge(keep: Int)
    case info(section: String?)
    case scan(match: String?, count: Int?, type: String?, family: String?)
    case range(start: String, end: String, reverse: Bool, limit: Int?, keysOnly: Bool, family: String?)
    /// Copy every key of `from` to `to` (nil: the server cairn-cli talks to) with DUMP/RESTORE.
    case migrate(from: MigrationEndpoint, to: MigrationEndpoint?, batch: Int)

    /// The words that start a subcommand.
    public static let names: Set<String> = ["backup", "info", "scan", "range", "migrate"]

    /// The subcommand in `words`, nil when `words` is a raw command.
    /// - Throws: ArgumentParser's error for a malformed subcommand; print it with ``message(for:)``.
    public static func parse(_ words: [String]) throws -> AdminCommand? {
        guard let first = words.first, names.contains(first) else { return nil }
        let rest = Array(words.dropFirst())
        switch first {
        case "backup": return try BackupArguments.parse(rest).command
        case "info": return .info(section: try InfoArguments.parse(rest).section)
        case "migrate":
            let a = try MigrateArguments.parse(rest)
            guard let from = MigrationEndpoint(url: a.from) else { throw ValidationError("--from: '\(a.from)' is not a redis://host:port address") }
            var to: MigrationEndpoint? = nil
            if let text = a.to {
                guard let t = MigrationEndpoint(url: text) else { throw ValidationError("--to: '\(text)' is not a redis://host:port address") }
                to = t
            }
            guard a.batch > 0 else { throw ValidationError("--batch must be at least 1") }
            return .migrate(from: from, to: to, batch: a.batch)
        case "scan":
            let a = try ScanArguments.parse(rest)
            return .scan(match: a.match, count: a.count, type: a.type, family: a.cf)
        default:
            let a = try RangeArguments.parse(RangeArguments.options(rest))
            return .range(start: a.start, end: a.end, reverse: a.rev, limit: a.limit, keysOnly: a.keysOnly, family: a.cf)
        }
    }

    /// A readable message for an error thrown by ``parse(_:)`` (the usage, or the help for
    /// `--help`) and the exit status for it: 0 for help, 64 for a usage error.
    public static func message(for error: any Error, words: [String]) -> (text: String, status: Int32) {
        let type: any ParsableCommand.Type = switch words.first {
        case "backup": BackupArguments.self
        case "info": InfoArguments.self
        case "scan": ScanArguments.self
        case "migrate": MigrateArguments.self
        default: RangeArguments.self
        }
        let code = type.exitCode(for: error)
        return (type.fullMessage(for: error), code == .success ? 0 : 64)
    }

    /// The subcommands' part of `cairn-cli --help`.
    /// Lines stay under 80 columns: ArgumentParser wraps longer ones.
    public static let help = """
        ADMIN SUBCOMMANDS: a lower-case first word; anything else is a raw command.
          backup create               take a backup (BACKUP.CREATE), print its id
          backup list                 id, time, size and files of each backup
          backup verify <id> [--quick]
                                      check a backup's files and checksums
          backup restore <id>|latest  restore online; clients wait meanwhile
          backup purge --keep <n>     delete all but the newest n backups
          info [section]              INFO as text; one object per section (--json)
          scan [--match <glob>] [--count <n>] [--type <t>] [--cf <family>]
                                      every key (SCAN to the end), one per line
          range <start> <end> [--rev|REV] [--limit <n>|LIMIT <n>]
                [--keys-only|KEYSONLY] [--cf <family>]
                                      entries in key order (RANGE, paged); bounds
                                      as RANGE takes them: [a inclusive, (a
                                      exclusive, - and + open; a bare key is [key
          migrate --from redis://[user:pw@]host:port[/db] [--to ...] [--batch <n>]
                                      copy every key (SCAN, DUMP, PTTL, RESTORE
                                      REPLACE, pipelined) to --to or to the server
                                      given by -h/-p/-a; exit 1 unless both DBSIZEs
                                      end equal
        Each subcommand has --help. To send one of these words as a raw command,
        write it in capitals: cairn-cli INFO, cairn-cli SCAN 0 MATCH user:*.
        """
}

struct BackupArguments: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cairn-cli backup")
    @Argument(help: "create, list, verify, restore or purge") var action: String
    @Argument(help: "the backup id (verify, restore)") var id: String?
    @Flag(help: "verify: sizes only, no checksums") var quick = false
    @Option(help: "purge: how many of the newest backups to keep") var keep: Int?

    var command: AdminCommand {
        get throws {
            func needID() throws -> Int64 {
                guard let id else { throw ValidationError("backup \(action) needs a backup id") }
                guard let n = Int64(id) else { throw ValidationError("'\(id)' is not a backup id (a number from backup list)") }
                return n
            }
            switch action {
            case "create": return .backupCreate
            case "list": return .backupList
            case "verify": return .backupVerify(id: try needID(), quick: quick)
            case "restore": return .backupRestore(id: id?.lowercased() == "latest" ? nil : try needID())
            case "purge":
                guard let keep = keep ?? id.flatMap({ Int($0) }), keep >= 0 else {
                    throw ValidationError("backup purge needs --keep <n>")
                }
                return .backupPurge(keep: keep)
            default: throw ValidationError("unknown backup action '\(action)': create, list, verify, restore or purge")
            }
        }
    }
}

struct MigrateArguments: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cairn-cli migrate")
    @Option(help: "the server to copy from: redis://[user:password@]host:port[/db]") var from: String
    @Option(help: "the server to copy to (default: the one given by -h, -p, -a, --user)") var to: String?
    @Option(help: "keys per SCAN page and pipeline") var batch = 500
}

struct InfoArguments: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cairn-cli info")
    @Argument(help: "an INFO section (server, clients, memory, persistence, stats, keyspace, rocksdb...)")
    var section: String?
}

struct ScanArguments: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cairn-cli scan")
    @Option(help: "only keys matching this glob") var match: String?
    @Option(help: "the COUNT hint per SCAN call") var count: Int?
    @Option(help: "only keys of this type") var type: String?
    @Option(help: "the column family (default: the one given before the subcommand)") var cf: String?
}

struct RangeArguments: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cairn-cli range")
    @Argument(help: "low bound: [key, (key, key or -") var start: String
    @Argument(help: "high bound: [key, (key, key or +") var end: String
    @Flag(help: "descending order") var rev = false
    @Option(help: "at most this many entries") var limit: Int?
    @Flag(help: "keys only") var keysOnly = false
    @Option(help: "the column family") var cf: String?

    /// RANGE's own words after the bounds (`REV`, `LIMIT n`, `KEYSONLY`, any case) as options,
    /// so `cairn-cli range a z REV LIMIT 10` works like the command it stands for.
    static func options(_ words: [String]) -> [String] {
        words.enumerated().map { i, w in
            guard i >= 2 else { return w }
            switch w.uppercased() {
            case "REV": return "--rev"
            case "LIMIT": return "--limit"
            case "KEYSONLY": return "--keys-only"
            default: return w
            }
        }
    }
}

/// A `range` bound as the user typed it, in RANGE's syntax: `-` and `+` stay open, `[key` and
/// `(key` keep their bracket, and a bare `key` means `[key`.
public enum RangeBoundText {
    /// The bound's kind and key: nil key for open (`-`, `+`).
    public static func parse(_ text: String) -> (inclusive: Bool, key: [UInt8]?) {
        if text == "-" || text == "+" { return (true, nil) }
        if text.hasPrefix("[") { return (true, Array(text.utf8.dropFirst())) }
        if text.hasPrefix("(") { return (false, Array(text.utf8.dropFirst())) }
        return (true, Array(text.utf8))
    }
}
