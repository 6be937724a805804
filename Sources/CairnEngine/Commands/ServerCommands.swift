import RESP
import Rocks
#if canImport(Glibc)
import Glibc
#endif

/// The server family: INFO, CONFIG, COMMAND, TIME, SHUTDOWN, COMPACT.
/// https://redis.io/docs/latest/commands/?group=server
enum ServerCommands {
    /// The Redis version Cairn reports where clients expect one (HELLO, INFO): the command
    /// set Cairn follows.
    static let redisVersion = "7.0.0"
    public static let cairnVersion = "0.1.0"

    static let all: [Command] = [
        Command("info") {
            call, out throws(CommandError) in
            let sections = call.argv.dropFirst().map { Bytes.lowercased($0) }
            out.verbatim(Array(try InfoReport.render(call.engine, session: call.session, sections: sections).utf8))
        },
        Command("time") { _, out throws(CommandError) in
            let us = Clock.microseconds()
            out.arrayHeader(2)
            out.bulk(String(us / 1_000_000))
            out.bulk(String(us % 1_000_000))
        },
        Command("lastsave") { call, out throws(CommandError) in
            out.integer(call.engine.lastSave.load(ordering: .relaxed))
        },
        Command("shutdown") { call, out throws(CommandError) in
            for i in 1..<call.count {
                let a = call[i]
                guard a.isKeyword("NOSAVE") || a.isKeyword("SAVE") || a.isKeyword("NOW") || a.isKeyword("FORCE") else {
                    if a.isKeyword("ABORT") { throw CommandError("ERR", "No shutdown in progress.") }
                    throw .syntax
                }
            }
            call.engine.logger.notice("SHUTDOWN requested by client \(call.session.id) (\(call.session.record.address))")
            call.session.outcome.closeAfterReply = true
            call.engine.scripting.stopForShutdown()
            call.engine.hooks?.requestShutdown()
        },
        Command("compact") { call, out throws(CommandError) in
            guard call.count == 1 || call.count == 3 else { throw .arity(call.name) }
            let family = call.family
            let range = call.count == 3 ? (call[1], call[2]) : nil
            try call.engine.storage("compact") {
                try call.database.compactRange(from: range?.0, to: range?.1, in: family.handle)
                // The whole family: its collections' members too, dropping those of deleted ones.
                if range == nil {
                    let members = MemberKeys.familyRange(family.name)
                    try call.database.compactRange(from: members.lower, to: members.upper, in: family.members)
                }
            }
            out.simpleString("OK")
        }.reaching { argv, _ in
            // Compaction rewrites the files holding the range: a write of it.
            argv.count == 3 ? [KeyRange(lower: argv[1], upper: argv[2] + [0], write: true)] : [.everything(write: true)]
        },
        Command("config", subcommands: ConfigCommands.all) { _, _ throws(CommandError) in },
        Command("command", subcommands: CommandCommands.all, handler: CommandCommands.everything),
    ]
}

/// CONFIG GET / SET / REWRITE / RESETSTAT: https://redis.io/docs/latest/commands/config-get/
enum ConfigCommands {
    static let all: [Command] = [
        Command("config|get") {
            call, out throws(CommandError) in
            let config = call.engine.configuration
            var pairs: [(String, String)] = []
            var seen = Set<String>()
            let everything = call.engine.configTable.options.map { ($0.name, $0.value(in: config)) } + ConfigOption.fixed
            for i in 2..<call.count {
                let pattern = Array(call.text(i).lowercased().utf8)
                for (name, value) in everything where Glob.matches(pattern, Array(name.utf8)) && seen.insert(name).inserted {
                    // The password is never shown, as Redis hides it from unauthenticated eyes anyway.
                    pairs.append((name, value))
                }
            }
            out.mapHeader(pairs.count)
            for (name, value) in pairs {
                out.bulk(name)
                out.bulk(value)
            }
        },
        Command("config|set") {
            call, out throws(CommandError) in
            guard call.count % 2 == 0 else { throw .arity(call.name) }
            var changes: [(ConfigOption, String)] = []
            let table = call.engine.configTable
            for i in stride(from: 2, to: call.count, by: 2) {
                let name = call.text(i)
                if let fixed = ConfigOption.fixed.first(where: { $0.0 == name.lowercased() }) {
                    try ConfigOption.checkFixed(fixed.0, call.text(i + 1))
                    continue
                }
                guard let option = table.named(name) else {
                    throw CommandError("ERR", "Unknown option or number of arguments for CONFIG SET - '\(name)'")
                }
                guard option.mutable else {
                    throw CommandError("ERR", "CONFIG SET failed (possibly related to argument '\(name)') - can't set immutable config")
                }
                guard !changes.contains(where: { $0.0.name == option.name }) else {
                    throw CommandError("ERR", "CONFIG SET failed (possibly related to argument '\(name)') - duplicate parameter")
                }
                changes.append((option, call.text(i + 1)))
            }
            // All or nothing: every value is validated on a copy before any takes effect.
            try call.engine.update { (config: inout Configuration) throws(CommandError) in
                for (option, value) in changes {
                    do throws(ConfigOption.Invalid) { try option.apply(value, to: &config) } catch { throw option.configSetError(error) }
                }
            }
            out.simpleString("OK")
        },
        Command("config|rewrite") { call, out throws(CommandError) in
            guard let path = call.engine.hooks?.configFilePath else {
                throw CommandError("ERR", "The server is running without a config file")
            }
            var effective = call.engine.configuration
            // The users as they are now (ACL SETUSER...), unless an ACL file holds them.
            if effective.aclfile.isEmpty { effective.users = call.engine.guardrails.accessControl.sorted }
            let text = ConfigFile.render(effective, table: call.engine.configTable)
            guard writeFileAtomically(path, text) else {
                throw CommandError("ERR", "Rewriting config file: \(String(cString: strerror(errno)))")
            }
            out.simpleString("OK")
        },
        Command("config|resetstat") { call, out throws(CommandError) in
            call.engine.stats.reset()
            out.simpleString("OK")
        },
        DiagnosticCommands.helpCommand("CONFIG", [
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ]),
    ]

}
