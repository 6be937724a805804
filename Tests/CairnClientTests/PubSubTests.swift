import CairnClient
import CairnTestSupport
import RESP
import Testing

/// Pub/sub against cairnd and the real redis-server: `subscribe` returns once the server has
/// confirmed, a live subscription changes its channels and patterns, messages come as an
/// AsyncSequence, and a subscription survives its connection being killed.
@Suite struct PubSubTests {
    /// Which server a test runs against.
    enum Server: String, CustomTestStringConvertible, Sendable {
        case cairnd, redis
        var testDescription: String { rawValue }
    }

    /// A client of a fresh `server` for `body`, or nothing when redis-server is not installed.
    static func with(_ server: Server, _ body: (CairnClient) async throws -> Void) async throws {
        switch server {
        case .cairnd:
            try await withCairnd { client, _ in try await body(client) }
        case .redis:
            guard let redis = try RedisProcess.start() else { return }
            defer { redis.terminate() }
            let client = CairnClient(port: redis.port)
            defer { client.close() }
            try await body(client)
        }
    }

    /// How many subscribers `channel` has, by `PUBSUB NUMSUB`.
    static func subscribers(_ client: CairnClient, _ channel: String) async throws -> Int64 {
        let reply = try await client.send(["PUBSUB", "NUMSUB", channel])
        if case .map(let pairs) = reply { return pairs.first?.value.int ?? 0 }
        return reply.array?.last?.int ?? 0
    }

    /// `PUBLISH`'s reply: how many subscribers received the message.
    static func publish(_ client: CairnClient, _ channel: String, _ payload: String) async throws -> Int64 {
        try await client.send(["PUBLISH", channel, payload]).int ?? -1
    }

    /// The race of issue #41: a message published 1 ms after `subscribe` returned, from another
    /// connection, used to be lost, because the subscription started before the server had
    /// confirmed it (or even before it connected). Each round opens a subscription of its own
    /// (released at the end of the round, which closes its connection); the publisher's
    /// connection is reused.
    @Test(.timeLimit(.minutes(3)), arguments: [Server.cairnd, .redis])
    func aMessagePublishedRightAfterSubscribeReturnsArrives(server: Server) async throws {
        try await Self.with(server) { client in
            var lost: [Int] = []
            for round in 0..<1000 {
                let channel = "race.\(round)"
                let subscription = try await client.subscribe(to: [channel])
                try await Task.sleep(for: .milliseconds(1))
                // 1 receiver: the server had the subscription when `subscribe` returned.
                guard try await Self.publish(client, channel, "m\(round)") == 1 else {
                    lost.append(round)
                    continue
                }
                var messages = subscription.makeAsyncIterator()
                let message = try await messages.next()
                #expect(message == PubSubMessage(channel: Array(channel.utf8), pattern: nil, payload: Array("m\(round)".utf8)))
            }
            #expect(lost.isEmpty, "no subscriber when publishing in rounds \(lost.prefix(20))")
            // Every round's connection closed with its subscription.
            #expect(try await eventually(seconds: 10) { try await Self.subscribers(client, "race.999") == 0 })
        }
    }

    /// One subscription adds and removes channels and patterns while it lives; each change
    /// returns once the server confirmed it, so a PUBLISH right after reaches it (or, after a
    /// removal, does not).
    @Test(.timeLimit(.minutes(3)), arguments: [Server.cairnd, .redis])
    func aLiveSubscriptionAddsAndRemovesChannelsAndPatterns(server: Server) async throws {
        try await Self.with(server) { client in
            let subscription = try await client.subscribe(to: ["base", "other"])
            #expect(subscription.channels == ["base", "other"])
            var messages = subscription.makeAsyncIterator()
            var missed: [Int] = []
            for round in 0..<1000 {
                let channel = "live.\(round)"
                try await subscription.subscribe(to: [channel])
                try await Task.sleep(for: .milliseconds(1))
                guard try await Self.publish(client, channel, "m\(round)") == 1 else {
                    missed.append(round)
                    continue
                }
                #expect(try await messages.next()?.payloadString == "m\(round)")
                try await subscription.unsubscribe(from: [channel])
                #expect(try await Self.publish(client, channel, "gone") == 0)
                if round % 100 == 0 {
                    let pattern = "p.\(round).*"
                    try await subscription.psubscribe(to: [pattern])
                    #expect(subscription.patterns == [pattern])
                    #expect(try await Self.publish(client, "p.\(round).x", "matched") == 1)
                    let matched = try await messages.next()
                    #expect(matched?.pattern.map { String(decoding: $0, as: UTF8.self) } == pattern)
                    #expect(matched?.channelString == "p.\(round).x")
                    try await subscription.punsubscribe(from: [pattern])
                    #expect(try await Self.publish(client, "p.\(round).x", "gone") == 0)
                }
            }
            #expect(missed.isEmpty, "no subscriber when publishing in rounds \(missed.prefix(20))")
            #expect(subscription.channels == ["base", "other"])
            #expect(subscription.patterns == [])
            // The channels it started with were never touched.
            #expect(try await Self.publish(client, "base", "still") == 1)
            #expect(try await messages.next()?.payloadString == "still")
        }
    }

