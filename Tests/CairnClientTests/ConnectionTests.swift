import CairnClient
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
        do {
            _ = try await client.send(["INCR", "s"])
            Issue.record("INCR on text succeeded")
        } catch let error as CairnClientError {
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
        let commands: [[any RESPArgument]] = (0..<1000).map { ["SET", "p\($0)", $0] } + [["INCR", "p1"], ["LPUSH", "x", "y"], ["GET", "p1"]]
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
        config.initialBackoff = 0.01
        let client = CairnClient(configuration: config)
        defer { client.close() }
        await #expect(throws: CairnClientError.self) { try await client.send(["PING"]) }
        do {
            _ = try await client.send(["PING"])
        } catch let error as CairnClientError {
            #expect(error.code == .connection)
        }
    }
}
