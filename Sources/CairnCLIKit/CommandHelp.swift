public import RESP

/// One command's documentation as `COMMAND DOCS` reports it: Redis's summary, since and group
/// fields, and the arguments after the name as one line of syntax (from the reply's
/// `arguments`, as redis-cli renders them, or a `syntax` field given as such).
public struct CommandDoc: Sendable, Equatable {
    /// Upper-case name; a subcommand is written with a space (`CONFIG GET`).
    public var name: String
    public var summary: String
    public var since: String
    public var group: String
    public var syntax: String
    public var subcommands: [CommandDoc]

    public init(name: String, summary: String = "", since: String = "", group: String = "", syntax: String = "", subcommands: [CommandDoc] = []) {
        self.name = name
        self.summary = summary
        self.since = since
        self.group = group
        self.syntax = syntax
        self.subcommands = subcommands
    }

    /// The entries of a `COMMAND DOCS` reply: a RESP3 map, or its RESP2 form (a flat array of
    /// name, fields, name, fields...). Unknown fields are ignored.
    public static func parse(_ reply: RESPValue) -> [CommandDoc] {
        pairs(reply).map { name, fields in
            var doc = CommandDoc(name: (name.string ?? "").uppercased().replacingBar())
            for (key, value) in pairs(fields) {
                switch key.string?.lowercased() {
                case "summary": doc.summary = value.string ?? ""
                case "since": doc.since = value.string ?? ""
                case "group": doc.group = value.string ?? ""
                case "syntax": doc.syntax = value.string ?? ""
                case "arguments": doc.syntax = syntax(of: value)
                case "subcommands": doc.subcommands = parse(value)
                default: break
                }
            }
            return doc
        }
    }

    /// `key value [NX|XX] [EX seconds|PX milliseconds]` from a COMMAND DOCS `arguments` array.
    static func syntax(of arguments: RESPValue) -> String {
        guard case .array(let list) = arguments else { return "" }
        return list.map(argument).joined(separator: " ")
    }

    private static func argument(_ fields: RESPValue) -> String {
        var name = "", type = "", token: String? = nil
        var flags: [String] = []
        var nested: [RESPValue] = []
        for (key, value) in pairs(fields) {
            switch key.string {
            case "name": name = value.string ?? ""
            case "type": type = value.string ?? ""
            case "token": token = value.string
            case "flags":
                if case .array(let a) = value { flags = a.compactMap(\.string) } else if case .set(let a) = value { flags = a.compactMap(\.string) }
            case "arguments":
                if case .array(let a) = value { nested = a }
            default: break
            }
        }
        let inner = nested.map(argument).joined(separator: type == "oneof" ? "|" : " ")
        let value = type == "pure-token" ? (token ?? name) : type == "oneof" || type == "block" ? inner : name
        var text = value
        if type != "pure-token", let token {
            text = "\(token) \(value)"
            if flags.contains("multiple") { text += flags.contains("multiple_token") ? " [\(token) \(value) ...]" : " [\(value) ...]" }
        } else if flags.contains("multiple") {
            text += " [\(value) ...]"
        }
        return flags.contains("optional") ? "[\(text)]" : text
    }

    private static func pairs(_ value: RESPValue) -> [(RESPValue, RESPValue)] {
        switch value {
        case .map(let m): return m.map { ($0.key, $0.value) }
        case .array(let a): return stride(from: 0, to: a.count - 1, by: 2).map { (a[$0], a[$0 + 1]) }
        default: return []
        }
    }
}

extension String {
    /// `config|get` → `CONFIG GET`.
    fileprivate func replacingBar() -> String {
        String(map { $0 == "|" ? " " : $0 })
    }
}

/// The interactive prompt's `help`, in redis-cli's layout.
public enum CommandHelp {
    /// What `help` alone prints.
    public static let overview = """
        cairn-cli: the command-line client for Cairn.
        Type:
              "help @<group>" for the commands of a group (e.g. help @string, help @server)
              "help <command>" for help on a command (e.g. help SET, help CONFIG GET)
              "quit" or "exit" to leave; up and down arrows recall history
        Column families: CF.USE <name> switches the prompt's family.

        """

    /// Help for the words after `help`: a command (`SET`, `CONFIG GET`), a command with
    /// subcommands (all of them), or `@group`. Nil when nothing matches.
    public static func text(for words: [String], in docs: [CommandDoc]) -> String? {
        guard let first = words.first else { return overview }
        if first.hasPrefix("@") {
            let group = String(first.dropFirst()).lowercased()
            let matching = docs.filter { $0.group.lowercased() == group }.sorted { $0.name < $1.name }
            return matching.isEmpty ? nil : matching.map(entry).joined()
        }
        let wanted = words.joined(separator: " ").uppercased()
        for doc in docs {
            if doc.name == wanted { return doc.subcommands.isEmpty ? entry(doc) : doc.subcommands.map(entry).joined() }
            if let sub = doc.subcommands.first(where: { $0.name == wanted }) { return entry(sub) }
        }
        return nil
    }

    /// One command's entry:
    /// ```
    ///
    ///   SET key value [NX | XX] ...
    ///   summary: Sets the string value of a key...
    ///   since: 1.0.0
    ///   group: string
    /// ```
    public static func entry(_ doc: CommandDoc) -> String {
        let usage = doc.syntax.isEmpty ? doc.name : doc.name + " " + doc.syntax
        return "\n  \(usage)\n  summary: \(doc.summary)\n  since: \(doc.since)\n  group: \(doc.group)\n\n"
    }
}
