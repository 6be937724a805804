import CLua
import RESP

/// Redis's conversions between command replies and Lua values, both ways:
/// https://redis.io/docs/latest/develop/interact/programmability/lua-api/#data-type-conversion
///
/// A reply reaching a script (`push`), by the protocol the script chose with `redis.setresp`:
/// integer → number; bulk string → string; array → table; status → `{ok=...}`; error →
/// `{err=...}`; null → false (RESP2) or nil (RESP3); and under RESP3 map → `{map={...}}`,
/// set → `{set={member=true}}`, double → `{double=n}`, boolean → boolean, big number →
/// `{big_number=...}`, verbatim string → `{verbatim_string={format=..., string=...}}`.
///
/// A script's value reaching the client (`write`): number → integer (truncated); string →
/// bulk; table → array up to the first nil, unless it has a string `err` (error reply), `ok`
/// (status), number `double`, string `big_number`, table `verbatim_string`, `map` or `set`;
/// true → 1 and false → null while the script speaks RESP2, booleans under RESP3; anything
/// else → null. RESP3-only types degrade for a RESP2 client as Redis degrades them.
enum LuaReplies {
    // MARK: reply → Lua

    /// Pushes `value` as a script sees it.
    static func push(_ value: RESPValue, _ L: OpaquePointer, resp: RESPVersion) {
        _ = lua_checkstack(L, 4)
        switch value {
        case .integer(let n): lua_pushnumber(L, Double(n))
        case .bulkString(let b): LuaState.pushBytes(L, b)
        case .simpleString(let s): table(L, field: "ok") { LuaState.pushBytes(L, Array(s.utf8)) }
        case .error(let s): table(L, field: "err") { LuaState.pushBytes(L, Array(s.utf8)) }
        case .null:
            if resp == .v3 { lua_pushnil(L) } else { lua_pushboolean(L, 0) }
        case .array(let items), .push(let items):
            lua_createtable(L, Int32(clamping: items.count), 0)
            for (i, item) in items.enumerated() {
                push(item, L, resp: resp)
                lua_rawseti(L, -2, Int32(clamping: i + 1))
            }
        case .map(let pairs):
            table(L, field: "map") {
                lua_createtable(L, 0, Int32(clamping: pairs.count))
                for (k, v) in pairs {
                    push(k, L, resp: resp)
                    push(v, L, resp: resp)
                    lua_rawset(L, -3)
                }
            }
        case .set(let members):
            table(L, field: "set") {
                lua_createtable(L, 0, Int32(clamping: members.count))
                for m in members {
                    push(m, L, resp: resp)
                    lua_pushboolean(L, 1)
                    lua_rawset(L, -3)
                }
            }
        case .double(let d): table(L, field: "double") { lua_pushnumber(L, d) }
        case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
        case .bigNumber(let s): table(L, field: "big_number") { LuaState.pushBytes(L, Array(s.utf8)) }
        case .verbatimString(let format, let text):
            table(L, field: "verbatim_string") {
                lua_createtable(L, 0, 2)
                LuaState.pushBytes(L, Array(format.utf8))
                lua_setfield(L, -2, "format")
                LuaState.pushBytes(L, text)
                lua_setfield(L, -2, "string")
            }
        }
    }

    /// Pushes `{field = <what fill pushes>}`.
    private static func table(_ L: OpaquePointer, field: String, _ fill: () -> Void) {
        lua_createtable(L, 0, 1)
        fill()
        lua_setfield(L, -2, field)
    }

    // MARK: Lua → reply

    /// Writes the value on top of the stack as a reply, and pops it. `scriptResp` is what the
    /// script chose with `redis.setresp` (it decides how booleans go out).
    static func write(_ L: OpaquePointer, to out: inout RESPWriter, scriptResp: RESPVersion) {
        defer { lua_settop(L, -2) }
        switch lua_type(L, -1) {
        case LUA_TSTRING:
            var length = 0
            let p = lua_tolstring(L, -1, &length)
            out.bulk(UnsafeRawBufferPointer(start: p, count: length))
        case LUA_TNUMBER:
            out.integer(truncated(lua_tonumber(L, -1)))
        case LUA_TBOOLEAN:
            let b = lua_toboolean(L, -1) != 0
            if scriptResp == .v2 {
                if b { out.integer(1) } else { out.null() }
            } else {
                out.boolean(b)
            }
        case LUA_TTABLE:
            guard lua_checkstack(L, 4) != 0 else {
                out.error("ERR reached lua stack limit")
                return
            }
            writeTable(L, to: &out, scriptResp: scriptResp)
        default:
            out.null()
        }
    }

