/// One command's facts from the command spec (`spec/commands/*.json`): its name, arity, flags,
/// key specs, ACL categories and documentation. `cairn-spec` turns the JSON into
/// `CommandSpec.generated.swift`; the command table takes each entry's name, arity, flags and
/// key positions from here (`Command.init`), and COMMAND INFO, DOCS, GETKEYS and LIST answer
/// from it. Redis's facts where Redis has the command (`spec/README.md` lists where Cairn
/// differs on purpose); the summaries are Cairn's.
/// https://redis.io/docs/latest/develop/reference/command-tips/ and
/// https://redis.io/docs/latest/develop/reference/key-specs/
struct CommandSpec: Sendable {
    /// Lower-case name; `container|subcommand` for a subcommand.
    let name: String
    /// Redis's command group (`string`, `sorted-set`, `server`...), `cairn` for Cairn's own.
    let group: String
    let since: String
    let summary: String
    /// N: exactly N arguments including the name; -N: at least N.
    let arity: Int
    /// Redis's flags (with `movablekeys` derived from the key specs as Redis derives it) and
    /// Cairn's own behaviour switches (`long`, `noMulti`).
    let flags: Command.Flags
    let aclCategories: ACLCategories
    /// Redis's legacy key positions (first, last, step), derived from the key specs.
    let firstKey: Int, lastKey: Int, keyStep: Int
    let keySpecs: [KeySpec]
    /// How Redis finds the keys when the key specs cannot (an incomplete or variable spec, a
    /// malformed `numkeys`): COMMAND GETKEYS falls back to it.
    let keysFallback: KeysFallback?
    /// Command tips (`nondeterministic_output`, `request_policy:all_shards`...).
    let tips: [String]
    /// (version, change) pairs.
    let history: [(String, String)]
    /// `deprecated`, `syscmd`.
    let docFlags: [String]
    let deprecatedSince: String?
    let replacedBy: String?
    let arguments: [Argument]

    init(
        _ name: String, group: String, since: String, arity: Int, flags: Command.Flags, acl: ACLCategories,
        keys: (Int, Int, Int) = (0, 0, 0), keySpecs: [KeySpec] = [], keysFallback: KeysFallback? = nil, tips: [String] = [],
        history: [(String, String)] = [], docFlags: [String] = [], deprecatedSince: String? = nil, replacedBy: String? = nil,
        summary: String, arguments: [Argument] = []
    ) {
        self.name = name
        self.group = group
        self.since = since
        self.summary = summary
        self.arity = arity
        self.flags = flags
        self.aclCategories = acl
        (firstKey, lastKey, keyStep) = keys
        self.keySpecs = keySpecs
        self.keysFallback = keysFallback
        self.tips = tips
        self.history = history
        self.docFlags = docFlags
        self.deprecatedSince = deprecatedSince
        self.replacedBy = replacedBy
        self.arguments = arguments
    }

    /// The entries by name, subcommands as `container|subcommand`.
    static let named: [String: CommandSpec] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The stand-in for a command the spec lacks: no request fits its arity, and the command
    /// table lists its name (`CommandTable.unspecified`) for the test that pairs the two.
    static func missing(_ name: String) -> CommandSpec {
        CommandSpec(name, group: "cairn", since: "", arity: 0, flags: [], acl: [], summary: "")
    }

    /// One key spec: where a command's keys start (`begin`), how many follow (`find`), and how
    /// the command uses them (`flags`).
    struct KeySpec: Sendable {
        enum Begin: Sendable {
            /// At this argument.
            case index(Int)
            /// After the first argument equal to `keyword` (any case), searched from `startFrom`
            /// (from the end when negative).
            case keyword(String, startFrom: Int)
            case unknown
        }
        enum Find: Sendable {
            /// Up to `lastKey` (relative to the first key; negative: from the end), every `step`;
            /// `limit` > 1 takes 1/limit of the remaining arguments.
            case range(lastKey: Int, step: Int, limit: Int)
            /// The count is the argument at `index` (relative to the begin); the keys start
            /// `firstKey` after it.
            case keynum(index: Int, firstKey: Int, step: Int)
            case unknown
        }

