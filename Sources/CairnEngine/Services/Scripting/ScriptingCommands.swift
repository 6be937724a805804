import RESP

/// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD / EXISTS / FLUSH / KILL:
/// https://redis.io/docs/latest/develop/interact/programmability/eval-intro/
///
/// Scripts run on the server's long-command queue (`.long`), one at a time (see `Scripting`
/// for locks, BUSY and SCRIPT KILL). Every `redis.call` passes the admission step. Where Cairn
/// differs from Redis: a script's writes commit as one write batch when it ends (atomic on
/// disk too; a script killed by SHUTDOWN leaves nothing), a script run by EXEC may only touch
/// the keys it declares, and SCRIPT DEBUG is not supported.
enum ScriptingCommands {
    static let noScript = CommandError("NOSCRIPT", "No matching script. Please use EVAL.")

    static let all: [Command] = [
        evalCommand("eval", bySHA: false, readOnly: false),
        evalCommand("evalsha", bySHA: true, readOnly: false),
        evalCommand("eval_ro", bySHA: false, readOnly: true),
        evalCommand("evalsha_ro", bySHA: true, readOnly: true),
        Command("script", subcommands: scriptSubcommands) { _, _ throws(CommandError) in },
    ] + FunctionCommands.all

    /// The keys of an EVAL-style request: `numkeys` then that many keys (none when malformed).
    static func declaredKeys(_ argv: [[UInt8]]) -> [[UInt8]] {
        guard argv.count >= 3, let n = Bytes.int64(argv[2]), n > 0, n <= argv.count - 3 else { return [] }
        return Array(argv[3..<(3 + Int(n))])
    }

    private static func evalCommand(_ name: String, bySHA: Bool, readOnly: Bool) -> Command {
        Command(name) {
            call, out throws(CommandError) in
            // A digest of the wrong length can match nothing: Redis answers so before numkeys.
            if bySHA && call[1].count != 40 { throw noScript }
            let (keys, args) = try call.scriptKeys()
            let scripting = call.engine.scripting
            if bySHA {
                let sha = Bytes.lowercased(call[1])
                guard scripting.exists(sha) else { throw noScript }
                try scripting.run(call, sha: sha, body: nil, keys: keys, args: args, readOnly: readOnly, out: &out)
            } else {
                let body = call[1]
                try scripting.run(call, sha: Scripting.sha1(body), body: body, keys: keys, args: args, readOnly: readOnly, out: &out)
            }
        }.movingKeys(declaredKeys)
    }

    static let scriptSubcommands: [Command] = [
        Command("script|load") { call, out throws(CommandError) in
            out.bulk(try call.engine.scripting.load(call[2]))
        },
        Command("script|exists") {
            call, out throws(CommandError) in
            out.arrayHeader(call.count - 2)
            for i in 2..<call.count { out.integer(call.engine.scripting.exists(Bytes.lowercased(call[i])) ? 1 : 0) }
        },
        Command("script|flush") {
            call, out throws(CommandError) in
            guard call.count == 2 || (call.count == 3 && (call[2].isKeyword("ASYNC") || call[2].isKeyword("SYNC"))) else {
                throw CommandError("ERR", "SCRIPT FLUSH only support SYNC|ASYNC option")
            }
            call.engine.scripting.flush()
            out.simpleString("OK")
        },
        Command("script|kill") { call, out throws(CommandError) in
            try call.engine.scripting.kill(function: false)
            out.simpleString("OK")
        },
        Command("script|help") { _, out throws(CommandError) in
            let lines = [
                "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "EXISTS <sha1> [<sha1> ...]",
                "    Return information about the existence of the scripts in the script cache.",
                "FLUSH [ASYNC|SYNC]",
                "    Flush the Lua scripts cache.",
                "KILL",
                "    Kill the currently executing Lua script.",
                "LOAD <script>",
                "    Load a script into the scripts cache without executing it.",
                "HELP",
                "    Print this help.",
            ]
            out.arrayHeader(lines.count)
            for l in lines { out.simpleString(l) }
        },
    ]
}
