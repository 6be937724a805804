/// All commands by lower-case name. The same table dispatches requests and answers `COMMAND`.
public struct CommandTable: Sendable {
    public let commands: [String: Command]
    /// Top-level commands sorted by name (COMMAND, COMMAND DOCS).
    public let sorted: [Command]
    /// Every command and subcommand name, by `Command.index`.
    let indexedNames: [String]

    init(_ families: [[Command]]) {
        var commands: [String: Command] = [:]
        var names: [String] = []
        // Numbers each command and subcommand, so its metrics are found without hashing its name.
        func indexed(_ c: Command) -> Command {
            var copy = c
            copy.index = names.count
            copy.aclCategories = ACLCategories.of(c)
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
        self.sorted = commands.values.sorted { $0.name < $1.name }
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
    ])
}
