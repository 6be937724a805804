import RESP

/// COMMAND, COMMAND COUNT / INFO / DOCS / LIST / GETKEYS / GETKEYSANDFLAGS, answered from the
/// command spec the table was built from, in Redis 7.0's reply shapes.
/// https://redis.io/docs/latest/commands/command/
///
/// Where Cairn differs: commands and subcommands come sorted by name (Redis: in hash order),
/// summaries are Cairn's, and COMMAND DOCS gives no `complexity` (a RocksDB-backed command
/// costs differently).
enum CommandCommands {
    static let all: [Command] = [
        Command("command|count") { call, out throws(CommandError) in
            out.integer(call.engine.table.commands.count)
        },
        Command("command|list", handler: list),
        Command("command|info") { call, out throws(CommandError) in
            let table = call.engine.table
            let wanted: [Command?] = call.count == 2 ? table.sorted : (2..<call.count).map { table.named(call[$0]) }
            out.arrayHeader(wanted.count)
            for c in wanted {
                if let c { writeInfo(c, to: &out) } else { out.null() }
            }
        },
        Command("command|docs") { call, out throws(CommandError) in
            let table = call.engine.table
            let wanted = call.count == 2 ? table.sorted : (2..<call.count).compactMap { table.named(call[$0]) }
            out.mapHeader(wanted.count)
            for c in wanted {
                out.bulk(c.name)
                writeDocs(c, to: &out)
            }
        },
        Command("command|getkeys") { call, out throws(CommandError) in
            let (argv, keys) = try keys(call)
            out.arrayHeader(keys.count)
            for k in keys { out.bulk(argv[k.position]) }
        },
        Command("command|getkeysandflags") { call, out throws(CommandError) in
            let (argv, keys) = try keys(call)
            out.arrayHeader(keys.count)
            for k in keys {
                out.arrayHeader(2)
                out.bulk(argv[k.position])
                let flags = k.flags.names
                out.setHeader(flags.count)
                for f in flags { out.simpleString(f) }
            }
        },
        DiagnosticCommands.helpCommand("COMMAND", [
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ]),
    ]

    /// COMMAND (every command's INFO).
    static func everything(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let commands = call.engine.table.sorted
        out.arrayHeader(commands.count)
        for c in commands { writeInfo(c, to: &out) }
    }

    /// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: every command
    /// and subcommand name (`config|get`), each container before its subcommands.
    static func list(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var keep: (Command) -> Bool = { _ in true }
        var i = 2
        while i < call.count {
            guard call[i].isKeyword("FILTERBY"), call.count - 1 - i == 2 else { throw .syntax }
            let value = call[i + 2]
            if call[i + 1].isKeyword("MODULE") {
                keep = { _ in false }  // Cairn loads no modules
            } else if call[i + 1].isKeyword("ACLCAT") {
                let category = ACLCategories.named(Bytes.text(value))
                keep = { c in category.map { c.aclCategories.contains($0) } ?? false }
            } else if call[i + 1].isKeyword("PATTERN") {
                keep = { c in Array(c.name.utf8).withUnsafeBytes { Glob.matches(value, $0, noCase: true) } }
            } else {
                throw .syntax
            }
            i += 3
        }
        var names: [String] = []
        for c in call.engine.table.sorted {
            if keep(c) { names.append(c.name) }
            for s in c.subcommands.values.sorted(by: { $0.name < $1.name }) where keep(s) { names.append(s.name) }
        }
        out.arrayHeader(names.count)
        for n in names { out.bulk(n) }
    }

    /// The request GETKEYS and GETKEYSANDFLAGS ask about, and its keys, with Redis's checks in
    /// Redis's order: a known command (a container's subcommand by the next argument), one
    /// with keys at all, the arity, then this request's keys (none is an error, but for a
    /// command that may name none, as EVAL with `numkeys` 0).
    private static func keys(_ call: Call) throws(CommandError) -> ([[UInt8]], [CommandSpec.FoundKey]) {
        let argv = Array(call.argv.dropFirst(2))
        let table = call.engine.table
        var command = table.command(named: argv[0])
        if let top = command, !top.subcommands.isEmpty, argv.count >= 2 {
            command = top.subcommands[Bytes.lowercased(argv[1])]
        }
        guard let command else { throw CommandError("ERR", "Invalid command specified") }
        let spec = command.spec
        guard spec.hasKeys else { throw CommandError("ERR", "The command has no key arguments") }
        guard command.accepts(argv.count) else { throw CommandError("ERR", "Invalid number of arguments specified for command") }
        let keys = spec.keys(in: argv)
        guard !keys.isEmpty || command.flags.contains(.noMandatoryKeys) else {
            throw CommandError("ERR", "Invalid arguments specified for command")
        }
        return (argv, keys)
    }

    /// One COMMAND INFO entry, the ten fields of Redis 7: name, arity, flags, first key, last
    /// key, step, ACL categories, tips, key specs, subcommands.
    static func writeInfo(_ c: Command, to out: inout RESPWriter) {
        let spec = c.spec
        out.arrayHeader(10)
        out.bulk(c.name)
        out.integer(c.arity)
        let flags = c.flags.names
        out.setHeader(flags.count)
        for f in flags { out.simpleString(f) }
        out.integer(c.firstKey)
        out.integer(c.lastKey)
        out.integer(c.keyStep)
        let categories = c.aclCategories.included
        out.setHeader(categories.count)
        for name in categories { out.simpleString("@" + name) }
        out.setHeader(spec.tips.count)
        for tip in spec.tips { out.bulk(tip) }
        out.setHeader(spec.keySpecs.count)
        for k in spec.keySpecs { writeKeySpec(k, to: &out) }
        let subs = c.subcommands.values.sorted { $0.name < $1.name }
        // A command without subcommands answers an empty set, a container an array (Redis's).
        if subs.isEmpty { out.setHeader(0) } else { out.arrayHeader(subs.count) }
        for s in subs { writeInfo(s, to: &out) }
    }