        /// Redis's key-spec flags, in the order COMMAND INFO prints them.
        struct Flags: OptionSet, Sendable {
            let rawValue: UInt16
            static let RO = Flags(rawValue: 1 << 0)
            static let RW = Flags(rawValue: 1 << 1)
            static let OW = Flags(rawValue: 1 << 2)
            static let RM = Flags(rawValue: 1 << 3)
            static let access = Flags(rawValue: 1 << 4)
            static let update = Flags(rawValue: 1 << 5)
            static let insert = Flags(rawValue: 1 << 6)
            static let delete = Flags(rawValue: 1 << 7)
            static let notKey = Flags(rawValue: 1 << 8)
            static let incomplete = Flags(rawValue: 1 << 9)
            static let variableFlags = Flags(rawValue: 1 << 10)

            static let names = ["RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"]
            var names: [String] { Self.names.indices.filter { rawValue & (1 << $0) != 0 }.map { Self.names[$0] } }
        }

        let flags: Flags
        let begin: Begin
        let find: Find
        let notes: String?

        init(_ flags: Flags, _ begin: Begin, _ find: Find, notes: String? = nil) {
            self.flags = flags
            self.begin = begin
            self.find = find
            self.notes = notes
        }
    }

    /// Redis's key finders for what key specs cannot say (`getkeys_proc`).
    enum KeysFallback: Sendable {
        /// `numkeys` then the keys, as the keynum spec says, after a destination key when
        /// the command has one (ZUNIONSTORE...).
        case numkeys
        case sort, sortRO, migrate, georadius
        /// The key at 1, read or written depending on the arguments.
        case set, bitfield
    }

    /// One argument of COMMAND DOCS: a value, a token, or a group (`oneof`, `block`).
    struct Argument: Sendable {
        enum Kind: String, Sendable {
            case string, integer, double, key, pattern, oneof, block
            case unixTime = "unix-time"
            case pureToken = "pure-token"
        }
        struct Flags: OptionSet, Sendable {
            let rawValue: UInt8
            static let optional = Flags(rawValue: 1 << 0)
            static let multiple = Flags(rawValue: 1 << 1)
            static let multipleToken = Flags(rawValue: 1 << 2)

            static let names = ["optional", "multiple", "multiple_token"]
            var names: [String] { Self.names.indices.filter { rawValue & (1 << $0) != 0 }.map { Self.names[$0] } }
        }

        let name: String
        let kind: Kind
        let keySpecIndex: Int?
        let token: String?
        let summary: String?
        let since: String?
        let deprecatedSince: String?
        let flags: Flags
        let arguments: [Argument]

        init(
            _ name: String, _ kind: Kind, keySpec: Int? = nil, token: String? = nil, summary: String? = nil,
            since: String? = nil, deprecatedSince: String? = nil, _ flags: Flags = [], _ arguments: [Argument] = []
        ) {
            self.name = name
            self.kind = kind
            self.keySpecIndex = keySpec
            self.token = token
            self.summary = summary
            self.since = since
            self.deprecatedSince = deprecatedSince
            self.flags = flags
            self.arguments = arguments
        }
    }

    /// The arguments as one line of syntax, for cairn-cli's help: `key value [NX|XX] [GET]`.
    var syntax: String {
        arguments.map { Self.syntax(of: $0) }.joined(separator: " ")
    }

    private static func syntax(of a: Argument) -> String {
        let value: String
        switch a.kind {
        case .pureToken: value = a.token ?? a.name
        case .oneof: value = a.arguments.map { syntax(of: $0) }.joined(separator: "|")
        case .block: value = a.arguments.map { syntax(of: $0) }.joined(separator: " ")
        default: value = a.name
        }
        var text = value
        if a.kind != .pureToken, let token = a.token {
            text = "\(token) \(value)"
            if a.flags.contains(.multiple) { text += a.flags.contains(.multipleToken) ? " [\(token) \(value) ...]" : " [\(value) ...]" }
        } else if a.flags.contains(.multiple) {
            text += " [\(value) ...]"
        }
        return a.flags.contains(.optional) ? "[\(text)]" : text
    }
}
