import CairnClient
import CairnTestSupport
import RESP
import Testing

/// Pub/sub against the real redis-server (Cairn serves no pub/sub yet): messages as an
/// AsyncSequence, and a subscription that survives its connection being killed.
@Suite struct PubSubTests {
    /// How many subscribers `channel` has, by `PUBSUB NUMSUB`.
    static func subscribers(_ client: CairnClient, _ channel: String) async throws -> Int64 {
        let reply = try await client.send(["PUBSUB", "NUMSUB", channel])
        if case .map(let pairs) = reply { return pairs.first?.value.int ?? 0 }
        return reply.array?.last?.int ?? 0
    }

    @Test(arguments: [RESPVersion.v3, .v2])
    func subscriptionFollowsAReconnect(version: RESPVersion) async throws {
        guard let redis = try RedisProcess.start() else { return }
        defer { redis.terminate() }
        var config = CairnClientConfiguration(port: redis.port)
        config.protocolVersion = version
        config.initialBackoff = .milliseconds(20)
        let client = CairnClient(configuration: config)
        defer { client.close() }
        let received = Locked<[String]>([])
        let listener = Task {
            for try await message in client.subscribe(to: ["news"]) {
                received.withLock { $0.append(message.payloadString) }
                if message.payloadString == "last" { break }
            }
        }
        defer { listener.cancel() }
        // 30 s for the first subscription: see `patternSubscription`.
        #expect(try await eventually(seconds: 30) { try await Self.subscribers(client, "news") == 1 })
        #expect(try await client.send(["PUBLISH", "news", "first"]) == .integer(1))
        #expect(try await eventually(seconds: 10) { received.withLock { $0 } == ["first"] })

        // The server drops the subscriber connection; the subscription reconnects and resubscribes.
        _ = try await client.send(["CLIENT", "KILL", "TYPE", "pubsub"])
        #expect(try await eventually(seconds: 10) { try await Self.subscribers(client, "news") == 1 })
        #expect(try await client.send(["PUBLISH", "news", "after"]) == .integer(1))
        #expect(try await client.send(["PUBLISH", "news", "last"]) == .integer(1))
        try await withTimeout(seconds: 10) { try await listener.value }
        #expect(received.withLock { $0 } == ["first", "after", "last"])
        // Leaving the loop closed the subscriber connection.
        #expect(try await eventually(seconds: 10) { try await Self.subscribers(client, "news") == 0 })
    }

    @Test func patternSubscription() async throws {
        guard let redis = try RedisProcess.start() else { return }
        defer { redis.terminate() }
        let client = CairnClient(port: redis.port)
        defer { client.close() }
        let listener = Task { () -> PubSubMessage? in
            for try await message in client.psubscribe(to: ["user.*"]) { return message }
            return nil
        }
        defer { listener.cancel() }
        // 30 s: `swift test` starts every suite at once, and on two cores the first seconds of
        // the run are slow for all of them (suites that take 0.5 s alone take 12 s there); the
        // subscription's connection and its reconnect backoff share that.
        #expect(try await eventually(seconds: 30) { try await client.send(["PUBSUB", "NUMPAT"]) == .integer(1) })
        _ = try await client.send(["PUBLISH", "user.7", "hi"])
        let message = try await withTimeout(seconds: 30) { try await listener.value }
        #expect(message == PubSubMessage(channel: Array("user.7".utf8), pattern: Array("user.*".utf8), payload: Array("hi".utf8)))
    }
}
