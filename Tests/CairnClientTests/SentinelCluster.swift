import CairnClient
import CairnTestSupport
import Foundation

/// One primary, one replica and three sentinels (Debian's `redis-server` and `redis-sentinel`)
/// on free loopback ports, in a temporary directory; everything is killed by ``stop()``.
/// Sentinels judge a server down after 1 s, so a failover takes a few seconds.
final class SentinelCluster: @unchecked Sendable {  // used from one test at a time
    static let name = "cairn-test"

    struct Unavailable: Error {}

    let directory: URL
    let primaryPort: Int
    let replicaPort: Int
    let sentinelPorts: [Int]
    private var processes: [Int: Process] = [:]

    /// The binaries on PATH, or nil when redis-server or redis-sentinel is missing.
    static var binaries: (server: URL, sentinel: URL)? {
        func find(_ name: String) -> URL? {
            for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
                let url = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
                if FileManager.default.isExecutableFile(atPath: url.path) { return url }
            }
            return nil
        }
        guard let server = find("redis-server"), let sentinel = find("redis-sentinel") else { return nil }
        return (server, sentinel)
    }

    var sentinels: [ServerAddress] { sentinelPorts.map { ServerAddress("127.0.0.1", $0) } }

    /// A started cluster; tries again on fresh ports when starting fails (a free port can be
    /// taken by another test's server between choosing it and binding it).
    static func start() async throws -> SentinelCluster {
        var attempt = 1
        while true {
            do {
                return try await SentinelCluster()
            } catch where attempt < 3 && !(error is Unavailable) {
                print("sentinel cluster did not start (attempt \(attempt)): \(error)")
                attempt += 1
            }
        }
    }

    /// Starts the servers and returns once the sentinels know the replica and each other.
    init() async throws {
        guard let binaries = SentinelCluster.binaries else { throw Unavailable() }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-sentinel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        primaryPort = try RedisProcess.freePort()
        replicaPort = try RedisProcess.freePort()
        sentinelPorts = try (0..<3).map { _ in try RedisProcess.freePort() }
        do {
            try launch(binaries.server, port: primaryPort, arguments: [])
            try launch(binaries.server, port: replicaPort, arguments: ["--replicaof", "127.0.0.1", String(primaryPort)])
            try await waitUntil("the replica's link is up") {
                try await self.query(self.replicaPort) { try await $0.info("replication").text.contains("master_link_status:up") }
            }
            for port in sentinelPorts {
                let config = directory.appendingPathComponent("sentinel-\(port).conf")
                try """
                port \(port)
                bind 127.0.0.1
                logfile \(directory.appendingPathComponent("sentinel-\(port).log").path)
                dir \(directory.path)
                sentinel monitor \(SentinelCluster.name) 127.0.0.1 \(primaryPort) 2
                sentinel down-after-milliseconds \(SentinelCluster.name) 1000
                sentinel failover-timeout \(SentinelCluster.name) 3000
                sentinel parallel-syncs \(SentinelCluster.name) 1

                """.write(to: config, atomically: true, encoding: .utf8)
                let process = Process()
                process.executableURL = binaries.sentinel
                process.arguments = [config.path]
                process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
                process.standardError = FileHandle(forWritingAtPath: "/dev/null")
                try process.run()
                processes[port] = process
            }
            try await waitUntil("every sentinel knows the replica and the other sentinels") {
                for port in self.sentinelPorts {
                    let ready = try await self.query(port) { c in
                        let replicas = try await c.send(["SENTINEL", "replicas", SentinelCluster.name]).array ?? []
                        let others = try await c.send(["SENTINEL", "sentinels", SentinelCluster.name]).array ?? []
                        return replicas.count == 1 && others.count == 2
                    }
                    if !ready { return false }
                }
                return true
            }
        } catch {
            stop()
            throw error
        }
    }

    private func launch(_ binary: URL, port: Int, arguments: [String]) throws {
        let process = Process()
        process.executableURL = binary
        process.arguments =
            [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory.path,
                "--logfile", directory.appendingPathComponent("redis-\(port).log").path,
            ] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        processes[port] = process
    }

    /// `body` with a plain client for the server on `port`; false when it cannot be reached.
    func query(_ port: Int, _ body: (CairnClient) async throws -> Bool) async throws -> Bool {
        var config = CairnClientConfiguration(port: port)
        config.protocolVersion = .v2
        config.requestDeadline = .seconds(2)
        config.reconnectDeadline = .milliseconds(100)
        let client = CairnClient(configuration: config)
        defer { client.close() }
        do {
            return try await body(client)
        } catch let error as CairnClientError where error.code != .server {
            return false
        }
    }

    /// Polls `condition` every 100 ms for up to `seconds`; throws when it never holds.
    func waitUntil(_ what: String, seconds: Double = 20, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        // The servers' logs say why (a port taken meanwhile, a sync that failed).
        let logs = (try? FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".log") }.sorted()) ?? []
        let tails = logs.map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return "== \(name)\n" + text.split(separator: "\n").suffix(8).joined(separator: "\n")
        }
        throw CairndProcess.Failure(message: "timed out waiting until \(what)\n" + tails.joined(separator: "\n"))
    }

    /// `kill -9` of the server on `port`.
    func kill9(_ port: Int) {
        guard let process = processes[port], process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Kills every process and removes the directory.
    func stop() {
        for port in processes.keys { kill9(port) }
        processes = [:]
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
