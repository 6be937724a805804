/// Redis 7.0's ACL command categories (`ACL CAT`), as a bit set. A command's categories are
/// derived once, when the command table is built, from what the table already says of it:
/// its flags (`write`, `readonly`, `admin`, `fast`), its group (`string`, `hash`, `generic`
/// → `keyspace`...), and a few names Redis files under `blocking` or `dangerous`.
/// https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/#command-categories
public struct ACLCategories: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The names in the order `ACL CAT` lists them (Redis 7.0's).
    public static let names = [
        "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog",
        "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
        "transaction", "scripting",
    ]

    public static func named(_ name: String) -> ACLCategories? {
        names.firstIndex(of: name.lowercased()).map { ACLCategories(rawValue: 1 << UInt32($0)) }
    }

    static func bit(_ name: String) -> ACLCategories { named(name)! }

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

    /// The categories of `command`.
    static func of(_ command: Command) -> ACLCategories {
        var c: ACLCategories = []
        let flags = command.flags
        // An admin command (FLUSHALL, CONFIG SET, COMPACT, CLIENT KILL...) is in @admin,
        // @dangerous and @slow or @fast only, not also in @write, @read or its group's
        // category, so no other category grants one. Redis files FLUSHALL under @write and
        // CLIENT KILL under @connection; Cairn keeps every admin command behind @admin.
        if flags.contains(.admin) {
            c.formUnion([bit("admin"), bit("dangerous")])
        } else {
            if flags.contains(.write) { c.insert(bit("write")) }
            if flags.contains(.readonly) { c.insert(bit("read")) }
        }
        c.insert(flags.contains(.fast) ? bit("fast") : bit("slow"))
        // Nor in its group's category: `+@connection` does not grant CLIENT KILL in Cairn.
        if flags.contains(.admin) { return c }
        let top = command.name.split(separator: "|").first.map(String.init) ?? command.name
        switch command.group {
        // SORT is in the categories of the types it sorts, not @keyspace, as in Redis.
        case "generic" where top == "sort" || top == "sort_ro": c.formUnion([bit("set"), bit("sortedset"), bit("list")])
        case "generic": c.insert(bit("keyspace"))
        case "string": c.insert(bit("string"))
        case "bitmap": c.insert(bit("bitmap"))
        case "hyperloglog": c.insert(bit("hyperloglog"))
        case "hash": c.insert(bit("hash"))
        case "list": c.insert(bit("list"))
        case "set": c.insert(bit("set"))
        case "sortedset": c.insert(bit("sortedset"))
        case "geo": c.insert(bit("geo"))
        case "pubsub": c.insert(bit("pubsub"))
        case "connection": c.insert(bit("connection"))
        case "transactions": c.insert(bit("transaction"))
        case "scripting": c.insert(bit("scripting"))
        default: break
        }
        if blockingNames.contains(top) { c.insert(bit("blocking")) }
        if dangerousNames.contains(top) { c.insert(bit("dangerous")) }
        return c
    }

    static let blockingNames: Set<String> = ["blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax", "bzmpop", "wait"]
    /// Commands Redis calls dangerous besides its admin commands (which are all dangerous).
    static let dangerousNames: Set<String> = ["keys", "flushdb", "flushall", "sort", "sort_ro", "migrate", "restore", "info", "role", "debug", "monitor", "shutdown"]

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
