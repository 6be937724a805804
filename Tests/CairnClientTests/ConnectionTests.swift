@testable import CairnClient
import CairnTestSupport
import Foundation
import RESP
import Testing

/// The transport: raw `send`, pipelining, errors, pooling, reconnects, shutdown.
@Suite struct ConnectionTests {
    @Test func sendReturnsRawReplies() async throws {
        let server = try CairndProcess()
        let client = CairnClient(port: server.port)
        defer { client.close() }
        #expect(try await client.send(["PING"]) == .simpleString("PONG"))
        #expect(try await client.send(["SET", "k", [0, 255, 13, 10]]) == .simpleString("OK"))
        #expect(try await client.send(["GET", "k"]) == .bulkString([0, 255, 13, 10]))
        #expect(try await client.send(["GET", "missing"]) == .null)
    }

    @Test func serverErrorsKeepTheirPrefix() async throws {
        let server = try CairndProcess()
        let client = CairnClient(port: server.port)
        defer { client.close() }
        try await client.send(["SET", "s", "text"])
        do throws(CairnClientError) {
            _ = try await client.send(["INCR", "s"])
            Issue.record("INCR on text succeeded")
        } catch {
            #expect(error.code == .server)
            #expect(error.prefix == "ERR")
            #expect(error.message == "value is not an integer or out of range")
        }
        do {
            _ = try await client.send(["NOSUCHCOMMAND"])
            Issue.record("unknown command succeeded")
        } catch CairnClientError.Code.server {
        }
        // The connection is still in step after errors.
        #expect(try await client.send(["ECHO", "after"]) == .bulkString(Array("after".utf8)))
    }

    @Test func pipelineIsOneRoundTripWithErrorsInPlace() async throws {
        let server = try CairndProcess()
        let client = CairnClient(port: server.port)
        defer { client.close() }
        let commands: [[any RESPArgument]] =
            (0..<1000).map { ["SET", "p\($0)", $0] } + [["INCR", "p1"], ["NOTACOMMAND", "x", "y"], ["GET", "p1"]]
        let replies = try await client.pipeline(commands)
        #expect(replies.count == 1003)
        #expect(replies[999] == .simpleString("OK"))
        #expect(replies[1000] == .integer(2))
        guard case .error(let text) = replies[1001] else {
            Issue.record("expected an error in place, got \(replies[1001])")
            return
        }
        #expect(text.hasPrefix("ERR"))
        #expect(replies[1002] == .bulkString(Array("2".utf8)))
    }

    @Test func connectionRefusedIsAConnectionError() async throws {
        var config = CairnClientConfiguration(port: try RedisProcess.freePort())
        config.connectAttempts = 3
        config.initialBackoff = .milliseconds(10)
        let client = CairnClient(configuration: config)
        defer { client.close() }
        await #expect(throws: CairnClientError.self) { try await client.send(["PING"]) }
        do throws(CairnClientError) {
            _ = try await client.send(["PING"])
        } catch {
            #expect(error.code == .connection)
        }
    }
}

