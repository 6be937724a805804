import RESP
import Testing

/// Redis 7's limits on requests from a client that has not authenticated (networking.c,
/// `processMultibulkBuffer`): at most 10 arguments, each at most 16 KiB.
@Suite struct UnauthenticatedLimitsTests {
    @Test func bigBulkRefusedAtItsHeader() {
        var parser = RequestParser()
        parser.unauthenticated = true
        parser.append(bytes("*2\r\n$3\r\nSET\r\n$536870912\r\n"))
        #expect(throws: RESPProtocolError("Protocol error: unauthenticated bulk length")) { try parser.next() }
    }

    @Test func longMultibulkRefused() {
        var parser = RequestParser()
        parser.unauthenticated = true
        parser.append(bytes("*11\r\n"))
        #expect(throws: RESPProtocolError("Protocol error: unauthenticated multibulk length")) { try parser.next() }
    }

    @Test func authAndHelloFitTheLimits() throws {
        var parser = RequestParser()
        parser.unauthenticated = true
        let password = String(repeating: "p", count: 16384)
        parser.append(RESPWriter.command(argv("HELLO", "3", "AUTH", "default", password, "SETNAME", "n")))
        #expect(try parser.next() == argv("HELLO", "3", "AUTH", "default", password, "SETNAME", "n"))
    }

    @Test func limitsLiftOnceAuthenticated() throws {
        var parser = RequestParser()
        parser.unauthenticated = true
        let value = String(repeating: "v", count: 20000)
        parser.append(RESPWriter.command(argv("AUTH", "pw")) + RESPWriter.command(argv("SET", "k", value)))
        #expect(try parser.next() == argv("AUTH", "pw"))
        parser.unauthenticated = false
        #expect(try parser.next() == argv("SET", "k", value))
    }
}
