/// Redis 7.0's ACL command categories (`ACL CAT`), as a bit set. A command's categories come
/// from the command spec (`CommandSpec.aclCategories`): Redis's, but that an admin command is
/// only in @admin, @dangerous and @slow or @fast, so that no other category grants one
/// (docs/security.md).
/// https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/#command-categories
public struct ACLCategories: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The names in the order `ACL CAT` lists them (Redis 7.0's), bit 0 first.
    public static let names = [
        "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog",
        "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
        "transaction", "scripting",
    ]

    public static func named(_ name: String) -> ACLCategories? {
        names.firstIndex(of: name.lowercased()).map { ACLCategories(rawValue: 1 << UInt32($0)) }
    }

    static let keyspace = ACLCategories(rawValue: 1 << 0)
    static let read = ACLCategories(rawValue: 1 << 1)
    static let write = ACLCategories(rawValue: 1 << 2)
    static let set = ACLCategories(rawValue: 1 << 3)
    static let sortedset = ACLCategories(rawValue: 1 << 4)
    static let list = ACLCategories(rawValue: 1 << 5)
    static let hash = ACLCategories(rawValue: 1 << 6)
    static let string = ACLCategories(rawValue: 1 << 7)
    static let bitmap = ACLCategories(rawValue: 1 << 8)
    static let hyperloglog = ACLCategories(rawValue: 1 << 9)
    static let geo = ACLCategories(rawValue: 1 << 10)
    static let stream = ACLCategories(rawValue: 1 << 11)
    static let pubsub = ACLCategories(rawValue: 1 << 12)
    static let admin = ACLCategories(rawValue: 1 << 13)
    static let fast = ACLCategories(rawValue: 1 << 14)
    static let slow = ACLCategories(rawValue: 1 << 15)
    static let blocking = ACLCategories(rawValue: 1 << 16)
    static let dangerous = ACLCategories(rawValue: 1 << 17)
    static let connection = ACLCategories(rawValue: 1 << 18)
    static let transaction = ACLCategories(rawValue: 1 << 19)
    static let scripting = ACLCategories(rawValue: 1 << 20)

    /// The names of the categories in `self`, in `names` order (COMMAND INFO prints them so).
    var included: [String] { Self.names.indices.filter { rawValue & (1 << UInt32($0)) != 0 }.map { Self.names[$0] } }

    /// The commands and subcommands in `self`, by full name (`config|get`), sorted.
    func commandNames(in table: CommandTable) -> [String] {
        var out: [String] = []
        for c in table.sorted {
            if c.subcommands.isEmpty {
                if c.aclCategories.contains(self) { out.append(c.name) }
            } else {
                out += c.subcommands.values.filter { $0.aclCategories.contains(self) }.map(\.name).sorted()
            }
        }
        return out
    }
}
