import CairnClient
import CairnTestSupport
import RESP
import Synchronization
import Testing

/// RESP3 push messages on shared (pooled) connections, against redis-server's client-side
/// caching (`CLIENT TRACKING`): invalidations arrive between replies and go to the configured
/// handler, and every reply still reaches the request it answers.
@Suite(.enabled(if: RedisProcess.binary != nil, "redis-server is not installed"))
struct PushMessageTests {
    /// The keys of an `invalidate` push.
    static func invalidated(_ push: RESPValue) -> [String]? {
        guard let items = push.array, items.count == 2, items[0].string == "invalidate" else { return nil }
        return items[1].array?.compactMap(\.string) ?? []
    }

    @Test(arguments: [nil, true] as [Bool?])
    func invalidationsInterleavedWithRepliesKeepThemInStep(handled: Bool?) async throws {
        guard let redis = try RedisProcess.start() else { return }
        defer { redis.terminate() }
        let pushes = Mutex<[RESPValue]>([])
        var config = CairnClientConfiguration(port: redis.port)
        // One connection carries every request, so the pushes land among their replies.
        config.maximumConnections = 1
        if handled == true { config.pushHandler = { push in pushes.withLock { $0.append(push) } } }
        let client = CairnClient(configuration: config)
        defer { client.close() }
        // Broadcast mode: the connection hears of every change to keys under "user:", its own too.
        #expect(try await client.send(["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:"]) == .simpleString("OK"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<20 {
                group.addTask {
                    for n in 0..<25 {
                        let key = "user:\(task)"
                        try await client.set(key, "\(n)")
                        let read = try await client.getString(key)
                        #expect(read == "\(n)")
                        #expect(try await client.incrBy("count:\(task)", 1) == Int64(n + 1))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await client.ping() == "PONG")
        let received = pushes.withLock { $0 }
        if handled == true {
            let keys = Set(received.compactMap(Self.invalidated).joined())
            #expect(keys == Set((0..<20).map { "user:\($0)" }), "invalidations received: \(received.count)")
        } else {
            #expect(received.isEmpty)
        }
    }
}
