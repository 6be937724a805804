import CairnClient
import CairnTestSupport
import Synchronization
import Testing

/// Typed list methods against the real cairnd, blocking pops included.
@Suite struct ListTests {
    @Test func listsPushPopAndRange() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.rpush("l", "a", "b", "c") == 3)
            #expect(try await client.lpush("l", "z") == 4)
            #expect(try await client.lrange("l", 0, -1).map(\.text) == ["z", "a", "b", "c"])
            #expect(try await client.llen("l") == 4)
            #expect(try await client.lindex("l", -1)?.text == "c")
            #expect(try await client.lpos("l", "b") == 2)
            #expect(try await client.lpos("l", "nope") == nil)
            try await client.lset("l", 0, "Z")
            #expect(try await client.linsert("l", before: true, pivot: "b", "X") == 5)
            #expect(try await client.lrem("l", count: 0, "X") == 1)
            #expect(try await client.pop("l")?.text == "Z")
            #expect(try await client.pop("l", count: 5, from: .right).map(\.text) == ["c", "b", "a"])
            #expect(try await client.pop("l") == nil)
            #expect(try await client.pop("l", count: 2) == [])
            try await client.rpush("src", "1", "2")
            #expect(try await client.lmove("src", "dst", from: .left, to: .right)?.text == "1")
            try await client.ltrim("src", 1, 0)
            #expect(try await client.llen("src") == 0)
        }
    }

    @Test func blockingPopsWaitForAPushAndTimeOut() async throws {
        try await withCairnd { client, _ in
            let start = ContinuousClock.now
            #expect(try await client.blockingPop(["empty"], timeout: 0.3) == nil)
            #expect(ContinuousClock.now - start >= .milliseconds(280))
            async let popped = client.blockingPop(["jobs"], from: .right, timeout: 20)
            // This BRPOP itself is parked (blocked_clients alone could still count the first one).
            #expect(try await eventually(seconds: 15) {
                let list: [UInt8]
                switch try await client.send(["CLIENT", "LIST"]) {
                case .bulkString(let text), .verbatimString(_, let text): list = text
                default: return false
                }
                return String(decoding: list, as: UTF8.self).split(separator: "\n").contains { $0.contains("flags=b") && $0.contains("cmd=brpop") }
            })
            try await client.rpush("jobs", "job1")
            let got = try await popped
            #expect(got?.key.text == "jobs" && got?.element.text == "job1")
            #expect(try await client.blockingMove("none", "d", from: .left, to: .left, timeout: 0.1) == nil)
        }
    }

    /// A blocking pop takes a connection to itself: a request sent at the same moment never
    /// waits behind it. The pool once counted a shared request on its connection only once it
    /// was written, so a lease taken in between could pick that connection too, and the shared
    /// request waited for the pop's timeout (seen under load as a CLIENT LIST that never came
    /// back in `blockingPopsWaitForAPushAndTimeOut`). The order of the two answers tells.
    @Test func aRequestBesideABlockingPopIsNeverBehindIt() async throws {
        try await withCairnd { client, _ in
            for i in 0..<200 {
                let key = "queue\(i)"
                let order = Mutex<[String]>([])
                async let popped: Void = {
                    _ = try await client.blockingPop([key], timeout: 3)
                    order.withLock { $0.append("pop") }
                }()
                _ = try await client.send(["PING"])
                order.withLock { $0.append("ping") }
                try await client.rpush(key, "x")
                try await popped
                let seen = order.withLock { $0 }
                #expect(seen == ["ping", "pop"], "round \(i)")
                if seen != ["ping", "pop"] { break }
            }
        }
    }
}
