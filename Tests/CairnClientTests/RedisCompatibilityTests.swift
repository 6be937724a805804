import CairnClient
import CairnTestSupport
import RESP
import Testing

/// The same client against `redis-server`, for the commands both servers have. Runs when
/// redis-server is installed (scripts/test installs it); each test starts its own on a free port
/// with persistence off and stops it at the end.
@Suite(.enabled(if: RedisProcess.binary != nil, "redis-server is not installed"))
struct RedisCompatibilityTests {
    func withRedis(_ body: (CairnClient) async throws -> Void) async throws {
        guard let redis = try RedisProcess.start() else { return }
        let client = CairnClient(port: redis.port)
        defer {
            client.close()
            redis.terminate()
        }
        try await body(client)
    }

    @Test func stringsKeysExpiry() async throws {
        try await withRedis { client in
            #expect(try await client.ping() == "PONG")
            #expect(try await client.set("k", [0, 255] as [UInt8]))
            #expect(try await client.get("k") == [0, 255])
            #expect(try await client.set("k", "x", condition: .ifNotExists) == false)
            #expect(try await client.setAndGet("k", "v") == [0, 255])
            try await client.mset([("a", "1"), ("b", "2")])
            #expect(try await client.mget(["a", "nope", "b"]).map { $0?.text } == ["1", nil, "2"])
            #expect(try await client.incrBy("a", 41) == 42)
            #expect(try await client.incrByFloat("f", 2.5) == 2.5)
            #expect(try await client.append("s", "ab") == 2)
            #expect(try await client.getRange("s", 0, 0).text == "a")
            #expect(try await client.exists("a", "b", "zz") == 2)
            #expect(try await client.keys("*").count == 5)
            let page = try await client.scan(match: "a*")
            #expect(page.keys.map(\.text) == ["a"] || !page.isComplete)
            #expect(try await client.expire("a", seconds: 100))
            #expect((90...100).contains(try await client.ttl("a")), "set, in seconds (a loaded machine may stall between requests)")
            #expect(try await client.persist("a"))
            try await client.rename("a", to: "a2")
            #expect(try await client.copy("a2", to: "a3"))
            #expect(try await client.getDel("a3")?.text == "42")
            #expect(try await client.delete("a2", "b") == 2)
            do {
                try await client.incr("s")
                Issue.record("INCR of text succeeded on redis")
            } catch let error as CairnClientError {
                #expect(error.code == .server && error.prefix == "ERR")
            }
            try await client.flushDB()
            #expect(try await client.dbsize() == 0)
        }
    }

    @Test func pipelineTransactionAndAdmin() async throws {
        try await withRedis { client in
            let commands: [[any RESPArgument]] = Array(repeating: ["INCR", "n"], count: 100) + [["LPUSH", "list", "x"], ["GET", "list"]]
            let replies = try await client.pipeline(commands)
            #expect(replies[99] == .integer(100))
            guard case .error(let text) = replies[101] else {
                Issue.record("expected WRONGTYPE in place, got \(replies[101])")
                return
            }
            #expect(text.hasPrefix("WRONGTYPE"))
            var runs = 0
            let exec = try await client.transaction(watching: ["n"], attempts: 3) { tx in
                runs += 1
                let n = Int(try await tx.getString("n") ?? "0")!
                if runs == 1 { try await client.incr("n") }
                tx.set("n", n * 2)
            }
            #expect(runs == 2 && exec == [.simpleString("OK")])
            #expect(try await client.getString("n") == "202")
            let info = try await client.info()
            #expect(info["server"]["redis_version"] != nil)
            #expect(try await client.configGet("maxclients")["maxclients"] != nil)
            #expect(try await client.lastSave() > 0)
            #expect(try await client.time().seconds > 1_700_000_000)
        }
    }

    @Test func hundredTasks() async throws {
        try await withRedis { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<100 {
                    group.addTask {
                        for i in 0..<10 {
                            try await client.set("t\(task):\(i)", i)
                            try await client.incr("counter")
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await client.getString("counter") == "1000")
            #expect(try await client.dbsize() == 1001)
        }
    }
}
