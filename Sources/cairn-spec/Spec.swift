import Foundation

/// The command spec as written in `spec/commands/<group>.json`: one object per file, command
/// names to entries; a container's subcommands nested under `subcommands`. The fields and
/// their meaning are in `spec/README.md`.
struct Entry: Decodable {
    var summary: String
    var since: String
    var arity: Int
    var flags: [String]
    var aclCategories: [String]
    var keySpecs: [KeySpec]
    var getKeys: String?
    var tips: [String]
    var history: [[String]]
    var docFlags: [String]
    var deprecatedSince: String?
    var replacedBy: String?
    var arguments: [Argument]
    var cairnFlags: [String]
    var differs: String?
    var client: [ClientMethod]
    var subcommands: [String: Entry]

    static let fields = [
        "summary", "since", "arity", "flags", "acl_categories", "key_specs", "get_keys", "tips", "history", "doc_flags",
        "deprecated_since", "replaced_by", "arguments", "cairn_flags", "differs", "client", "subcommands",
    ]

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        try Key.refuseUnknown(in: c, known: Self.fields)
        summary = try c.decode(String.self, forKey: "summary")
        since = try c.decode(String.self, forKey: "since")
        arity = try c.decode(Int.self, forKey: "arity")
        flags = try c.decodeIfPresent([String].self, forKey: "flags") ?? []
        aclCategories = try c.decodeIfPresent([String].self, forKey: "acl_categories") ?? []
        keySpecs = try c.decodeIfPresent([KeySpec].self, forKey: "key_specs") ?? []
        getKeys = try c.decodeIfPresent(String.self, forKey: "get_keys")
        tips = try c.decodeIfPresent([String].self, forKey: "tips") ?? []
        history = try c.decodeIfPresent([[String]].self, forKey: "history") ?? []
        docFlags = try c.decodeIfPresent([String].self, forKey: "doc_flags") ?? []
        deprecatedSince = try c.decodeIfPresent(String.self, forKey: "deprecated_since")
        replacedBy = try c.decodeIfPresent(String.self, forKey: "replaced_by")
        arguments = try c.decodeIfPresent([Argument].self, forKey: "arguments") ?? []
        cairnFlags = try c.decodeIfPresent([String].self, forKey: "cairn_flags") ?? []
        differs = try c.decodeIfPresent(String.self, forKey: "differs")
        client = try c.decodeIfPresent([ClientMethod].self, forKey: "client") ?? []
        subcommands = try c.decodeIfPresent([String: Entry].self, forKey: "subcommands") ?? [:]
    }
}

struct KeySpec: Decodable {
    enum Begin { case index(Int), keyword(String, startFrom: Int), unknown }
    enum Find { case range(lastKey: Int, step: Int, limit: Int), keynum(index: Int, firstKey: Int, step: Int), unknown }
    var flags: [String]
    var notes: String?
    var begin: Begin
    var find: Find

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        try Key.refuseUnknown(in: c, known: ["flags", "notes", "begin_search", "find_keys"])
        flags = try c.decode([String].self, forKey: "flags")
        notes = try c.decodeIfPresent(String.self, forKey: "notes")
        if (try? c.decode(String.self, forKey: "begin_search")) == "unknown" {
            begin = .unknown
        } else {
            let b = try c.nestedContainer(keyedBy: Key.self, forKey: "begin_search")
            if let index = try b.decodeIfPresent(Int.self, forKey: "index") {
                begin = .index(index)
            } else {
                begin = .keyword(try b.decode(String.self, forKey: "keyword"), startFrom: try b.decode(Int.self, forKey: "startfrom"))
            }
        }
        if (try? c.decode(String.self, forKey: "find_keys")) == "unknown" {
            find = .unknown
        } else {
            let f = try c.nestedContainer(keyedBy: Key.self, forKey: "find_keys")
            if f.contains("range") {
                let r = try f.nestedContainer(keyedBy: Key.self, forKey: "range")
                find = .range(
                    lastKey: try r.decode(Int.self, forKey: "lastkey"), step: try r.decode(Int.self, forKey: "step"),
                    limit: try r.decode(Int.self, forKey: "limit"))
            } else {
                let k = try f.nestedContainer(keyedBy: Key.self, forKey: "keynum")
                find = .keynum(
                    index: try k.decode(Int.self, forKey: "keynumidx"), firstKey: try k.decode(Int.self, forKey: "firstkey"),
                    step: try k.decode(Int.self, forKey: "step"))
            }
        }
    }
}

