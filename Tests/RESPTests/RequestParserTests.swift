import RESP
import Testing

@Suite struct RequestParserTests {
    @Test func multibulkAnyWayItArrives() throws {
        let input = bytes("*3\r\n$3\r\nSET\r\n$1\r\na\r\n$5\r\nhe\r\nl\r\n*1\r\n$4\r\nPING\r\n*0\r\n*2\r\n$3\r\nGET\r\n$0\r\n\r\n")
        for result in try SplitFeeding.requests(input) {
            #expect(result == [argv("SET", "a", "he\r\nl"), argv("PING"), argv("GET", "")])
        }
    }

    @Test func inlineAnyWayItArrives() throws {
        let input = bytes("SET a 1\r\nGET a\n\r\n  \nINCR   a\t\r\n")
        for result in try SplitFeeding.requests(input) {
            #expect(result == [argv("SET", "a", "1"), argv("GET", "a"), argv("INCR", "a")])
        }
    }

    @Test func inlineQuotingAsRedisCli() throws {
        let input = bytes(#"SET "a b" "x\x41\n\"q\"" 'it\'s' "tab\there""# + "\r\n")
        let result = try SplitFeeding.requests(input)
        for r in result {
            #expect(r == [[bytes("SET"), bytes("a b"), bytes("xA\n\"q\""), bytes("it's"), bytes("tab\there")]])
        }
    }

    @Test func unbalancedQuotes() {
        for line in [#"SET "abc"#, #"SET 'abc"#, #"SET "abc"def"#] {
            var parser = RequestParser()
            parser.append(bytes(line + "\r\n"))
            #expect(throws: RESPProtocolError("Protocol error: unbalanced quotes in request")) { try parser.next() }
        }
    }

    @Test func mixedInlineAndMultibulkPipeline() throws {
        var input: [UInt8] = []
        for i in 0..<10_000 {
            input += i % 2 == 0 ? bytes("PING\r\n") : RESPWriter.command(argv("ECHO", String(i)))
        }
        for result in try SplitFeeding.requests(input).prefix(2) {
            #expect(result.count == 10_000)
            #expect(result[9_999] == argv("ECHO", "9999"))
        }
    }

    @Test func limitsWithRedisErrorTexts() {
        var limits = RESPLimits()
        limits.maxBulkLength = 1000
        limits.maxMultibulkCount = 10
        limits.maxInlineLength = 100
        let cases: [(String, String)] = [
            ("*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1001\r\n", "Protocol error: invalid bulk length"),
            ("*11\r\n", "Protocol error: invalid multibulk length"),
            ("*-2x\r\n", "Protocol error: invalid multibulk length"),
            ("*1\r\n$-1\r\n", "Protocol error: invalid bulk length"),
            ("*1\r\n$abc\r\n", "Protocol error: invalid bulk length"),
            ("*2\r\n$3\r\nGET\r\n:1\r\n", "Protocol error: expected '$', got ':'"),
            (String(repeating: "x", count: 101), "Protocol error: too big inline request"),
        ]
        for (input, message) in cases {
            var parser = RequestParser(limits: limits)
            parser.append(bytes(input))
            #expect(throws: RESPProtocolError(message)) {
                while try parser.next() != nil {}
            }
        }
    }

    @Test func announcedHugeBulkAllocatesNothingUpFront() throws {
        var parser = RequestParser()
        parser.append(bytes("*2\r\n$3\r\nSET\r\n$536870000\r\n"))
        #expect(try parser.next() == nil)
        #expect(parser.bufferedByteCount < 100)
    }

    @Test func hundredMegabyteBulkInChunks() throws {
        let size = 100 * 1024 * 1024
        var parser = RequestParser()
        parser.append(bytes("*2\r\n$4\r\nECHO\r\n$\(size)\r\n"))
        let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
        var sent = 0
        while sent < size {
            parser.append(chunk)
            sent += chunk.count
            #expect(try parser.next() == nil)
        }
        parser.append(bytes("\r\n"))
        let request = try #require(try parser.next())
        #expect(request[1].count == size)
        #expect(parser.bufferedByteCount == 0)
    }
}