    /// A channel the ACL forbids: the server's NOPERM fails that change alone; the subscription
    /// keeps what it had and goes on working.
    @Test func aRefusedChangeFailsAloneWithTheServersError() async throws {
        try await withCairnd { admin, server in
            _ = try await admin.send(["ACL", "SETUSER", "listener", "on", ">secret", "~*", "+@all", "resetchannels", "&allowed.*"])
            var config = CairnClientConfiguration(port: server.port, password: "secret", username: "listener")
            config.requestDeadline = .seconds(10)
            let client = CairnClient(configuration: config)
            defer { client.close() }

            let refused = await #expect(throws: CairnClientError.self) { _ = try await client.subscribe(to: ["forbidden"]) }
            #expect(refused?.code == .server && refused?.prefix == "NOPERM", "\(String(describing: refused))")

            let subscription = try await client.subscribe(to: ["allowed.1"])
            let refusedLater = await #expect(throws: CairnClientError.self) { try await subscription.subscribe(to: ["forbidden"]) }
            #expect(refusedLater?.prefix == "NOPERM", "\(String(describing: refusedLater))")
            #expect(subscription.channels == ["allowed.1"])
            try await subscription.subscribe(to: ["allowed.2"])
            #expect(subscription.channels == ["allowed.1", "allowed.2"])
            #expect(try await Self.publish(admin, "allowed.2", "hi") == 1)
            var messages = subscription.makeAsyncIterator()
            #expect(try await messages.next()?.payloadString == "hi")
        }
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
        let subscription = try await client.subscribe(to: ["news"])
        try await subscription.psubscribe(to: ["sport.*"])
        let received = Locked<[String]>([])
        let listener = Task {
            for try await message in subscription {
                received.withLock { $0.append(message.payloadString) }
                if message.payloadString == "last" { break }
            }
        }
        defer { listener.cancel() }
        #expect(try await Self.subscribers(client, "news") == 1)
        #expect(try await client.send(["PUBLISH", "news", "first"]) == .integer(1))
        #expect(try await eventually(seconds: 10) { received.withLock { $0 } == ["first"] })

        // The server drops the subscriber connection; the subscription reconnects and
        // subscribes again to its channel and its pattern.
        _ = try await client.send(["CLIENT", "KILL", "TYPE", "pubsub"])
        #expect(try await eventually(seconds: 10) { try await Self.subscribers(client, "news") == 1 })
        #expect(try await eventually(seconds: 10) { try await client.send(["PUBSUB", "NUMPAT"]) == .integer(1) })
        #expect(subscription.channels == ["news"] && subscription.patterns == ["sport.*"])
        #expect(try await client.send(["PUBLISH", "sport.tennis", "after"]) == .integer(1))
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
        let subscription = try await client.psubscribe(to: ["user.*"])
        #expect(try await client.send(["PUBSUB", "NUMPAT"]) == .integer(1))
        _ = try await client.send(["PUBLISH", "user.7", "hi"])
        let listener = Task { () -> PubSubMessage? in
            for try await message in subscription { return message }
            return nil
        }
        defer { listener.cancel() }
        let message = try await withTimeout(seconds: 30) { try await listener.value }
        #expect(message == PubSubMessage(channel: Array("user.7".utf8), pattern: Array("user.*".utf8), payload: Array("hi".utf8)))
    }

    /// `close()` ends the loop over the messages and closes the connection; changes after it fail.
    @Test func closeEndsTheSubscription() async throws {
        try await withCairnd { client, _ in
            let subscription = try await client.subscribe(to: ["news"])
            let listener = Task { () -> Int in
                var count = 0
                for try await _ in subscription { count += 1 }
                return count
            }
            #expect(try await Self.publish(client, "news", "one") == 1)
            subscription.close()
            // The loop ends (after reading what had arrived: "one", if it was there yet).
            #expect(try await withTimeout(seconds: 10) { try await listener.value } <= 1)
            #expect(try await eventually(seconds: 10) { try await Self.subscribers(client, "news") == 0 })
            let closed = await #expect(throws: CairnClientError.self) { try await subscription.subscribe(to: ["more"]) }
            #expect(closed?.code == .closed)
        }
    }
}