struct Argument: Decodable {
    var name: String
    var type: String
    var keySpecIndex: Int?
    var token: String?
    var summary: String?
    var since: String?
    var deprecatedSince: String?
    var optional: Bool
    var multiple: Bool
    var multipleToken: Bool
    var arguments: [Argument]

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        try Key.refuseUnknown(in: c, known: [
            "name", "type", "key_spec_index", "token", "summary", "since", "deprecated_since", "optional", "multiple",
            "multiple_token", "arguments",
        ])
        name = try c.decode(String.self, forKey: "name")
        type = try c.decode(String.self, forKey: "type")
        keySpecIndex = try c.decodeIfPresent(Int.self, forKey: "key_spec_index")
        token = try c.decodeIfPresent(String.self, forKey: "token")
        summary = try c.decodeIfPresent(String.self, forKey: "summary")
        since = try c.decodeIfPresent(String.self, forKey: "since")
        deprecatedSince = try c.decodeIfPresent(String.self, forKey: "deprecated_since")
        optional = try c.decodeIfPresent(Bool.self, forKey: "optional") ?? false
        multiple = try c.decodeIfPresent(Bool.self, forKey: "multiple") ?? false
        multipleToken = try c.decodeIfPresent(Bool.self, forKey: "multiple_token") ?? false
        arguments = try c.decodeIfPresent([Argument].self, forKey: "arguments") ?? []
    }
}

/// One typed method of CairnClient for the command: its plain form on ``KeyValueWriter``
/// (sends the command, decodes the reply) and its queued form on ``CommandQueue``, generated
/// together (`ClientOutput`) so that both take the same arguments.
struct ClientMethod: Decodable {
    var method: String
    var generics: String?
    /// The doc comment's lines, without `///`.
    var doc: [String]
    /// `@discardableResult` on the plain form.
    var discardable: Bool
    /// The parameter list, as Swift.
    var parameters: String
    /// The plain form's return type (none: Void).
    var returns: String?
    /// The arguments sent: a list whose upper-case words are the command's literal words,
    /// whose `+ expression` items splice an array in, and whose other items are Swift
    /// expressions; or one Swift expression of type `[any RESPArgument]`.
    var send: Either
    /// How the plain form turns `reply` (the `RESPValue`) into its result: one expression, or
    /// statements ending in a `return`.
    var reply: Either

    enum Either: Decodable {
        case one(String)
        case list([String])
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) { self = .one(s) } else { self = .list(try c.decode([String].self)) }
        }
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        try Key.refuseUnknown(in: c, known: ["method", "generics", "doc", "discardable", "parameters", "returns", "send", "reply"])
        method = try c.decode(String.self, forKey: "method")
        generics = try c.decodeIfPresent(String.self, forKey: "generics")
        doc = try c.decodeIfPresent([String].self, forKey: "doc") ?? []
        discardable = try c.decodeIfPresent(Bool.self, forKey: "discardable") ?? false
        parameters = try c.decodeIfPresent(String.self, forKey: "parameters") ?? ""
        returns = try c.decodeIfPresent(String.self, forKey: "returns")
        send = try c.decode(Either.self, forKey: "send")
        reply = try c.decode(Either.self, forKey: "reply")
    }
}

/// Any JSON key, so each object can refuse the keys it does not know (a misspelt field would
/// otherwise be dropped without a word).
struct Key: CodingKey, ExpressibleByStringLiteral {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(stringLiteral value: String) { stringValue = value }

    static func refuseUnknown(in c: KeyedDecodingContainer<Key>, known: [String]) throws {
        for key in c.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "unknown field '\(key.stringValue)'")
        }
    }
}

/// One command or subcommand with its group and full name (`client|setname`).
struct Command {
    var name: String
    var group: String
    var entry: Entry
    var container: String? { name.contains("|") ? String(name.split(separator: "|")[0]) : nil }
}

