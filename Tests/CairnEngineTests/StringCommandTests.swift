import CairnEngine
import RESP
import Testing

@Suite struct StringCommandTests {
    @Test func setGetAndOptions() throws {
        let h = try EngineHarness()
        #expect(h.run("SET", "k", "v") == .ok)
        #expect(h.run("GET", "k") == .bulk("v"))
        #expect(h.run("SET", "k", "w", "NX") == .null)
        #expect(h.run("SET", "k", "w", "XX", "GET") == .bulk("v"))
        #expect(h.run("GET", "k") == .bulk("w"))
        #expect(h.run("SET", "missing", "x", "XX") == .null)
        #expect(h.run("SET", "k", "v", "NX", "XX") == .error("ERR syntax error"))
        #expect(h.run("SET", "k", "v", "EX", "0") == .error("ERR invalid expire time in 'set' command"))
        #expect(h.run("SET", "k", "v", "EX", "x") == .error("ERR value is not an integer or out of range"))
        #expect(h.run("GET") == .error("ERR wrong number of arguments for 'get' command"))
    }

    @Test func binarySafeValues() throws {
        let h = try EngineHarness()
        let value: [UInt8] = [0, 13, 10, 255, 0]
        #expect(h.run([Array("SET".utf8), [0, 1], value]) == .ok)
        #expect(h.run([Array("GET".utf8), [0, 1]]) == .bulkString(value))
    }

    @Test func counters() throws {
        let h = try EngineHarness()
        #expect(h.run("INCR", "n") == .integer(1))
        #expect(h.run("INCRBY", "n", "41") == .integer(42))
        #expect(h.run("DECRBY", "n", "2") == .integer(40))
        #expect(h.run("DECR", "n") == .integer(39))
        h.run("SET", "s", "abc")
        #expect(h.run("INCR", "s") == .error("ERR value is not an integer or out of range"))
        h.run("SET", "big", "9223372036854775807")
        #expect(h.run("INCR", "big") == .error("ERR increment or decrement would overflow"))
        h.run("SET", "lead", "007")
        #expect(h.run("INCR", "lead") == .error("ERR value is not an integer or out of range"))
        h.run("SET", "f", "10.50")
        #expect(h.run("INCRBYFLOAT", "f", "0.1") == .bulk("10.6"))
        // A C long double's digits, as redis-server 7.0 answers (10.6 is not exact there).
        #expect(h.run("INCRBYFLOAT", "f", "5.0e3") == .bulk("5010.60000000000000009"))
        #expect(h.run("INCRBYFLOAT", "s", "1") == .error("ERR value is not a valid float"))
    }

    @Test func appendRangesAndLengths() throws {
        let h = try EngineHarness()
        #expect(h.run("APPEND", "a", "Hello") == .integer(5))
        #expect(h.run("APPEND", "a", " World") == .integer(11))
        #expect(h.run("STRLEN", "a") == .integer(11))
        #expect(h.run("GETRANGE", "a", "0", "3") == .bulk("Hell"))
        #expect(h.run("GETRANGE", "a", "-3", "-1") == .bulk("rld"))
        #expect(h.run("GETRANGE", "a", "10", "100") == .bulk("d"))
        #expect(h.run("SETRANGE", "a", "6", "Redis") == .integer(11))
        #expect(h.run("GET", "a") == .bulk("Hello Redis"))
        #expect(h.run("SETRANGE", "pad", "3", "x") == .integer(4))
        #expect(h.run("GET", "pad") == .bulkString([0, 0, 0, UInt8(ascii: "x")]))
        #expect(h.run("SETRANGE", "a", "-1", "x") == .error("ERR offset is out of range"))
    }

    @Test func multiKey() throws {
        let h = try EngineHarness()
        #expect(h.run("MSET", "a", "1", "b", "2") == .ok)
        #expect(h.run("MGET", "a", "b", "c") == .array([.bulk("1"), .bulk("2"), .null]))
        #expect(h.run("MSETNX", "c", "3", "a", "9") == .integer(0))
        #expect(h.run("GET", "c") == .null)
        #expect(h.run("MSETNX", "c", "3", "d", "4") == .integer(1))
        #expect(h.run("MSET", "a") == .error("ERR wrong number of arguments for 'mset' command"))
        #expect(h.run("GETSET", "a", "x") == .bulk("1"))
        #expect(h.run("GETDEL", "a") == .bulk("x"))
        #expect(h.run("EXISTS", "a") == .integer(0))
    }

    @Test func unknownCommandText() throws {
        let h = try EngineHarness()
        #expect(h.run("FOO", "a", "b") == .error("ERR unknown command 'FOO', with args beginning with: 'a' 'b' "))
    }
}
