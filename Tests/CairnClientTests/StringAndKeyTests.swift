import CairnClient
import CairnTestSupport
import Testing

/// Typed methods for strings, keys and expiry against the real cairnd.
@Suite struct StringAndKeyTests {
    @Test func stringsReadAndWrite() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.get("nope") == nil)
            #expect(try await client.set("k", "v"))
            #expect(try await client.get("k") == Array("v".utf8))
            #expect(try await client.getString("k") == "v")
            let binary: [UInt8] = [0, 1, 255, 13, 10]
            try await client.set(binary, binary)
            #expect(try await client.get(binary) == binary)
            #expect(try await client.set("k", "w", condition: .ifNotExists) == false)
            #expect(try await client.set("new", "x", condition: .ifExists) == false)
            #expect(try await client.get("new") == nil)
            #expect(try await client.setAndGet("k", "w") == Array("v".utf8))
            #expect(try await client.setNX("k", "z") == false)
            #expect(try await client.setNX("k2", "z") == true)
            try await client.setEX("ex", seconds: 100, "1")
            #expect((90...100).contains(try await client.ttl("ex")))
            try await client.pSetEX("pex", milliseconds: 100_000, "1")
            #expect((90_000...100_000).contains(try await client.pttl("pex")))
            #expect(try await client.getSet("k", "a")?.text == "w")
            #expect(try await client.getDel("k2")?.text == "z")
            #expect(try await client.exists("k2") == 0)
            #expect(try await client.getEx("k", expiration: .seconds(50))?.text == "a")
            #expect((40...50).contains(try await client.ttl("k")))
            #expect(try await client.getEx("k", expiration: .persist)?.text == "a")
            #expect(try await client.ttl("k") == -1)
            try await client.mset([("m1", "1"), ("m2", "2")])
            let values = try await client.mget(["m1", "nope", "m2"])
            #expect(values.map { $0?.text } == ["1", nil, "2"])
            #expect(try await client.msetNX([("m1", "x"), ("m3", "3")]) == false)
            #expect(try await client.msetNX([("m3", "3"), ("m4", "4")]) == true)
            #expect(try await client.append("s", "hello") == 5)
            #expect(try await client.append("s", " world") == 11)
            #expect(try await client.strlen("s") == 11)
            #expect(try await client.getRange("s", 0, 4).text == "hello")
            #expect(try await client.setRange("s", offset: 6, "WORLD") == 11)
            #expect(try await client.getString("s") == "hello WORLD")
            #expect(try await client.incr("n") == 1)
            #expect(try await client.incrBy("n", 10) == 11)
            #expect(try await client.decr("n") == 10)
            #expect(try await client.decrBy("n", 4) == 6)
            #expect(try await client.incrByFloat("f", 1.5) == 1.5)
            #expect(try await client.incrByFloat("f", 0.25) == 1.75)
            try await client.set("kt", "v", expiration: .milliseconds(100_000))
            try await client.set("kt", "v2", expiration: .keepTTL)
            #expect(try await client.ttl("kt") > 90)
        }
    }

    @Test func typedErrorsKeepServerText() async throws {
        try await withCairnd { client, _ in
            try await client.set("s", "text")
            do {
                try await client.incr("s")
                Issue.record("INCR of text succeeded")
            } catch let error as CairnClientError {
                #expect(error.code == .server)
                #expect(error.prefix == "ERR")
                #expect(error.message == "value is not an integer or out of range")
            }
            do {
                try await client.rename("missing", to: "x")
                Issue.record("RENAME of a missing key succeeded")
            } catch let error as CairnClientError {
                #expect(error.description == "ERR no such key")
            }
        }
    }

    @Test func keys() async throws {
        try await withCairnd { client, _ in
            for k in ["b", "a", "c", "user:1", "user:2"] { try await client.set(k, k) }
            #expect(try await client.exists("a", "b", "zz", "a") == 3)
            #expect(try await client.type("a") == "string")
            #expect(try await client.type("zz") == "none")
            #expect(try await client.keys("user:*").map(\.text) == ["user:1", "user:2"])
            #expect(try await client.dbsize() == 5)
            #expect(try await client.randomKey() != nil)
            var cursor = "0"
            var seen: [String] = []
            repeat {
                let page = try await client.scan(cursor: cursor, match: "*", count: 2)
                seen += page.keys.map(\.text)
                cursor = page.cursor
            } while cursor != "0"
            #expect(seen.sorted() == ["a", "b", "c", "user:1", "user:2"])
            let typed = try await client.scan(type: "string")
            #expect(!typed.keys.isEmpty)
            #expect(try await client.touch("a", "zz") == 1)
            #expect(try await client.delete("a", "zz") == 1)
            #expect(try await client.unlink("b") == 1)
            try await client.rename("c", to: "c2")
            #expect(try await client.getString("c2") == "c")
            #expect(try await client.renameNX("c2", to: "user:1") == false)
            #expect(try await client.copy("c2", to: "c3") == true)
            #expect(try await client.copy("c2", to: "c3") == false)
            #expect(try await client.copy("user:1", to: "c3", replace: true) == true)
            #expect(try await client.getString("c3") == "user:1")
            try await client.flushDB()
            #expect(try await client.dbsize() == 0)
            try await client.set("x", "1")
            try await client.flushAll()
            #expect(try await client.dbsize() == 0)
        }
    }

    @Test func expiry() async throws {
        try await withCairnd { client, _ in
            try await client.set("k", "v")
            #expect(try await client.ttl("k") == -1)
            #expect(try await client.ttl("missing") == -2)
            #expect(try await client.expire("k", seconds: 100))
            #expect(try await client.expire("k", seconds: 200, .nx) == false)
            #expect(try await client.expire("k", seconds: 50, .gt) == false)
            #expect(try await client.expire("k", seconds: 500, .gt))
            #expect(try await client.ttl("k") > 400)
            #expect(try await client.pExpire("k", milliseconds: 100_000, .lt))
            #expect(try await client.pttl("k") <= 100_000)
            let now = Int(try await client.time().seconds)
            #expect(try await client.expireAt("k", unixSeconds: now + 1000))
            #expect(try await client.expireTime("k") == Int64(now + 1000))
            #expect(try await client.pExpireAt("k", unixMilliseconds: (now + 2000) * 1000, .xx))
            #expect(try await client.pExpireTime("k") == Int64((now + 2000) * 1000))
            #expect(try await client.persist("k"))
            #expect(try await client.persist("k") == false)
            #expect(try await client.pExpire("k", milliseconds: 50))
            #expect(try await eventually { try await client.get("k") == nil })
        }
    }
}