enum Spec {
    /// Every command of the spec in `directory`, by file then name, each container followed by
    /// its subcommands.
    static func load(_ directory: URL) throws -> [Command] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
        var out: [Command] = []
        for file in files {
            let group = file.deletingPathExtension().lastPathComponent
            let entries: [String: Entry]
            do {
                entries = try JSONDecoder().decode([String: Entry].self, from: Data(contentsOf: file))
            } catch {
                throw Failure("\(file.lastPathComponent): \(error)")
            }
            for (name, entry) in entries.sorted(by: { $0.key < $1.key }) {
                out.append(Command(name: name, group: group, entry: entry))
                for (sub, subEntry) in entry.subcommands.sorted(by: { $0.key < $1.key }) {
                    out.append(Command(name: "\(name)|\(sub)", group: group, entry: subEntry))
                }
            }
        }
        return out
    }

    static let groups: Set<String> = [
        "bitmap", "cairn", "cluster", "connection", "generic", "geo", "hash", "hyperloglog", "list", "pubsub", "scripting",
        "server", "set", "sorted-set", "stream", "string", "transactions",
    ]
    static let flags: Set<String> = [
        "write", "readonly", "denyoom", "admin", "pubsub", "noscript", "blocking", "loading", "stale", "skip_monitor",
        "skip_slowlog", "asking", "fast", "no_auth", "may_replicate", "no_mandatory_keys", "no_async_loading", "no_multi",
        "allow_busy",
    ]
    static let cairnFlags: Set<String> = ["long", "not_queued"]
    static let categories: [String] = [
        "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog", "geo", "stream",
        "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection", "transaction", "scripting",
    ]
    static let keyFlags: [String] = ["RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"]
    static let argumentTypes: Set<String> = ["string", "integer", "double", "key", "pattern", "unix-time", "pure-token", "oneof", "block"]
    static let keysFallbacks: Set<String> = ["numkeys", "sort", "sort_ro", "migrate", "georadius", "set", "bitfield"]

    /// Every mistake of the spec a reader could not see at a glance, one line each.
    static func problems(_ commands: [Command]) -> [String] {
        var out: [String] = []
        for c in commands {
            let e = c.entry
            func bad(_ what: String) { out.append("\(c.name): \(what)") }
            if !groups.contains(c.group) { bad("unknown group '\(c.group)' (the file's name)") }
            if c.name != c.name.lowercased() { bad("names are lower-case") }
            if c.container != nil && !e.subcommands.isEmpty { bad("a subcommand has no subcommands") }
            for f in e.flags where !flags.contains(f) { bad("unknown flag '\(f)'") }
            for f in e.cairnFlags where !cairnFlags.contains(f) { bad("unknown Cairn flag '\(f)'") }
            for f in e.aclCategories where !categories.contains(f) { bad("unknown ACL category '\(f)'") }
            if e.flags.contains("write") && e.flags.contains("readonly") { bad("both write and readonly") }
            if e.aclCategories.contains("fast") == e.aclCategories.contains("slow") { bad("exactly one of @fast and @slow") }
            if e.flags.contains("fast") != e.aclCategories.contains("fast") { bad("the fast flag and @fast go together") }
            if e.flags.contains("admin") && !e.aclCategories.contains("admin") { bad("an admin command is in @admin") }
            if e.arity == 0 { bad("arity 0") }
            if let g = e.getKeys, !keysFallbacks.contains(g) { bad("unknown get_keys '\(g)'") }
            if e.getKeys == "numkeys" && !e.keySpecs.contains(where: { if case .keynum = $0.find { true } else { false } }) {
                bad("get_keys numkeys needs a keynum key spec")
            }
            if e.history.contains(where: { $0.count != 2 }) { bad("history entries are [version, change]") }
            for f in e.docFlags where !["deprecated", "syscmd"].contains(f) { bad("unknown doc flag '\(f)'") }
            for (i, k) in e.keySpecs.enumerated() {
                for f in k.flags where !keyFlags.contains(f) { bad("key spec \(i): unknown flag '\(f)'") }
            }
            func check(_ args: [Argument], _ path: String) {
                for a in args {
                    let here = path + a.name
                    if !argumentTypes.contains(a.type) { bad("argument \(here): unknown type '\(a.type)'") }
                    if a.type == "key" && a.keySpecIndex == nil { bad("argument \(here): a key names its key_spec_index") }
                    if let k = a.keySpecIndex, k < 0 || k >= e.keySpecs.count { bad("argument \(here): no key spec \(k)") }
                    if a.type == "pure-token" && a.token == nil { bad("argument \(here): a pure-token has a token") }
                    if (a.type == "oneof" || a.type == "block") != !a.arguments.isEmpty {
                        bad("argument \(here): only oneof and block have arguments, and they do")
                    }
                    check(a.arguments, here + ".")
                }
            }
            check(e.arguments, "")
            for m in e.client {
                if case .list(let items) = m.send, items.first.map({ $0.hasPrefix("+ ") }) ?? true {
                    bad("client method \(m.method): send starts with the command's first word")
                }
                if m.doc.isEmpty { bad("client method \(m.method): a doc comment") }
            }
        }
        let names = Set(commands.map(\.name))
        for c in commands { if let container = c.container, !names.contains(container) { out.append("\(c.name): no container") } }
        return out
    }
}

/// Redis's legacy key positions (first, last, step) and `movablekeys`, derived from the key
/// specs as Redis 7 derives them (`populateCommandLegacyRangeSpec`): one index/range spec is
/// the range itself; several give the smallest first key and the largest last key of the
/// consecutive step-1 ranges; anything else makes the keys movable.
func legacyKeys(_ specs: [KeySpec]) -> (first: Int, last: Int, step: Int, movable: Bool) {
    var movable = false
    if specs.isEmpty { return (0, 0, 0, movable) }
    if specs.count == 1, case .index(let pos) = specs[0].begin, case .range(let last, let step, _) = specs[0].find {
        if specs[0].flags.contains("incomplete") { movable = true }
        return (pos, last >= 0 ? pos + last : last, step, movable)
    }
    var first = Int.max
    var last: Int32 = 0
    var previous: Int32 = 0
    for spec in specs {
        guard case .index(let pos) = spec.begin, case .range(let lastKey, let step, _) = spec.find else {
            movable = true
            continue
        }
        if step != 1 || (previous != 0 && Int(previous) != pos - 1) {
            movable = true
            continue
        }
        if spec.flags.contains("incomplete") { movable = true }
        first = min(first, pos)
        let absolute = Int32(lastKey >= 0 ? lastKey + pos : lastKey)
        // Compared unsigned, as Redis does, so a negative (counted from the end) wins.
        last = UInt32(bitPattern: last) >= UInt32(bitPattern: absolute) ? last : absolute
        previous = last
    }
    if first == Int.max { return (0, 0, 0, true) }
    return (first, Int(last), 1, movable)
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
