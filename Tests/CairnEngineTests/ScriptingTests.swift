import CairnEngine
import RESP
import Testing

/// Redis's Lua ↔ reply conversions, in-process, through EVAL on a RESP2 and a RESP3 session:
/// https://redis.io/docs/latest/develop/interact/programmability/lua-api/#data-type-conversion
@Suite struct ScriptingTests {
    func eval(_ h: EngineHarness, _ script: String, resp: RESPVersion, _ rest: String...) -> RESPValue {
        h.session.protocolVersion = resp
        return h.run(["EVAL", script, "0"].map { Array($0.utf8) } + rest.map { Array($0.utf8) })
    }

    @Test func luaToRESP2() throws {
        let h = try EngineHarness()
        #expect(eval(h, "return 3.99", resp: .v2) == .integer(3))
        #expect(eval(h, "return -3.99", resp: .v2) == .integer(-3))
        #expect(eval(h, "return 1e300", resp: .v2) == .integer(.max), "out of range saturates instead of trapping")
        #expect(eval(h, "return 0/0", resp: .v2) == .integer(0))
        #expect(eval(h, "return 'a\\0b'", resp: .v2) == .bulkString([97, 0, 98]), "strings are binary-safe")
        #expect(eval(h, "return true", resp: .v2) == .integer(1))
        #expect(eval(h, "return false", resp: .v2) == .null)
        #expect(eval(h, "return nil", resp: .v2) == .null)
        #expect(eval(h, "return {1, 'x', {2}, nil, 3}", resp: .v2) == .array([.integer(1), .bulk("x"), .array([.integer(2)])]))
        #expect(eval(h, "return {}", resp: .v2) == .array([]))
        #expect(eval(h, "return {ok='fine'}", resp: .v2) == .simpleString("fine"))
        #expect(eval(h, "return {err='CODE text'}", resp: .v2) == .error("CODE text"))
        #expect(eval(h, "return {double=2.5}", resp: .v2) == .bulk("2.5"))
        #expect(eval(h, "return {big_number='123456789012345678901234567890'}", resp: .v2) == .bulk("123456789012345678901234567890"))
        #expect(eval(h, "return {verbatim_string={format='txt', string='hi'}}", resp: .v2) == .bulk("hi"))
        #expect(eval(h, "return {map={a=1}}", resp: .v2) == .array([.bulk("a"), .integer(1)]))
        #expect(eval(h, "return {set={a=true}}", resp: .v2) == .array([.bulk("a")]))
        #expect(eval(h, "redis.setresp(3) return true", resp: .v2) == .integer(1))
        #expect(eval(h, "redis.setresp(3) return false", resp: .v2) == .integer(0))
    }

    @Test func luaToRESP3() throws {
        let h = try EngineHarness()
        #expect(eval(h, "return false", resp: .v3) == .null, "false is null while the script speaks RESP2")
        #expect(eval(h, "return true", resp: .v3) == .integer(1))
        #expect(eval(h, "redis.setresp(3) return true", resp: .v3) == .boolean(true))
        #expect(eval(h, "redis.setresp(3) return false", resp: .v3) == .boolean(false))
        #expect(eval(h, "return {double=2.5}", resp: .v3) == .double(2.5))
        #expect(eval(h, "return {big_number='12345678901234567890'}", resp: .v3) == .bigNumber("12345678901234567890"))
        #expect(eval(h, "return {verbatim_string={format='txt', string='hi'}}", resp: .v3) == .verbatimString(format: "txt", text: Array("hi".utf8)))
        #expect(eval(h, "return {map={a={1,2}}}", resp: .v3) == .map([(key: .bulk("a"), value: .array([.integer(1), .integer(2)]))]))
        #expect(eval(h, "return {set={x=true}}", resp: .v3) == .set([.bulk("x")]))
    }

    @Test func repliesToLua() throws {
        let h = try EngineHarness()
        h.run("SET", "s", "v")
        // Each reply type as the script sees it, described back by the script.
        let describe = """
            local function d(v)
              if type(v) ~= 'table' then return type(v) .. ':' .. tostring(v) end
              local parts = {}
              for k, x in pairs(v) do parts[#parts + 1] = tostring(k) .. '=' .. d(x) end
              table.sort(parts)
              return '{' .. table.concat(parts, ',') .. '}'
            end
            """
        func seen(_ call: String, resp: Int = 2) -> RESPValue {
            eval(h, describe + "\nredis.setresp(\(resp)) return d(\(call))", resp: .v2)
        }
        #expect(seen("redis.call('get', 's')") == .bulk("string:v"))
        #expect(seen("redis.call('get', 'none')") == .bulk("boolean:false"))
        #expect(seen("redis.call('get', 'none')", resp: 3) == .bulk("nil:nil"))
        #expect(seen("redis.call('set', 'k', 'v')") == .bulk("{ok=string:OK}"))
        #expect(seen("redis.call('strlen', 's')") == .bulk("number:1"))
        #expect(seen("redis.pcall('incr', 's')") == .bulk("{err=string:ERR value is not an integer or out of range}"))
        #expect(seen("redis.call('mget', 's', 'none')") == .bulk("{1=string:v,2=boolean:false}"))
        #expect(seen("redis.call('mget', 's', 'none')", resp: 3) == .bulk("{1=string:v}"))
    }

    @Test func writesCommitTogetherAndReadsSeeThem() throws {
        let h = try EngineHarness()
        let reply = h.run("EVAL", "redis.call('set', KEYS[1], '1') redis.call('incr', KEYS[1]) return redis.call('get', KEYS[1])", "1", "k")
        #expect(reply == .bulk("2"))
        #expect(h.run("GET", "k") == .bulk("2"))
        #expect(h.run("EVAL", "return redis.call('get', 'undeclared')", "0") == .null, "an undeclared key works (every stripe)")
    }

    @Test func busyOnlyForOthersPastTheThreshold() throws {
        let h = try EngineHarness { $0.busyReplyThreshold = 1 }
        // The script's own calls are never BUSY, however long it runs.
        #expect(h.run("EVAL", "local t = redis.call('time') local i = 0 while i < 3000000 do i = i + 1 end return redis.call('get', 'x')", "0") == .null)
        #expect(h.run("PING") == .simpleString("PONG"), "nothing is BUSY once the script ended")
    }
}
