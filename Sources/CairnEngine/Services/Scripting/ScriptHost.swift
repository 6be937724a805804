import CLua
import Crypto
import Logging
import RESP

/// The `redis` library's functions written in Swift: `call`, `pcall`, `sha1hex`, `log`,
/// `setresp` (the rest are Lua, in `LuaSandbox`).
///
/// Each runs through CLua's trampoline (`cairn_lua_push_host`): it returns how many values it
/// pushed, or -1 after pushing an error object, which the trampoline raises. Nothing here
/// raises a Lua error itself, so no longjmp crosses a Swift frame.
enum ScriptHost {
    static let functions: [(String, cairn_lua_host_fn)] = [
        ("call", { L in ScriptHost.call(L!, raise: true) }),
        ("pcall", { L in ScriptHost.call(L!, raise: false) }),
        ("sha1hex", { L in ScriptHost.sha1hex(L!) }),
        ("log", { L in ScriptHost.log(L!) }),
        ("setresp", { L in ScriptHost.setresp(L!) }),
    ]

    /// The run `LuaState.call` registered for the script now running.
    private static func currentRun(_ L: OpaquePointer) -> ScriptRun? {
        lua_getfield(L, cairn_lua_registryindex(), "cairn.run")
        defer { lua_settop(L, -2) }
        guard let p = lua_touserdata(L, -1) else { return nil }
        return Unmanaged<ScriptRun>.fromOpaque(p).takeUnretainedValue()
    }

    /// Pushes `{err = text}`; returns what the host function returns: raise it, or hand it back.
    private static func fail(_ L: OpaquePointer, _ text: String, raise: Bool = true) -> Int32 {
        LuaReplies.push(.error(text), L, resp: .v2)
        return raise ? -1 : 1
    }

    /// `redis.call` (errors raised) and `redis.pcall` (errors returned as `{err=...}`).
    static func call(_ L: OpaquePointer, raise: Bool) -> Int32 {
        guard let run = currentRun(L) else { return fail(L, "ERR redis.call is only available while a script runs") }
        let argc = lua_gettop(L)
        guard argc > 0 else { return fail(L, "ERR Please specify at least one argument for this redis lib call", raise: raise) }
        var argv: [[UInt8]] = []
        argv.reserveCapacity(Int(argc))
        for i in 1...argc {
            let t = lua_type(L, i)
            guard t == LUA_TSTRING || t == LUA_TNUMBER else {
                return fail(L, "ERR Lua redis lib command arguments must be strings or integers", raise: raise)
            }
            argv.append(LuaState.bytes(L, i))
        }
        let reply = run.execute(argv)
        if case .error(let text) = reply { return fail(L, text, raise: raise) }
        LuaReplies.push(reply, L, resp: run.resp)
        return 1
    }

    /// `redis.sha1hex(s)`: the SHA1 of a string, as 40 lower-case hex digits.
    static func sha1hex(_ L: OpaquePointer) -> Int32 {
        guard lua_gettop(L) == 1 else { return fail(L, "ERR wrong number of arguments") }
        let hex = Scripting.sha1(LuaState.bytes(L, 1))
        LuaState.pushBytes(L, Array(hex.utf8))
        return 1
    }

    /// `redis.log(level, message, ...)`: to the server's log at that level.
    static func log(_ L: OpaquePointer) -> Int32 {
        let argc = lua_gettop(L)
        guard argc >= 2 else { return fail(L, "ERR redis.log() requires two arguments or more.") }
        guard lua_type(L, 1) == LUA_TNUMBER else { return fail(L, "ERR First argument must be a number") }
        let level = Int(LuaReplies.truncated(lua_tonumber(L, 1)))
        guard (0...3).contains(level) else { return fail(L, "ERR Invalid debug level.") }
        var parts: [String] = []
        for i in 2...argc where lua_type(L, i) == LUA_TSTRING || lua_type(L, i) == LUA_TNUMBER {
            parts.append(LuaState.text(L, i))
        }
        let message = Logger.Message(stringLiteral: parts.joined(separator: " "))
        guard let run = currentRun(L) else { return 0 }
        let logger = run.engine.logger
        switch level {
        case 0: logger.debug(message)
        case 1: logger.info(message)
        case 2: logger.notice(message)
        default: logger.warning(message)
        }
        return 0
    }

    /// `redis.setresp(2|3)`: the protocol of the replies the script receives.
    static func setresp(_ L: OpaquePointer) -> Int32 {
        guard lua_gettop(L) == 1 else { return fail(L, "ERR redis.setresp() requires one argument.") }
        let v = lua_type(L, 1) == LUA_TNUMBER ? LuaReplies.truncated(lua_tonumber(L, 1)) : 0
        guard v == 2 || v == 3 else { return fail(L, "ERR RESP version must be 2 or 3.") }
        currentRun(L)?.resp = v == 2 ? .v2 : .v3
        return 0
    }
}
