import CairnTestSupport
import Foundation
import Testing

/// The real binary over TCP: pipelining, split requests, inline commands, limits, shutdown.
@Suite(.serialized) struct CairndTests {
    @Test func inlineAndPipelined() throws {
        let server = try CairndProcess()
        let client = try RawClient(port: server.port)
        client.send("SET a 1\r\nGET a\r\nINCR a\nPING\r\n")
        let expected = "+OK\r\n$1\r\n1\r\n:2\r\n+PONG\r\n"
        #expect(String(decoding: client.receive(exactly: expected.utf8.count), as: UTF8.self) == expected)
    }

    @Test func requestSplitIntoSingleBytes() throws {
        let server = try CairndProcess()
        let client = try RawClient(port: server.port)
        for byte in Array("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n".utf8) {
            client.send([byte])
            usleep(200)
        }
        let expected = "+OK\r\n$5\r\nvalue\r\n"
        #expect(String(decoding: client.receive(exactly: expected.utf8.count), as: UTF8.self) == expected)
    }

    @Test func tenThousandPipelinedCommandsInOrder() throws {
        let server = try CairndProcess()
        let client = try RawClient(port: server.port)
        var request = ""
        var expected = ""
        for i in 0..<10_000 {
            request += "*2\r\n$4\r\nECHO\r\n$\(String(i).count)\r\n\(i)\r\n"
            expected += "$\(String(i).count)\r\n\(i)\r\n"
        }
        client.send(request)
        #expect(String(decoding: client.receive(exactly: expected.utf8.count), as: UTF8.self) == expected)
    }

    @Test func oversizedBulkClosesOnlyThatClient() throws {
        let server = try CairndProcess(arguments: ["--proto-max-bulk-len", "1mb"])
        let bystander = try RawClient(port: server.port)
        let offender = try RawClient(port: server.port)
        offender.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")
        let reply = String(decoding: offender.receiveUntilClosed(), as: UTF8.self)
        #expect(reply.hasPrefix("-ERR Protocol error: invalid bulk length"))
        bystander.send("PING\r\n")
        #expect(bystander.receive(exactly: 7) == Array("+PONG\r\n".utf8))
    }

    @Test func sigtermExitsCleanlyAndDataSurvives() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cairnd-\(UUID().uuidString)")
        var server: CairndProcess? = try CairndProcess(directory: directory)
        var client: RawClient? = try RawClient(port: server!.port)
        var request = ""
        for i in 0..<1000 { request += "SET key:\(i) value:\(i)\r\n" }
        client!.send(request)
        #expect(client!.receive(exactly: 5 * 1000).count == 5000)
        let (status, seconds) = server!.terminate()
        #expect(status == 0)
        #expect(seconds < 1.0)
        client = nil
        server = nil
        let restarted = try CairndProcess(directory: directory)
        let again = try RawClient(port: restarted.port)
        again.send("DBSIZE\r\nGET key:999\r\n")
        let expected = ":1000\r\n$9\r\nvalue:999\r\n"
        #expect(String(decoding: again.receive(exactly: expected.utf8.count), as: UTF8.self) == expected)
    }

    @Test func maxClientsRejectsWithRedisText() throws {
        let server = try CairndProcess(arguments: ["--maxclients", "2"])
        let a = try RawClient(port: server.port)
        let b = try RawClient(port: server.port)
        a.send("PING\r\n"); b.send("PING\r\n")
        _ = a.receive(exactly: 7); _ = b.receive(exactly: 7)
        let c = try RawClient(port: server.port)
        #expect(String(decoding: c.receiveUntilClosed(), as: UTF8.self) == "-ERR max number of clients reached\r\n")
    }
}
