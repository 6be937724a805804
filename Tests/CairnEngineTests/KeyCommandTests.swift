import CairnEngine
import RESP
import Testing

@Suite struct KeyCommandTests {
    @Test func expiryLifecycle() async throws {
        let h = try EngineHarness()
        #expect(h.run("TTL", "nokey") == .integer(-2))
        h.run("SET", "k", "v")
        #expect(h.run("TTL", "k") == .integer(-1))
        #expect(h.run("EXPIRE", "k", "100") == .integer(1))
        #expect(h.run("TTL", "k") == .integer(100))
        #expect(h.run("EXPIRE", "k", "50", "GT") == .integer(0))
        #expect(h.run("EXPIRE", "k", "50", "LT") == .integer(1))
        #expect(h.run("EXPIRE", "k", "50", "NX") == .integer(0))
        #expect(h.run("EXPIRE", "k", "50", "NX", "XX") == .error("ERR NX and XX, GT or LT options at the same time are not compatible"))
        #expect(h.run("PERSIST", "k") == .integer(1))
        #expect(h.run("TTL", "k") == .integer(-1))
        #expect(h.run("EXPIRE", "missing", "10") == .integer(0))
        h.run("SET", "k", "v", "EX", "100")
        h.run("SET", "k", "v2")
        #expect(h.run("TTL", "k") == .integer(-1), "SET without KEEPTTL clears the TTL")
        h.run("SET", "k", "v", "EX", "100")
        h.run("SET", "k", "v3", "KEEPTTL")
        #expect(h.run("TTL", "k") == .integer(100))
        #expect(h.run("EXPIRE", "k", "-1") == .integer(1))
        #expect(h.run("EXISTS", "k") == .integer(0), "a negative TTL deletes the key")
        h.run("SET", "short", "v", "PX", "30")
        #expect(h.run("GET", "short") == .bulk("v"))
        try await Task.sleep(for: .milliseconds(60))
        #expect(h.run("GET", "short") == .null)
        #expect(h.run("DBSIZE") == .integer(0))
    }

    @Test func renameCopyDelete() throws {
        let h = try EngineHarness()
        h.run("SET", "a", "1", "EX", "100")
        #expect(h.run("RENAME", "a", "b") == .ok)
        #expect(h.run("GET", "b") == .bulk("1"))
        #expect(h.run("TTL", "b") == .integer(100))
        #expect(h.run("RENAME", "a", "c") == .error("ERR no such key"))
        h.run("SET", "c", "3")
        #expect(h.run("RENAMENX", "b", "c") == .integer(0))
        #expect(h.run("COPY", "b", "c") == .integer(0))
        #expect(h.run("COPY", "b", "c", "REPLACE") == .integer(1))
        #expect(h.run("GET", "c") == .bulk("1"))
        #expect(h.run("DEL", "b", "c", "nokey", "b") == .integer(2))
        #expect(h.run("TYPE", "b") == .simpleString("none"))
    }

    @Test func orderedKeysAndScan() throws {
        let h = try EngineHarness()
        for i in 0..<250 { h.run("SET", "key:\(1000 + i)", "v") }
        h.run("SET", "other", "v")
        guard case .array(let keys) = h.run("KEYS", "key:10[0-4]?") else { Issue.record("no array"); return }
        #expect(keys.count == 50)
        #expect(keys.first == .bulk("key:1000"))
        var cursor = "0"
        var seen: [RESPValue] = []
        repeat {
            guard case .array(let reply) = h.run("SCAN", cursor, "MATCH", "key:*", "COUNT", "7"),
                  case .bulkString(let c) = reply[0], case .array(let batch) = reply[1]
            else { Issue.record("bad scan reply"); return }
            cursor = String(decoding: c, as: UTF8.self)
            seen += batch
        } while cursor != "0"
        #expect(seen.count == 250)
        #expect(Set(seen.map { "\($0)" }).count == 250)
        #expect(h.run("SCAN", "99999999") == .error("ERR invalid cursor"))
        #expect(h.run("DBSIZE") == .integer(251))
        #expect(h.run("FLUSHDB") == .ok)
        #expect(h.run("DBSIZE") == .integer(0))
        #expect(h.run("RANDOMKEY") == .null)
    }

    @Test func globMatching() throws {
        let h = try EngineHarness()
        for k in ["hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo"] { h.run("SET", k, "1") }
        func keys(_ p: String) -> Int {
            if case .array(let a) = h.run("KEYS", p) { return a.count }
            return -1
        }
        #expect(keys("h?llo") == 4)
        #expect(keys("h*llo") == 6)
        #expect(keys("h[ae]llo") == 2)
        #expect(keys("h[^e]llo") == 3)
        #expect(keys("h[a-b]llo") == 1)
        #expect(keys("h\\*llo") == 1)
    }
}

@Suite struct ExpiredKeyWriteTests {
    /// Writes that read an expired value first (under the key's lock) must not deadlock on the
    /// lazy delete, and must treat the key as missing.
    @Test func writesOverExpiredKeys() async throws {
        let h = try EngineHarness()
        for key in ["nx", "incr", "append", "getset", "setrange", "expire", "rename"] {
            h.run("SET", key, "5", "PX", "5")
        }
        try await Task.sleep(for: .milliseconds(30))
        #expect(h.run("SET", "nx", "new", "NX") == .ok)
        #expect(h.run("INCR", "incr") == .integer(1))
        #expect(h.run("APPEND", "append", "x") == .integer(1))
        #expect(h.run("GETSET", "getset", "y") == .null)
        #expect(h.run("SETRANGE", "setrange", "1", "z") == .integer(2))
        #expect(h.run("EXPIRE", "expire", "10") == .integer(0))
        #expect(h.run("RENAME", "rename", "other") == .error("ERR no such key"))
        #expect(h.run("TTL", "incr") == .integer(-1))
    }
}
