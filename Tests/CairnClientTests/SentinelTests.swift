import CairnClient
import Synchronization
import Testing

/// Sentinel discovery against Debian's `redis-server` and `redis-sentinel`: the client finds
/// the primary, reads from the replica, and keeps writing through a failover (`SENTINEL
/// FAILOVER`, and `kill -9` of the primary) within its request deadline.
@Suite(.serialized, .enabled(if: SentinelCluster.binaries != nil, "redis-server or redis-sentinel is not installed"))
struct SentinelTests {
    /// A client that waits out a failover: requests may take up to 20 s in all.
    func sentinelClient(_ cluster: SentinelCluster) -> CairnClient {
        var config = CairnClientConfiguration()
        config.requestDeadline = .seconds(20)
        config.reconnectDeadline = .seconds(20)
        config.maximumBackoff = .milliseconds(200)
        return CairnClient(sentinels: cluster.sentinels, primaryName: SentinelCluster.name, configuration: config)
    }

    /// The port of the server a sender reaches.
    func port(_ sender: some KeyValueWriter) async throws -> Int {
        Int(try await sender.configGet("port")["port"] ?? "") ?? 0
    }

    /// Writes `w:N` = N in a loop until stopped; counts acknowledged writes and failures.
    final class Writer: Sendable {
        let acknowledged = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let stopped = Atomic<Bool>(false)

        func run(_ client: CairnClient) async {
            var n = 0
            while !stopped.load(ordering: .relaxed) {
                n += 1
                do {
                    try await client.set("w:\(n)", n)
                    try await client.set("w:last", n)
                    acknowledged.wrappingAdd(1, ordering: .relaxed)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// Keeps a writer going while `failover` runs; returns once the client writes to the
    /// replica that became the primary, and checks that no write failed and the last one is there.
    func writesContinue(_ cluster: SentinelCluster, during failover: () async throws -> Void) async throws {
        let client = sentinelClient(cluster)
        defer { client.close() }
        #expect(try await port(client) == cluster.primaryPort)
        let writer = Writer()
        let task = Task { await writer.run(client) }
        try await cluster.waitUntil("the writer is writing") { writer.acknowledged.load(ordering: .relaxed) > 20 }
        let before = writer.acknowledged.load(ordering: .relaxed)
        let started = ContinuousClock.now
        try await failover()
        try await cluster.waitUntil("the client writes to the new primary", seconds: 30) {
            (try? await port(client)) == cluster.replicaPort
        }
        let switched = ContinuousClock.now - started
        let atSwitch = writer.acknowledged.load(ordering: .relaxed)
        try await cluster.waitUntil("writes continue on the new primary") { writer.acknowledged.load(ordering: .relaxed) > atSwitch + 20 }
        writer.stopped.store(true, ordering: .relaxed)
        await task.value
        let total = writer.acknowledged.load(ordering: .relaxed)
        print("sentinel failover followed in \(switched); writes acknowledged: \(before) before, \(total) in all")
        #expect(writer.failures.withLock { $0 } == [])
        // The last acknowledged write is on the new primary.
        let last = try await client.getString("w:last")
        let onNewPrimary = try await cluster.query(cluster.replicaPort) { direct in
            let role = try await direct.send(["ROLE"]).array?.first?.string
            let value = try await direct.getString("w:last")
            return role == "master" && value == last
        }
        #expect(onNewPrimary)
        #expect(last == String(total))
    }

    @Test func discoversThePrimaryAndReadsFromTheReplica() async throws {
        let started = ContinuousClock.now
        let cluster = try await SentinelCluster.start()
        print("sentinel cluster ready in \(ContinuousClock.now - started)")
        defer { cluster.stop() }
        let client = sentinelClient(cluster)
        defer { client.close() }
        try await client.set("greeting", "hello")
        #expect(try await port(client) == cluster.primaryPort)
        let replicaPort = try await client.replicas.send(["INFO", "server"]).string.map { ServerInfo(parsing: $0).value("tcp_port") }
        #expect(replicaPort == String(cluster.replicaPort))
        try await cluster.waitUntil("the replica has the write") { try await client.replicas.getString("greeting") == "hello" }
        // A replica refuses writes at once (no wait for a failover that is not happening).
        let readOnly = await #expect(throws: CairnClientError.self) { try await client.replicas.send(["SET", "x", "1"]) }
        #expect(readOnly?.prefix == "READONLY")

        // A name the sentinels do not monitor: requests fail once reconnecting gives up.
        var config = CairnClientConfiguration()
        config.requestDeadline = .seconds(5)
        config.reconnectDeadline = .milliseconds(300)
        let unknown = CairnClient(sentinels: cluster.sentinels, primaryName: "nobody", configuration: config)
        defer { unknown.close() }
        let error = await #expect(throws: CairnClientError.self) { try await unknown.ping() }
        #expect(error?.message.contains("no sentinel knows the primary nobody") == true, "\(String(describing: error))")
    }

    @Test func followsSentinelFailover() async throws {
        let cluster = try await SentinelCluster.start()
        defer { cluster.stop() }
        try await writesContinue(cluster) {
            let sentinel = CairnClient(port: cluster.sentinelPorts[0])
            defer { sentinel.close() }
            try await sentinel.send(["SENTINEL", "FAILOVER", SentinelCluster.name])
        }
    }

    @Test func followsFailoverAfterKillOfThePrimary() async throws {
        let cluster = try await SentinelCluster.start()
        defer { cluster.stop() }
        try await writesContinue(cluster) { cluster.kill9(cluster.primaryPort) }
    }
}
