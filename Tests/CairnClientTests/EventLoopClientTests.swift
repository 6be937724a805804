@testable import CairnClient
import CairnTestSupport
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import RESP
import ServiceLifecycle
import Synchronization
import Testing

/// The client on SwiftNIO event loops: concurrency without threads, deadlines against a stalled
/// server, restarts, cancellation, RESP3 and the service lifecycle.
@Suite struct EventLoopClientTests {
    /// Threads of this process, from /proc.
    static func threadCount() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") } ?? ""
        return Int(line.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "") ?? -1
    }

    @Test func tenThousandConcurrentTasksCostNoThreads() async throws {
        try await withCairnd { client, _ in
            let before = Self.threadCount()
            let peak = Counter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<10_000 {
                    group.addTask {
                        try await client.set("t\(task)", task)
                        #expect(try await client.getString("t\(task)") == "\(task)")
                        if task % 500 == 0 { peak.max(Self.threadCount()) }
                    }
                }
                try await group.waitForAll()
            }
            peak.max(Self.threadCount())
            let loops = System.coreCount
            let threads = peak.value
            print("10,000 tasks: \(before) threads before, \(threads) at most while running (\(loops) event-loop threads), \(client.openConnections) connections")
            // The whole process: the test runner, Foundation's process monitor, Dispatch and the
            // NIO event loops; before, each request in flight held a thread.
            #expect(threads < 16 + loops)
            #expect(client.openConnections <= 8)
            #expect(try await client.dbsize() == 10_000)
        }
    }

    @Test func aStalledServerFailsRequestsAtTheirDeadlineWhileDispatchRuns() async throws {
        try await withCairnd(configure: { $0.requestDeadline = .seconds(1) }) { client, server in
            // Connected first (under a loaded parallel run, a first connect may need over 1 s).
            let ready = try await eventually(seconds: 20) { (try? await client.set("k", "v")) == true }
            #expect(ready)
            // A heartbeat on an unrelated queue: its longest gap shows whether threads starved.
            let beats = Locked<[ContinuousClock.Instant]>([])
            let heartbeat = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "heartbeat"))
            heartbeat.schedule(deadline: .now(), repeating: .milliseconds(20))
            heartbeat.setEventHandler { beats.withLock { $0.append(.now) } }
            heartbeat.resume()
            defer { heartbeat.cancel() }
            server.stop()
            let start = ContinuousClock.now
            let outcomes = await withTaskGroup(of: CairnClientError.Code?.self) { group in
                for i in 0..<400 {
                    group.addTask {
                        do {
                            _ = try await client.get("k\(i)")
                            return nil
                        } catch let error as CairnClientError {
                            return error.code
                        } catch {
                            return .unexpectedReply
                        }
                    }
                }
                return await group.reduce(into: [CairnClientError.Code?]()) { $0.append($1) }
            }
            let elapsed = ContinuousClock.now - start
            server.resume()
            let other = outcomes.filter { $0 != .timeout }.map { $0.map { "\($0)" } ?? "answered" }
            #expect(other.isEmpty, "not timeouts: \(Dictionary(grouping: other) { $0 }.mapValues(\.count))")
            #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(5), "failed after \(elapsed)")
            let times = beats.withLock { $0 }
            let longestGap = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .zero
            print("stalled server: 400 requests failed after \(elapsed); heartbeat \(times.count) beats, longest gap \(longestGap)")
            #expect(longestGap < .milliseconds(500))
            // Once the server runs again, the same client works (late replies were dropped in order).
            let recovered = try await eventually(seconds: 20) { (try? await client.getString("k")) == "v" }
            #expect(recovered)
        }
    }

    @Test func aRestartWithinTheReconnectDeadlineLosesNoRequest() async throws {
        let port = try CairndProcess.freePortOutsideEphemeralRange()
        // Only the restarting task touches it while the requests run.
        nonisolated(unsafe) let server = try CairndProcess(port: port)
        var config = CairnClientConfiguration(port: port)
        config.reconnectDeadline = .seconds(20)
        let client = CairnClient(configuration: config)
        defer { client.close() }
        try await client.set("k", "kept")
        let failures = Counter()
        let done = Counter()
        let restarted = Locked<CairndProcess?>(nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<20 {
                group.addTask {
                    for i in 0..<100 {
                        do {
                            #expect(try await client.getString("k") == "kept")
                            done.add()
                        } catch {
                            failures.add()
                            Issue.record("request \(task).\(i) failed: \(error)")
                        }
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(500))
                let start = ContinuousClock.now
                server.terminate()
                try await Task.sleep(for: .seconds(4))
                restarted.withLock { $0 = try? CairndProcess(directory: server.directory, port: port) }
                print("restart: the server was away for \(ContinuousClock.now - start)")
            }
            try await group.waitForAll()
        }
        defer { restarted.withLock { $0.take() }?.terminate() }
        #expect(failures.value == 0)
        #expect(done.value == 2000)
    }

    @Test func cancellingALongIterationReleasesTheServerIterator() async throws {
        try await withCairnd(configure: { $0.maximumConnections = 2 }) { client, server in
            let observer = CairnClient(port: server.port)
            defer { observer.close() }
            _ = try await client.pipeline((0..<2000).map { ["SET", "i\(10_000 + $0)", $0] })
            let seen = Counter()
            let loop = Task {
                for try await _ in client.iterate(batchSize: 1) {
                    seen.add()
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            #expect(try await eventually(seconds: 20) { seen.value > 20 })
            #expect(try await rocksdbInfo(observer, "open_iterators") == 1)
            loop.cancel()
            _ = await loop.result
            #expect(seen.value < 2000)
            #expect(try await eventually(seconds: 20) { try await rocksdbInfo(observer, "open_iterators") == 0 })
            // The lease went back: with two connections the pool has one lease to give, and
            // a scoped body gets it again.
            let id = try await withTimeout(seconds: 10) { try await client.withConnection { try await $0.clientID() } }
            #expect(id > 0)
        }
    }

    @Test func scopedBodiesThatUseTheClientDoNotStarveIt() async throws {
        try await withCairnd(configure: { $0.maximumConnections = 2 }) { client, _ in
            try await client.set("a", "1")
            try await withTimeout(seconds: 20) {
                try await withThrowingTaskGroup(of: String?.self) { group in
                    for _ in 0..<2 {
                        group.addTask {
                            try await client.withSnapshot { snapshot in
                                try await Task.sleep(for: .milliseconds(100))
                                _ = try await snapshot.get("a")
                                return try await client.getString("a")
                            }
                        }
                    }
                    for try await value in group { #expect(value == "1") }
                }
            }
        }
    }

    /// Against redis-server: this branch's cairnd has no lists yet.
    @Test func aBlockingCommandDoesNotHoldUpOthers() async throws {
        guard let redis = try RedisProcess.start() else { return }
        defer { redis.terminate() }
        var config = CairnClientConfiguration(port: redis.port)
        config.maximumConnections = 2
        let client = CairnClient(configuration: config)
        defer { client.close() }
        do {
            _ = try await client.ping()
            async let popped = client.send(["BLPOP", "jobs", "10"])
            let pushed = try await eventually(seconds: 10) {
                try await client.info("clients").integer("blocked_clients", in: "clients") == 1
            }
            #expect(pushed)
            #expect(try await client.send(["RPUSH", "jobs", "j1"]) == .integer(1))
            let reply = try await popped
            #expect(reply.array?.compactMap(\.string) == ["jobs", "j1"], "BLPOP replied \(reply)")
        }
    }

    @Test func speaksResp3AndFallsBackToResp2() async throws {
        try await withCairnd { client, server in
            _ = try await client.hset("h", [("a", "1")])
            #expect(try await client.send(["HGETALL", "h"]) == .map([(.bulkString(Array("a".utf8)), .bulkString(Array("1".utf8)))]))
            var v2 = CairnClientConfiguration(port: server.port)
            v2.protocolVersion = .v2
            let old = CairnClient(configuration: v2)
            defer { old.close() }
            #expect(try await old.send(["HGETALL", "h"]) == .array([.bulkString(Array("a".utf8)), .bulkString(Array("1".utf8))]))
            // Typed methods read either shape.
            #expect(try await old.hgetAll("h") == (try await client.hgetAll("h")))
        }
    }

    @Test func aColumnFamilyThatDoesNotExistFailsWithoutRunningTheCommand() async throws {
        try await withCairnd(configure: { $0.maximumConnections = 1 }) { client, _ in
            await #expect(throws: CairnClientError.self) { try await client.columnFamily("nope").set("k", "v") }
            #expect(try await client.get("k") == nil)
            // Interleaved families on one shared connection each land in their own.
            let f = try await client.createColumnFamily("f")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<200 {
                    group.addTask {
                        if i % 2 == 0 { try await f.set("x\(i)", "f") } else { try await client.set("x\(i)", "default") }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await f.getString("x0") == "f")
            #expect(try await client.get("x0") == nil)
            #expect(try await client.getString("x1") == "default")
            #expect(try await f.get("x1") == nil)
        }
    }

    @Test func gracefulShutdownFinishesRequestsInFlight() async throws {
        let server = try CairndProcess()
        defer { server.terminate() }
        let client = CairnClient(port: server.port)
        let group = ServiceGroup(configuration: .init(services: [.init(service: client)], logger: .init(label: "test")))
        try await client.set("k", "v")
        let finished = Counter()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                try await group.run()
                finished.add()
            }
            // A stopped server holds the request in flight while shutdown begins.
            server.stop()
            let inFlight = Task { try await client.getString("k") }
            try await Task.sleep(for: .milliseconds(300))
            await group.triggerGracefulShutdown()
            try await Task.sleep(for: .milliseconds(300))
            #expect(finished.value == 0, "run() returned with a request in flight")
            await #expect(throws: CairnClientError.self) { try await client.ping() }
            server.resume()
            #expect(try await inFlight.value == "v")
            try await tasks.waitForAll()
        }
        #expect(finished.value == 1)
        do {
            _ = try await client.ping()
            Issue.record("a request after shutdown succeeded")
        } catch let error as CairnClientError {
            #expect(error.code == .closed)
        }
        #expect(client.openConnections == 0)
    }

    @Test func unixSocket() async throws {
        guard let binary = RedisProcess.binary else { return }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-unix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("redis.sock").path
        let redis = Process()
        redis.executableURL = binary
        redis.arguments = ["--port", "0", "--unixsocket", path, "--save", "", "--appendonly", "no"]
        redis.standardOutput = FileHandle.nullDevice
        try redis.run()
        defer {
            kill(redis.processIdentifier, SIGKILL)
            redis.waitUntilExit()
            try? FileManager.default.removeItem(at: dir)
        }
        var config = CairnClientConfiguration()
        config.unixSocketPath = path
        let client = CairnClient(configuration: config)
        defer { client.close() }
        #expect(try await eventually(seconds: 5) { (try? await client.ping()) == "PONG" })
        try await client.set("over", "unix")
        #expect(try await client.getString("over") == "unix")
    }
}

/// A counter tasks share.
final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)
    var value: Int { atomic.load(ordering: .relaxed) }
    func add() { atomic.add(1, ordering: .relaxed) }

    /// Raises the value to `candidate` if that is larger.
    func max(_ candidate: Int) {
        var current = value
        while candidate > current {
            let (exchanged, original) = atomic.compareExchange(expected: current, desired: candidate, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}

/// A value tasks and Dispatch handlers share. `@unchecked Sendable`: every access holds the lock.
final class Locked<Value>: @unchecked Sendable {
    private let mutex: Mutex<Value>
    init(_ value: sending Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout sending Value) throws -> sending T) rethrows -> sending T { try mutex.withLock(body) }
}
