import CLua
import RESP

/// One Lua 5.1 interpreter with Redis's scripting environment (`LuaSandbox`), the scripts
/// compiled in it (by SHA1), and a memory budget per script run.
///
/// Not thread-safe: `Scripting` keeps the one state under its lock and runs one script at a
/// time. `budget` is shared with C (the allocator and the kill hook in CLua's shim.h); only its
/// `killRequested` is written from another thread (SCRIPT KILL), which the hook polls.
final class LuaState {
    let L: OpaquePointer
    let budget: UnsafeMutablePointer<cairn_lua_budget>
    /// Instructions between two looks at the kill flag (Redis checks as often).
    static let hookInterval: Int32 = 100_000
    /// Bytes one script run may add to the state's heap; past it the script fails with Lua's
    /// "not enough memory".
    static let memoryPerScript = 256 << 20
    private var runsSinceCollect = 0
    /// Heap growth in one run after which the garbage is collected at once.
    static let collectAfterGrowth = 16 << 20

    init() {
        budget = .allocate(capacity: 1)
        budget.initialize(to: cairn_lua_budget())
        L = cairn_lua_newstate(budget)
        cairn_lua_open_standard(L)
        let prelude = Array(LuaSandbox.prelude.utf8)
        let loaded = prelude.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { luaL_loadbuffer(L, $0.baseAddress, $0.count, "=cairn") }
        }
        precondition(loaded == 0, "the scripting prelude does not compile: \(LuaState.text(L, -1))")
        lua_createtable(L, 0, 5)
        for (name, function) in ScriptHost.functions {
            cairn_lua_push_host(L, function)
            lua_setfield(L, -2, name)
        }
        let ran = lua_pcall(L, 1, 3, 0)
        precondition(ran == 0, "the scripting prelude failed: \(LuaState.text(L, -1))")
        lua_setfield(L, cairn_lua_registryindex(), "cairn.loadlib")
        lua_setfield(L, cairn_lua_registryindex(), "cairn.globals")
        lua_setfield(L, cairn_lua_registryindex(), "cairn.errh")
        lua_createtable(L, 0, 0)
        lua_setfield(L, cairn_lua_registryindex(), "cairn.scripts")
        lua_createtable(L, 0, 0)
        lua_setfield(L, cairn_lua_registryindex(), LuaState.librariesKey)
        lua_createtable(L, 0, 0)
        lua_setfield(L, cairn_lua_registryindex(), LuaState.stagedKey)
        cairn_lua_install_hook(L, LuaState.hookInterval)
    }

    deinit {
        lua_close(L)
        budget.deallocate()
    }

    /// The bytes of the string (or number) at `index`.
    static func bytes(_ L: OpaquePointer, _ index: Int32) -> [UInt8] {
        var length = 0
        guard let p = lua_tolstring(L, index, &length) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: length))
    }

    static func text(_ L: OpaquePointer, _ index: Int32) -> String {
        String(decoding: bytes(L, index), as: UTF8.self)
    }

    static func pushBytes(_ L: OpaquePointer, _ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return lua_pushstring(L, "") }
        bytes.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { lua_pushlstring(L, $0.baseAddress, $0.count) }
        }
    }

    // MARK: compiled scripts

    func has(_ sha: String) -> Bool {
        lua_getfield(L, cairn_lua_registryindex(), "cairn.scripts")
        lua_getfield(L, -1, sha)
        defer { lua_settop(L, -3) }
        return lua_type(L, -1) == LUA_TFUNCTION
    }

    /// Compiles `body` as Redis does (the body of a function, chunk `@user_script`, so errors
    /// name `user_script:LINE`) and keeps it under `sha`. Throws Redis's compile error.
    func compile(_ sha: String, _ body: [UInt8]) throws(CommandError) {
        if has(sha) { return }
        let source = Array("return function() ".utf8) + body + Array("\nend".utf8)
        budget.pointee.limit = budget.pointee.used + LuaState.memoryPerScript
        defer { budget.pointee.limit = 0 }
        let status = source.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { luaL_loadbuffer(L, $0.baseAddress, $0.count, "@user_script") }
        }
        guard status == 0, lua_pcall(L, 0, 1, 0) == 0 else {
            let message = LuaState.text(L, -1)
            lua_settop(L, -2)
            throw CommandError("ERR", "Error compiling script (new function): \(message)")
        }
        lua_getfield(L, cairn_lua_registryindex(), "cairn.scripts")
        lua_insert(L, -2)
        lua_setfield(L, -2, sha)
        lua_settop(L, -2)
    }

    /// Forgets every compiled script (SCRIPT FLUSH) and collects the garbage.
    func flush() {
        lua_createtable(L, 0, 0)
        lua_setfield(L, cairn_lua_registryindex(), "cairn.scripts")
        lua_gc(L, LUA_GCCOLLECT, 0)
    }

    // MARK: running

    /// Runs the compiled script (with KEYS and ARGV) or the library function (with keys and
    /// arguments as its parameters) `run` names, and writes its reply (or its error, in Redis
    /// 7's form: `<error> script: <sha or function>, on @user_script:<line>.`) to `out`.
    func call(_ run: ScriptRun, keys: [[UInt8]], args: [[UInt8]], out: inout RESPWriter) {
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        lua_pushlightuserdata(L, Unmanaged.passUnretained(run).toOpaque())
        lua_setfield(L, cairn_lua_registryindex(), "cairn.run")
        defer {
            lua_pushnil(L)
            lua_setfield(L, cairn_lua_registryindex(), "cairn.run")
        }
        lua_getfield(L, cairn_lua_registryindex(), "cairn.errh")
        let argumentCount: Int32
        switch run.target {
        case .script(let sha):
            setGlobalArray("KEYS", keys)
            setGlobalArray("ARGV", args)
            lua_getfield(L, cairn_lua_registryindex(), "cairn.scripts")
            lua_getfield(L, -1, sha)
            lua_remove(L, -2)
            guard lua_type(L, -1) == LUA_TFUNCTION else {
                out.error(ScriptingCommands.noScript.wire)
                return
            }
            argumentCount = 0
        case .function(let library, let name):
            // A function gets its keys and arguments as parameters; KEYS and ARGV are not
            // globals for it (as in Redis).
            setGlobalArray("KEYS", nil)
            setGlobalArray("ARGV", nil)
            pushFunction(library: library, function: name)
            guard lua_type(L, -1) == LUA_TFUNCTION else {
                out.error(FunctionCommands.notFound.wire)
                return
            }
            _ = lua_checkstack(L, 4)
            pushArray(keys)
            pushArray(args)
            argumentCount = 2
        }
        budget.pointee.overBudget = 0
        // A kill leaves the hook firing on every instruction; back to the usual interval.
        cairn_lua_install_hook(L, LuaState.hookInterval)
        let usedBefore = budget.pointee.used
        budget.pointee.limit = usedBefore + LuaState.memoryPerScript
        let status = lua_pcall(L, argumentCount, 1, base + 1)
        budget.pointee.limit = 0
        // A kill (or a stop for a retry) ends with this run: the next starts clean.
        budget.pointee.killRequested = 0
        cairn_lua_install_hook(L, LuaState.hookInterval)
        if status == 0 {
            LuaReplies.write(L, to: &out, scriptResp: run.resp)
        } else {
            out.error(errorText(status: status, name: run.target.errorName))
        }
        runsSinceCollect += 1
        // A run that grew the heap a lot (up to its whole budget) leaves mostly garbage:
        // collected now, the server's periodic trim gives it back to the system, instead of
        // the process keeping hundreds of megabytes until the 50th run.
        if runsSinceCollect >= 50 || budget.pointee.used > usedBefore + LuaState.collectAfterGrowth {
            runsSinceCollect = 0
            lua_gc(L, LUA_GCCOLLECT, 0)
        }
    }

    /// A failed run's reply text, from the error object on top of the stack.
    private func errorText(status: Int32, name sha: String) -> String {
        guard lua_type(L, -1) == LUA_TTABLE else {
            let message = status == LUA_ERRMEM ? "not enough memory" : LuaState.text(L, -1)
            return "ERR Error running script \(sha), \(message)"
        }
        // Raw reads: a metamethod of the script's error table must not run unprotected.
        lua_pushstring(L, "err")
        lua_rawget(L, -2)
        let err = lua_type(L, -1) == LUA_TSTRING ? LuaState.text(L, -1) : "ERR unknown error"
        lua_pushstring(L, "source")
        lua_rawget(L, -3)
        let source = lua_type(L, -1) == LUA_TSTRING ? LuaState.text(L, -1) : nil
        lua_pushstring(L, "line")
        lua_rawget(L, -4)
        let line = lua_type(L, -1) == LUA_TNUMBER ? Int(LuaReplies.truncated(lua_tonumber(L, -1))) : nil
        lua_settop(L, -4)
        guard let source, let line else { return err }
        return "\(err) script: \(sha), on \(source):\(line)."
    }

    /// Sets a global (in the real globals table behind the sandbox) to an array of strings,
    /// or removes it (nil).
    private func setGlobalArray(_ name: String, _ items: [[UInt8]]?) {
        lua_getfield(L, cairn_lua_registryindex(), "cairn.globals")
        if let items { pushArray(items) } else { lua_pushnil(L) }
        lua_setfield(L, -2, name)
        lua_settop(L, -2)
    }

    private func pushArray(_ items: [[UInt8]]) {
        lua_createtable(L, Int32(clamping: items.count), 0)
        for (i, item) in items.enumerated() {
            LuaState.pushBytes(L, item)
            lua_rawseti(L, -2, Int32(i + 1))
        }
    }
}
