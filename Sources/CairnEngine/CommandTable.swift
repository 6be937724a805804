/// All commands by lower-case name. The same table dispatches requests and answers `COMMAND`.
public struct CommandTable: Sendable {
    public let commands: [String: Command]
    /// Top-level commands sorted by name (COMMAND, COMMAND DOCS).
    public let sorted: [Command]

    init(_ families: [[Command]]) {
        var commands: [String: Command] = [:]
        for c in families.joined() {
            precondition(commands[c.name] == nil, "duplicate command \(c.name)")
            commands[c.name] = c
        }
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
        KeyCommands.all,
        TransactionCommands.all,
        HashCommands.all,
        ListCommands.all,
        BlockingListCommands.all,
        ServerCommands.all,
        FamilyCommands.all,
        SnapshotCommands.all,
        RangeCommands.all,
        BackupCommands.all,
        ACLCommands.all,
    ])
}
