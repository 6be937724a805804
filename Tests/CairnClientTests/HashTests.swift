import CairnClient
import CairnTestSupport
import Testing

/// Typed hash methods against the real cairnd.
@Suite struct HashTests {
    @Test func hashesReadAndWrite() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.hset("h", [("a", "1"), ("b", "2")]) == 2)
            #expect(try await client.hset("h", "c", "3"))
            #expect(try await client.hset("h", "c", "4") == false)
            #expect(try await client.hget("h", "c")?.text == "4")
            #expect(try await client.hget("h", "nope") == nil)
            #expect(try await client.hmget("h", ["a", "x", "b"]).map { $0?.text } == ["1", nil, "2"])
            #expect(try await client.hgetAll("h").map { "\($0.key.text)=\($0.value.text)" } == ["a=1", "b=2", "c=4"])
            #expect(try await client.hkeys("h").map(\.text) == ["a", "b", "c"])
            #expect(try await client.hvals("h").map(\.text) == ["1", "2", "4"])
            #expect(try await client.hlen("h") == 3)
            #expect(try await client.hexists("h", "a"))
            #expect(try await client.hstrlen("h", "a") == 1)
            #expect(try await client.hsetNX("h", "a", "9") == false)
            #expect(try await client.hincrBy("h", "n", 5) == 5)
            #expect(try await client.hincrByFloat("h", "f", 1.5) == 1.5)
            #expect(try await client.hdel("h", ["a", "b", "zz"]) == 2)
            try await client.set("s", "v")
            await #expect(throws: CairnClientError.self) { try await client.hget("s", "f") }
        }
    }
}
