/// CLUSTER (every subcommand), READONLY, READWRITE and ASKING: Cairn runs no Redis Cluster, so
/// each answers what a standalone redis-server answers, "This instance has cluster support
/// disabled". They exist so clients and ACL rules that name them (`+cluster`, `+readonly`) work
/// as against a standalone Redis.
enum ClusterCommands {
    static let disabled = CommandError("ERR", "This instance has cluster support disabled")

    static let all: [Command] = [
        Command("cluster", subcommands: subcommands) { _, _ throws(CommandError) in throw disabled },
        Command("readonly") { _, _ throws(CommandError) in throw disabled },
        Command("readwrite") { _, _ throws(CommandError) in throw disabled },
        Command("asking") { _, _ throws(CommandError) in throw disabled },
    ]

    /// Every subcommand the spec lists, HELP included (a standalone Redis refuses that too).
    private static let subcommands: [Command] = CommandSpec.named.keys.filter { $0.hasPrefix("cluster|") }.sorted().map { name in
        Command(name) { _, _ throws(CommandError) in throw disabled }
    }
}
