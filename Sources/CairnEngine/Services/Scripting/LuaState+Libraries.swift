import CLua

/// Function libraries in the Lua state: a library's code runs once (`stage`), its registered
/// callbacks wait in the registry's staged table until the library is accepted (`commit`), and
/// FCALL finds them in the libraries table, by library and function name.
extension LuaState {
    static let librariesKey = "cairn.libraries"
    static let stagedKey = "cairn.staged"
    /// How long a library's code may run while it loads (Redis's FUNCTION LOAD timeout).
    static let loadTimeoutMillis: Int64 = 500

    /// Compiles and runs a library's code (the shebang line emptied), keeping the functions it
    /// registered staged under `library`. Redis's errors: compile, run, no functions.
    func stage(_ library: String, code: [UInt8], body: [UInt8]) throws(CommandError) -> FunctionLibrary {
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        budget.pointee.limit = budget.pointee.used + LuaState.memoryPerScript
        budget.pointee.killRequested = 0
        budget.pointee.deadlineMillis = cairn_lua_monotonic_millis() + LuaState.loadTimeoutMillis
        cairn_lua_install_hook(L, LuaState.hookInterval)
        defer {
            budget.pointee.limit = 0
            budget.pointee.deadlineMillis = 0
            cairn_lua_install_hook(L, LuaState.hookInterval)
        }
        let status = body.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { luaL_loadbuffer(L, $0.baseAddress, $0.count, "@user_function") }
        }
        guard status == 0 else {
            throw CommandError("ERR", "Error compiling function: \(LuaState.text(L, -1))")
        }
        loader("begin")
        let ran = lua_pcall(L, 0, 0, 0)
        // Past the deadline the hook fires on every instruction: stop it before more Lua runs.
        budget.pointee.deadlineMillis = 0
        budget.pointee.killRequested = 0
        cairn_lua_install_hook(L, LuaState.hookInterval)
        let failure = ran == 0 ? nil : errorMessage()
        lua_settop(L, base)
        loader("finish")
        if let failure { throw CommandError("ERR", "Error registering functions: \(failure)") }
        // The registrations, in order; their callbacks go to a table of their own.
        var functions: [LibraryFunction] = []
        lua_createtable(L, 0, 0)
        var i: Int32 = 1
        while true {
            lua_rawgeti(L, -2, i)
            guard lua_type(L, -1) == LUA_TTABLE else { break }
            let name = field("name") ?? ""
            let description = field("description")
            var flags: [String] = []
            lua_getfield(L, -1, "flags")
            var k: Int32 = 1
            while true {
                lua_rawgeti(L, -1, k)
                defer { lua_settop(L, -2) }
                guard lua_type(L, -1) == LUA_TSTRING else { break }
                flags.append(LuaState.text(L, -1))
                k += 1
            }
            lua_settop(L, -2)
            functions.append(LibraryFunction(name: name, description: description, flags: flags))
            lua_getfield(L, -1, "callback")
            lua_setfield(L, -3, name)
            lua_settop(L, -2)
            i += 1
        }
        lua_settop(L, -2)
        guard !functions.isEmpty else { throw CommandError("ERR", "No functions registered") }
        lua_getfield(L, cairn_lua_registryindex(), LuaState.stagedKey)
        lua_insert(L, -2)
        lua_setfield(L, -2, library)
        return FunctionLibrary(name: library, code: code, functions: functions)
    }

    /// Calls the prelude's library loader's `step` (`begin`, `finish`); `finish` leaves the
    /// registrations on the stack.
    private func loader(_ step: String) {
        lua_getfield(L, cairn_lua_registryindex(), "cairn.loadlib")
        lua_getfield(L, -1, step)
        lua_remove(L, -2)
        lua_call(L, 0, step == "finish" ? 1 : 0)
    }

    /// A library's load error, from the error object on top: a `{err=...}` table's text, or
    /// Lua's message prefixed with ERR.
    private func errorMessage() -> String {
        if lua_type(L, -1) == LUA_TTABLE {
            lua_pushstring(L, "err")
            lua_rawget(L, -2)
            defer { lua_settop(L, -2) }
            return lua_type(L, -1) == LUA_TSTRING ? LuaState.text(L, -1) : "ERR unknown error"
        }
        return lua_type(L, -1) == LUA_TSTRING ? "ERR \(LuaState.text(L, -1))" : "ERR unknown error"
    }

    /// The string field `name` of the table on top, if it is one.
    private func field(_ name: String) -> String? {
        lua_getfield(L, -1, name)
        defer { lua_settop(L, -2) }
        return lua_type(L, -1) == LUA_TSTRING ? LuaState.text(L, -1) : nil
    }

    /// Makes the staged libraries `names` callable, replacing ones of the same name (every
    /// library, when `replacingAll`); forgets every other staged library.
    func commit(_ names: [String], replacingAll: Bool = false) {
        if replacingAll {
            lua_createtable(L, 0, 0)
            lua_setfield(L, cairn_lua_registryindex(), LuaState.librariesKey)
        }
        lua_getfield(L, cairn_lua_registryindex(), LuaState.librariesKey)
        lua_getfield(L, cairn_lua_registryindex(), LuaState.stagedKey)
        for name in names {
            lua_getfield(L, -1, name)
            lua_setfield(L, -3, name)
        }
        lua_settop(L, -3)
        discardStaged()
    }

    func discardStaged() {
        lua_createtable(L, 0, 0)
        lua_setfield(L, cairn_lua_registryindex(), LuaState.stagedKey)
    }

    func removeLibrary(_ name: String) {
        lua_getfield(L, cairn_lua_registryindex(), LuaState.librariesKey)
        lua_pushnil(L)
        lua_setfield(L, -2, name)
        lua_settop(L, -2)
    }

    func removeAllLibraries() {
        lua_createtable(L, 0, 0)
        lua_setfield(L, cairn_lua_registryindex(), LuaState.librariesKey)
        discardStaged()
        lua_gc(L, LUA_GCCOLLECT, 0)
    }

    /// Pushes the callback of `function` in `library` (nil when there is none).
    func pushFunction(library: String, function: String) {
        lua_getfield(L, cairn_lua_registryindex(), LuaState.librariesKey)
        lua_getfield(L, -1, library)
        lua_remove(L, -2)
        if lua_type(L, -1) == LUA_TTABLE {
            lua_getfield(L, -1, function)
            lua_remove(L, -2)
        }
    }
}