    /// A Lua number as Redis's `(long long)` cast takes it, without trapping on NaN or range.
    static func truncated(_ d: Double) -> Int64 {
        guard d.isFinite else { return d.isNaN ? 0 : (d > 0 ? .max : .min) }
        if d >= 9.223372036854775807e18 { return .max }
        if d <= -9.223372036854775808e18 { return .min }
        return Int64(d.rounded(.towardZero))
    }

    private static func writeTable(_ L: OpaquePointer, to out: inout RESPWriter, scriptResp: RESPVersion) {
        if let err = stringField(L, "err") {
            out.error(err)
            return
        }
        if let ok = stringField(L, "ok") {
            out.simpleString(ok)
            return
        }
        if rawField(L, "double", LUA_TNUMBER) {
            let d = lua_tonumber(L, -1)
            lua_settop(L, -2)
            out.double(d)
            return
        }
        if let digits = stringField(L, "big_number") {
            out.bigNumber(String(digits.map { $0 == "\r" || $0 == "\n" ? " " : $0 }))
            return
        }
        if rawField(L, "verbatim_string", LUA_TTABLE) {
            let format = stringField(L, "format") ?? "txt"
            var text: [UInt8] = []
            if rawField(L, "string", LUA_TSTRING) {
                text = LuaState.bytes(L, -1)
                lua_settop(L, -2)
            }
            lua_settop(L, -2)
            out.verbatim(text, format: format)
            return
        }
        if rawField(L, "map", LUA_TTABLE) {
            out.mapHeader(pairCount(L))
            lua_pushnil(L)
            while lua_next(L, -2) != 0 {
                lua_pushvalue(L, -2)
                write(L, to: &out, scriptResp: scriptResp)  // the key's copy
                write(L, to: &out, scriptResp: scriptResp)  // the value
            }
            lua_settop(L, -2)
            return
        }
        if rawField(L, "set", LUA_TTABLE) {
            out.setHeader(pairCount(L))
            lua_pushnil(L)
            while lua_next(L, -2) != 0 {
                lua_pushvalue(L, -2)
                write(L, to: &out, scriptResp: scriptResp)
                lua_settop(L, -2)  // the value
            }
            lua_settop(L, -2)
            return
        }
        var count: Int32 = 0
        while true {
            lua_rawgeti(L, -1, count + 1)
            defer { lua_settop(L, -2) }
            if lua_type(L, -1) == LUA_TNIL { break }
            count += 1
        }
        out.arrayHeader(Int(count))
        var i: Int32 = 1
        while i <= count {
            lua_rawgeti(L, -1, i)
            write(L, to: &out, scriptResp: scriptResp)
            i += 1
        }
    }

    /// The string at `t[name]` (raw) of the table on top, if it is a string.
    private static func stringField(_ L: OpaquePointer, _ name: String) -> String? {
        lua_pushstring(L, name)
        lua_rawget(L, -2)
        defer { lua_settop(L, -2) }
        return lua_type(L, -1) == LUA_TSTRING ? LuaState.text(L, -1) : nil
    }

    /// Pushes `t[name]` (raw: no metamethod may run outside a protected call) of the table on
    /// top when it has `type`; pushes nothing otherwise.
    static func rawField(_ L: OpaquePointer, _ name: String, _ type: Int32) -> Bool {
        lua_pushstring(L, name)
        lua_rawget(L, -2)
        if lua_type(L, -1) == type { return true }
        lua_settop(L, -2)
        return false
    }

    private static func pairCount(_ L: OpaquePointer) -> Int {
        var n = 0
        lua_pushnil(L)
        while lua_next(L, -2) != 0 {
            n += 1
            lua_settop(L, -2)
        }
        return n
    }
}
