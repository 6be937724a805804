/// All commands by lower-case name: the spec's entries (`CommandSpec.all`) bound to their
/// handlers. The same table dispatches requests and answers `COMMAND`.
public struct CommandTable: Sendable {
    public let commands: [String: Command]
    /// Top-level commands sorted by name (COMMAND, COMMAND DOCS).
    public let sorted: [Command]
    /// Every command and subcommand name, by `Command.index`.
    let indexedNames: [String]
    /// The commands whose names pack into a `CommandName`, by it.
    private let byPackedName: [CommandName: Command]
    /// Handlers bound to a name the spec lacks, and spec entries no handler answers: both
    /// empty (CommandSpecTests), so a command cannot exist in one place only.
    let unspecified: [String]
    let unbound: [String]

    init(_ families: [[Command]]) {
        var commands: [String: Command] = [:]
        var names: [String] = []
        // Numbers each command and subcommand, so its metrics are found without hashing its name.
        func indexed(_ c: Command) -> Command {
            var copy = c
            copy.index = names.count
            names.append(c.name)
            copy.subcommands = c.subcommands.mapValues(indexed)
            return copy
        }
        for c in families.joined() {
            precondition(commands[c.name] == nil, "duplicate command \(c.name)")
            commands[c.name] = indexed(c)
        }
        self.indexedNames = names
        self.commands = commands
        var packed: [CommandName: Command] = [:]
        for (name, c) in commands {
            if let key = CommandName(lowercasing: Array(name.utf8)) { packed[key] = c }
        }
        self.byPackedName = packed
        self.sorted = commands.values.sorted { $0.name < $1.name }
        let bound = Set(names)
        self.unspecified = names.filter { CommandSpec.named[$0] == nil }.sorted()
        self.unbound = CommandSpec.all.map(\.name).filter { !bound.contains($0) }
    }

    /// The top-level command a request names (its first argument, in any case), or nil.
    @inline(__always)
    func command(named bytes: [UInt8]) -> Command? {
        if let key = CommandName(lowercasing: bytes) { return byPackedName[key] }
        return commands[Bytes.lowercased(bytes)]
    }

    /// A command or subcommand by its full name as COMMAND INFO and DOCS take it, in any case:
    /// `get`, `config` or `config|get`; nil for anything else.
    func named(_ bytes: [UInt8]) -> Command? {
        let parts = Bytes.lowercased(bytes).split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2, let top = commands[parts[0]] else { return nil }
        guard parts.count == 2 else { return top }
        return top.subcommands[parts[1]]
    }

    /// A command or subcommand by name: `get`, `client|setname`, or `client setname`.
    public func find(_ name: String) -> Command? {
        let parts = name.lowercased().split(whereSeparator: { $0 == "|" || $0 == " " }).map(String.init)
        guard let first = parts.first, let top = commands[first] else { return nil }
        guard parts.count > 1 else { return top }
        return top.subcommands[parts[1]]
    }

    static let standard = CommandTable([
        ConnectionCommands.all,
        StringCommands.all,
        BitCommands.all,
        KeyCommands.all,
        TransactionCommands.all,
        HashCommands.all,
        PubSubCommands.all,
        ReplicationCommands.all,
        DigestCommands.all,
        ListCommands.all,
        BlockingListCommands.all,
        SetCommands.all,
        SortedSetCommands.all,
        SortedSetPops.all,
        GeoCommands.all,
        ServerCommands.all,
        FamilyCommands.all,
        SnapshotCommands.all,
        RangeCommands.all,
        BackupCommands.all,
        ACLCommands.all,
        ScriptingCommands.all,
        DiagnosticCommands.all,
        MemoryCommands.all,
        DumpCommands.all,
        HyperLogLogCommands.all,
        SortCommand.all,
        LCSCommand.all,
        StreamCommands.all,
        StreamReads.all,
        StreamGroupCommands.all,
        StreamInfo.all,
        ClusterCommands.all,
    ])
}
