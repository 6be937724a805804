public import ArgumentParser

/// The admin subcommands: a lower-case first word `backup`, `info`, `scan` or `range`. Anything
/// else (including `INFO`, `BACKUP.LIST`, `get k`) is sent to the server as a raw command.
public enum AdminCommand: Equatable, Sendable {
    case backupCreate
    case backupList
    case backupVerify(id: String, quick: Bool)
    case backupRestore(id: String)
    case backupPurge(keep: Int)
    case info(section: String?)
    case scan(match: String?, count: Int?, type: String?, family: String?)
    case range(start: String, end: String, reverse: Bool, limit: Int?, keysOnly: Bool, family: String?)

    /// The words that start a subcommand.
    public static let names: Set<String> = ["backup", "info", "scan", "range"]

    /// The subcommand in `words`, nil when `words` is a raw command.
    /// - Throws: ArgumentParser's error for a malformed subcommand; print it with ``message(for:)``.
    public static func parse(_ words: [String]) throws -> AdminCommand? {
        guard let first = words.first, names.contains(first) else { return nil }
        let rest = Array(words.dropFirst())
        switch first {
        case "backup": return try BackupArguments.parse(rest).command
        case "info": return .info(section: try InfoArguments.parse(rest).section)
        case "scan":
            let a = try ScanArguments.parse(rest)
            return .scan(match: a.match, count: a.count, type: a.type, family: a.cf)
        default:
            let a = try RangeArguments.parse(rest)
            return .range(start: a.start, end: a.end, reverse: a.rev, limit: a.limit, keysOnly: a.keysOnly, family: a.cf)
        }
    }

    /// A readable message for an error thrown by ``parse(_:)``, with the subcommand's usage.
    public static func message(for error: any Error, words: [String]) -> String {
        switch words.first {
        case "backup": BackupArguments.fullMessage(for: error)
        case "info": InfoArguments.fullMessage(for: error)
        case "scan": ScanArguments.fullMessage(for: error)
        default: RangeArguments.fullMessage(for: error)
        }
    }

    /// The subcommands' part of `cairn-cli --help`.
    public static let help = """
        ADMIN SUBCOMMANDS (a lower-case first word; everything else is sent as a raw command):
          backup create                 take a backup (BACKUP.CREATE), print its id
          backup list                   the backups: id, time, size, files (BACKUP.LIST)
          backup verify <id> [--quick]  check a backup's files and checksums (BACKUP.VERIFY)
          backup restore <id>|latest    restore online (BACKUP.RESTORE); clients wait meanwhile
          backup purge --keep <n>       delete all but the newest n backups (BACKUP.PURGE)
          info [section]                INFO, as text, or one object per section with --json
          scan [--match <glob>] [--count <n>] [--type <t>] [--cf <family>]
                                        every key (SCAN until the cursor is 0), one per line
          range <start> <end> [--rev] [--limit <n>] [--keys-only] [--cf <family>]
                                        entries in key order (RANGE, paged); bounds as RANGE
                                        takes them: [a inclusive, (a exclusive, - and + open;
                                        a bare key is inclusive

        To send one of these words as a raw command, write it in capitals: `cairn-cli INFO`,
        `cairn-cli BACKUP.LIST`, `cairn-cli SCAN 0 MATCH user:*`.
        """
}

struct BackupArguments: ParsableArguments {
    @Argument(help: "create, list, verify, restore or purge") var action: String
    @Argument(help: "the backup id (verify, restore)") var id: String?
    @Flag(help: "verify: sizes only, no checksums") var quick = false
    @Option(help: "purge: how many of the newest backups to keep") var keep: Int?

    var command: AdminCommand {
        get throws {
            func needID() throws -> String {
                guard let id else { throw ValidationError("backup \(action) needs a backup id") }
                return id
            }
            switch action {
            case "create": return .backupCreate
            case "list": return .backupList
            case "verify": return .backupVerify(id: try needID(), quick: quick)
            case "restore": return .backupRestore(id: try needID())
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

struct InfoArguments: ParsableArguments {
    @Argument(help: "an INFO section (server, clients, memory, persistence, stats, keyspace, rocksdb...)")
    var section: String?
}

struct ScanArguments: ParsableArguments {
    @Option(help: "only keys matching this glob") var match: String?
    @Option(help: "the COUNT hint per SCAN call") var count: Int?
    @Option(help: "only keys of this type") var type: String?
    @Option(help: "the column family (default: the one given before the subcommand)") var cf: String?
}

struct RangeArguments: ParsableArguments {
    @Argument(help: "low bound: [key, (key, key or -") var start: String
    @Argument(help: "high bound: [key, (key, key or +") var end: String
    @Flag(help: "descending order") var rev = false
    @Option(help: "at most this many entries") var limit: Int?
    @Flag(help: "keys only") var keysOnly = false
    @Option(help: "the column family") var cf: String?
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