    private static func writeKeySpec(_ k: CommandSpec.KeySpec, to out: inout RESPWriter) {
        out.mapHeader(k.notes == nil ? 3 : 4)
        if let notes = k.notes {
            out.bulk("notes")
            out.bulk(notes)
        }
        out.bulk("flags")
        let flags = k.flags.names
        out.setHeader(flags.count)
        for f in flags { out.simpleString(f) }
        out.bulk("begin_search")
        out.mapHeader(2)
        out.bulk("type")
        switch k.begin {
        case .index(let i):
            out.bulk("index")
            out.bulk("spec")
            out.mapHeader(1)
            out.bulk("index")
            out.integer(i)
        case .keyword(let word, let from):
            out.bulk("keyword")
            out.bulk("spec")
            out.mapHeader(2)
            out.bulk("keyword")
            out.bulk(word)
            out.bulk("startfrom")
            out.integer(from)
        case .unknown:
            out.bulk("unknown")
            out.bulk("spec")
            out.mapHeader(0)
        }
        out.bulk("find_keys")
        out.mapHeader(2)
        out.bulk("type")
        switch k.find {
        case .range(let last, let step, let limit):
            out.bulk("range")
            out.bulk("spec")
            out.mapHeader(3)
            out.bulk("lastkey")
            out.integer(last)
            out.bulk("keystep")
            out.integer(step)
            out.bulk("limit")
            out.integer(limit)
        case .keynum(let index, let first, let step):
            out.bulk("keynum")
            out.bulk("spec")
            out.mapHeader(3)
            out.bulk("keynumidx")
            out.integer(index)
            out.bulk("firstkey")
            out.integer(first)
            out.bulk("keystep")
            out.integer(step)
        case .unknown:
            out.bulk("unknown")
            out.bulk("spec")
            out.mapHeader(0)
        }
    }

    /// One COMMAND DOCS entry: summary, since, group, then what the spec has of doc flags,
    /// deprecation, history, arguments and subcommands.
    static func writeDocs(_ c: Command, to out: inout RESPWriter) {
        let spec = c.spec
        let subs = c.subcommands.values.sorted { $0.name < $1.name }
        var fields = 3
        if !spec.docFlags.isEmpty { fields += 1 }
        if spec.deprecatedSince != nil { fields += 1 }
        if spec.replacedBy != nil { fields += 1 }
        if !spec.history.isEmpty { fields += 1 }
        if !spec.arguments.isEmpty { fields += 1 }
        if !subs.isEmpty { fields += 1 }
        out.mapHeader(fields)
        out.bulk("summary")
        out.bulk(spec.summary)
        out.bulk("since")
        out.bulk(spec.since)
        out.bulk("group")
        out.bulk(spec.group)
        if !spec.docFlags.isEmpty {
            out.bulk("doc_flags")
            out.setHeader(spec.docFlags.count)
            for f in spec.docFlags { out.simpleString(f) }
        }
        if let d = spec.deprecatedSince {
            out.bulk("deprecated_since")
            out.bulk(d)
        }
        if let r = spec.replacedBy {
            out.bulk("replaced_by")
            out.bulk(r)
        }
        if !spec.history.isEmpty {
            out.bulk("history")
            out.setHeader(spec.history.count)
            for (version, change) in spec.history {
                out.arrayHeader(2)
                out.bulk(version)
                out.bulk(change)
            }
        }
        if !spec.arguments.isEmpty {
            out.bulk("arguments")
            writeArguments(spec.arguments, to: &out)
        }
        if !subs.isEmpty {
            out.bulk("subcommands")
            out.mapHeader(subs.count)
            for s in subs {
                out.bulk(s.name)
                writeDocs(s, to: &out)
            }
        }
    }

    private static func writeArguments(_ arguments: [CommandSpec.Argument], to out: inout RESPWriter) {
        out.arrayHeader(arguments.count)
        for a in arguments {
            // The optional text fields, in Redis's order; each counts once and is written once.
            let texts = [("token", a.token), ("summary", a.summary), ("since", a.since), ("deprecated_since", a.deprecatedSince)]
                .compactMap { name, value in value.map { (name, $0) } }
            let others = [a.keySpecIndex != nil, !a.flags.isEmpty, !a.arguments.isEmpty].filter { $0 }.count
            out.mapHeader(2 + texts.count + others)
            out.bulk("name")
            out.bulk(a.name)
            out.bulk("type")
            out.bulk(a.kind.rawValue)
            if let k = a.keySpecIndex {
                out.bulk("key_spec_index")
                out.integer(k)
            }
            for (name, value) in texts {
                out.bulk(name)
                out.bulk(value)
            }
            if !a.flags.isEmpty {
                out.bulk("flags")
                let names = a.flags.names
                out.setHeader(names.count)
                for n in names { out.simpleString(n) }
            }
            if !a.arguments.isEmpty {
                out.bulk("arguments")
                writeArguments(a.arguments, to: &out)
            }
        }
    }
}
