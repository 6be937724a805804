import RESP

/// Redis 7 functions: FCALL, FCALL_RO and FUNCTION LOAD / DELETE / FLUSH / LIST / DUMP /
/// RESTORE / STATS / KILL / HELP.
/// https://redis.io/docs/latest/develop/interact/programmability/functions-intro/
///
/// Functions run exactly as scripts do (`Scripting.execute`: the declared keys' locks, one
/// write batch, BUSY and KILL); libraries persist in the database (Functions.swift). Commands
/// that may wait for a running script (they need the Lua state) run off the workers (`.long`).
enum FunctionCommands {
    static let notFound = CommandError("ERR", "Function not found")

    static let all: [Command] = [
        fcallCommand("fcall", readOnly: false),
        fcallCommand("fcall_ro", readOnly: true),
        Command("function", subcommands: subcommands) { _, _ throws(CommandError) in },
    ]

    private static func fcallCommand(_ name: String, readOnly: Bool) -> Command {
        Command(name) {
            call, out throws(CommandError) in
            let scripting = call.engine.scripting
            guard let (library, function) = try scripting.libraries(call.engine).function(named: call.text(1)) else { throw notFound }
            let (keys, args) = try call.scriptKeys(notInteger: CommandError("ERR", "Bad number of keys provided"))
            if readOnly && !function.noWrites {
                throw CommandError("ERR", "Can not execute a script with write flag using *_ro command.")
            }
            try scripting.execute(
                call, .function(library: library.name, name: function.name), keys: keys, args: args,
                readOnly: function.noWrites, out: &out
            ) { _ throws(CommandError) in }
        }.movingKeys(ScriptingCommands.declaredKeys)
    }

    static let subcommands: [Command] = [
        Command("function|load") { call, out throws(CommandError) in
            var replace = false
            for i in 2..<(call.count - 1) {
                guard call[i].isKeyword("REPLACE") else { throw CommandError("ERR", "Unknown option given: \(call.text(i))") }
                replace = true
            }
            out.bulk(try call.engine.scripting.loadLibrary(call.engine, code: call[call.count - 1], replace: replace))
        },
        Command("function|delete") { call, out throws(CommandError) in
            try call.engine.scripting.deleteLibrary(call.engine, name: call.text(2))
            out.simpleString("OK")
        },
        Command("function|flush") { call, out throws(CommandError) in
            if call.count > 3 {
                throw CommandError("ERR", "unknown subcommand or wrong number of arguments for '\(call.text(1))'. Try FUNCTION HELP.")
            }
            if call.count == 3 && !call[2].isKeyword("ASYNC") && !call[2].isKeyword("SYNC") {
                throw CommandError("ERR", "FUNCTION FLUSH only supports SYNC|ASYNC option")
            }
            try call.engine.scripting.flushLibraries(call.engine)
            out.simpleString("OK")
        },
        Command("function|list") {
            call, out throws(CommandError) in
            var withCode = false
            var pattern: [UInt8]?
            var i = 2
            while i < call.count {
                if call[i].isKeyword("WITHCODE") && !withCode {
                    withCode = true
                } else if call[i].isKeyword("LIBRARYNAME") && pattern == nil {
                    guard i + 1 < call.count else { throw CommandError("ERR", "library name argument was not given") }
                    i += 1
                    pattern = call[i]
                } else {
                    throw CommandError("ERR", "Unknown argument \(call.text(i))")
                }
                i += 1
            }
            let libraries = try call.engine.scripting.libraries(call.engine).sorted.filter { library in
                pattern.map { Glob.matches($0, Array(library.name.utf8)) } ?? true
            }
            out.arrayHeader(libraries.count)
            for library in libraries { write(library, withCode: withCode, to: &out) }
        },
        Command("function|dump") { call, out throws(CommandError) in
            out.bulk(FunctionPayload.encode(try call.engine.scripting.libraries(call.engine).sorted.map(\.code)))
        },
        Command("function|restore") {
            call, out throws(CommandError) in
            if call.count > 4 {
                throw CommandError("ERR", "unknown subcommand or wrong number of arguments for '\(call.text(1))'. Try FUNCTION HELP.")
            }
            var policy = Scripting.RestorePolicy.append
            if call.count == 4 {
                if call[3].isKeyword("FLUSH") {
                    policy = .flush
                } else if call[3].isKeyword("APPEND") {
                    policy = .append
                } else if call[3].isKeyword("REPLACE") {
                    policy = .replace
                } else {
                    throw CommandError("ERR", "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
                }
            }
            try call.engine.scripting.restoreLibraries(call.engine, payload: call[2], policy: policy)
            out.simpleString("OK")
        },
        Command("function|stats") { call, out throws(CommandError) in
            let scripting = call.engine.scripting
            if let target = scripting.runningTarget, !target.isFunction { throw scripting.busyError(function: false) }
            let set = try scripting.libraries(call.engine)
            out.mapHeader(2)
            out.bulk("running_script")
            if let running = scripting.runningFunction {
                out.mapHeader(3)
                out.bulk("name")
                out.bulk(running.name)
                out.bulk("command")
                out.arrayHeader(running.argv.count)
                for a in running.argv { out.bulk(a) }
                out.bulk("duration_ms")
                out.integer(running.milliseconds)
            } else {
                out.null()
            }
            out.bulk("engines")
            out.mapHeader(1)
            out.bulk("LUA")
            out.mapHeader(2)
            out.bulk("libraries_count")
            out.integer(set.byName.count)
            out.bulk("functions_count")
            out.integer(set.functionCount)
        },
        Command("function|kill") { call, out throws(CommandError) in
            try call.engine.scripting.kill(function: true)
            out.simpleString("OK")
        },
        Command("function|help") { _, out throws(CommandError) in
            out.arrayHeader(help.count)
            for l in help { out.simpleString(l) }
        },
    ]

    /// One library as FUNCTION LIST gives it.
    private static func write(_ library: FunctionLibrary, withCode: Bool, to out: inout RESPWriter) {
        out.mapHeader(withCode ? 4 : 3)
        out.bulk("library_name")
        out.bulk(library.name)
        out.bulk("engine")
        out.bulk("LUA")
        out.bulk("functions")
        out.arrayHeader(library.functions.count)
        for f in library.functions {
            out.mapHeader(3)
            out.bulk("name")
            out.bulk(f.name)
            out.bulk("description")
            if let d = f.description { out.bulk(d) } else { out.null() }
            out.bulk("flags")
            out.setHeader(f.flags.count)
            for flag in f.flags { out.bulk(flag) }
        }
        if withCode {
            out.bulk("library_code")
            out.bulk(library.code)
        }
    }

    static let help = [
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ]
}