/// Pooling, reconnects, timeouts, cancellation, authentication and shutdown.
@Suite struct ConnectionLifecycleTests {
    @Test func reconnectsAfterTheServerRestarts() async throws {
        let server = try CairndProcess(port: CairndProcess.freePortOutsideEphemeralRange())
        let port = server.port
        var config = CairnClientConfiguration(port: port)
        config.connectAttempts = 2
        config.initialBackoff = .milliseconds(10)
        let client = CairnClient(configuration: config)
        defer { client.close() }
        try await client.set("k", "kept")
        // Fill the pool with idle connections that the restart will break.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { _ = try await client.ping() } }
            try await group.waitForAll()
        }
        server.terminate()
        do {
            _ = try await client.get("k")
            Issue.record("a request succeeded with the server down")
        } catch let error as CairnClientError {
            // Refused connections, or the request's deadline passing first on a busy machine.
            #expect(error.code == .connection || error.code == .timeout)
        }
        let restarted = try CairndProcess(directory: server.directory, port: port)
        defer { restarted.terminate() }
        #expect(try await client.getString("k") == "kept")
        // Every stale pooled connection is replaced, none fails a request.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    let pong = try await client.ping()
                    #expect(pong == "PONG")
                }
            }
            try await group.waitForAll()
        }
    }

    @Test func backoffWaitsForAServerThatComesBack() async throws {
        let server = try CairndProcess(port: CairndProcess.freePortOutsideEphemeralRange())
        let port = server.port
        server.terminate()
        var config = CairnClientConfiguration(port: port)
        config.connectAttempts = 30
        config.initialBackoff = .milliseconds(20)
        config.maximumBackoff = .milliseconds(200)
        let client = CairnClient(configuration: config)
        defer { client.close() }
        async let pong = client.ping()
        try await Task.sleep(for: .milliseconds(400))
        let restarted = try CairndProcess(directory: server.directory, port: port)
        defer { restarted.terminate() }
        #expect(try await pong == "PONG")
    }

    /// With nothing listening on a port in the ephemeral range, a connect can join the socket to
    /// itself; the client must not take that echo for a server.
    @Test func aSocketConnectedToItselfIsRecognised() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        // Bound first, then connected to its own address: TCP's simultaneous open.
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withLoopbackAddress(port: 0) { bind(fd, $0, $1) } == 0 && withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        } == 0
        try #require(named)
        let connected = withLoopbackAddress(port: Int(UInt16(bigEndian: bound.sin_port))) { connect(fd, $0, $1) } == 0
        try #require(connected)
        #expect(Socket.isConnectedToItself(fd))

        let server = try CairndProcess()
        let toServer = try RawClient(port: server.port)
        #expect(!Socket.isConnectedToItself(toServer.fd))
    }

    @Test func hundredTasksShareOneClient() async throws {
        try await withCairnd(configure: { $0.maximumConnections = 8 }) { client, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<100 {
                    group.addTask {
                        for i in 0..<20 {
                            try await client.set("t\(task):\(i)", "\(task)-\(i)")
                            #expect(try await client.getString("t\(task):\(i)") == "\(task)-\(i)")
                            try await client.incr("counter")
                        }
                        let values = try await client.mget((0..<20).map { "t\(task):\($0)" })
                        #expect(values.map { $0?.text } == (0..<20).map { "\(task)-\($0)" })
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await client.getString("counter") == "2000")
            // The pool never opened more than its limit (plus this INFO's own connection reuse).
            let connected = try await client.info("clients").integer("connected_clients", in: "clients")
            #expect(connected.map { $0 >= 1 && $0 <= 8 } == true)
        }
    }

    @Test func replyTimeoutIsADistinctError() async throws {
        let listener = try SilentListener()
        var config = CairnClientConfiguration(port: listener.port)
        config.requestDeadline = .milliseconds(300)
        config.connectAttempts = 1
        let client = CairnClient(configuration: config)
        defer { client.close() }
        let start = ContinuousClock.now
        do {
            _ = try await client.ping()
            Issue.record("a silent server answered")
        } catch let error as CairnClientError {
            #expect(error.code == .timeout)
        }
        // Without the timeout a silent server would hold the request forever. The bound only
        // tells "ended" from "forever": alone this takes 0.3 s, but with the whole suite in
        // parallel on two cores a CI run measured 16.8 s (every test then waited 20-40 s for
        // the pool), so it is far from the timeout itself.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    @Test func cancellingARequestEndsItPromptly() async throws {
        let listener = try SilentListener()
        let client = CairnClient(port: listener.port)
        defer { client.close() }
        let task = Task { try await client.ping() }
        try await Task.sleep(for: .milliseconds(200))
        let start = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled request succeeded")
        } catch let error as CairnClientError {
            #expect(error.code == .cancelled)
        }
        // Before the 30 s command timeout would end it; loose for a loaded parallel run (see
        // `replyTimeoutIsADistinctError`).
        #expect(ContinuousClock.now - start < .seconds(25))
    }

    @Test func authentication() async throws {
        try await withCairnd(arguments: ["--set", "requirepass=s3cret"], configure: { $0.password = "s3cret" }) { client, server in
            #expect(try await client.ping() == "PONG")
            let named = CairnClient(configuration: CairnClientConfiguration(port: server.port, password: "s3cret", username: "default"))
            defer { named.close() }
            #expect(try await named.ping() == "PONG")
            let wrong = CairnClient(port: server.port, password: "nope")
            defer { wrong.close() }
            do {
                _ = try await wrong.ping()
                Issue.record("a wrong password was accepted")
            } catch let error as CairnClientError {
                #expect(error.code == .server && error.prefix == "WRONGPASS")
            }
            let none = CairnClient(port: server.port)
            defer { none.close() }
            do {
                _ = try await none.ping()
                Issue.record("no password was accepted")
            } catch let error as CairnClientError {
                #expect(error.prefix == "NOAUTH")
            }
        }
    }

    @Test func closeFailsLaterRequests() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.ping() == "PONG")
            client.close()
            do {
                _ = try await client.ping()
                Issue.record("a closed client sent a request")
            } catch let error as CairnClientError {
                #expect(error.code == .closed)
            }
        }
    }
}

/// A TCP listener that never accepts nor answers: connects succeed (backlog), replies never come.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok, listen(fd, 16) == 0 else { throw CairndProcess.Failure(message: "listen failed") }
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { close(fd) }
}

/// Per-connection commands on a connection of one's own, and SHUTDOWN.
@Suite struct ConnectionCommandTests {
    @Test func connectionCommands() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.commandCount() > 50)
            try await client.createColumnFamily("f")
            try await client.withConnection { connection in
                #expect(try await connection.clientGetName() == nil)
                try await connection.clientSetName("reporter")
                #expect(try await connection.clientGetName() == "reporter")
                #expect(try await connection.clientInfo().contains("name=reporter"))
                #expect(try await connection.clientList().contains { $0.contains("name=reporter") })
                try await connection.select(0)
                try await connection.useColumnFamily("f")
                try await connection.set("only-in-f", "1")
                try await connection.reset()
                #expect(try await connection.get("only-in-f") == nil)
                #expect(try await connection.clientGetName() == nil)
                #expect(try await connection.clientID() > 0)
            }
            // The pooled client is back in the default family whatever the connection did.
            #expect(try await client.get("only-in-f") == nil)
            #expect(try await client.columnFamily("f").getString("only-in-f") == "1")
            let killed = try await client.withConnection { connection -> Int in
                let victim = try await client.withConnection { try await $0.clientID() }
                return victim == (try await connection.clientID()) ? 1 : try await connection.clientKill(id: victim)
            }
            #expect(killed == 1)
            // The killed connection is noticed and replaced.
            #expect(try await client.ping() == "PONG")
        }
    }

    @Test func shutdownStopsTheServer() async throws {
        let server = try CairndProcess()
        let client = CairnClient(port: server.port)
        defer { client.close() }
        try await client.set("k", "v")
        try await client.shutdown()
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)
    }
}
