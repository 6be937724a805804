import CairnTestSupport
import RESP
import Testing

@Suite struct ValueTests {
    @Test func writerFormsInBothVersions() {
        var w2 = RESPWriter(version: .v2)
        var w3 = RESPWriter(version: .v3)
        for w in [0, 1] {
            func each(_ body: (inout RESPWriter) -> Void) { if w == 0 { body(&w2) } else { body(&w3) } }
            each { $0.simpleString("OK") }
            each { $0.error("ERR bad\r\nthing") }
            each { $0.integer(-42) }
            each { $0.bulk("hi") }
            each { $0.null() }
            each { $0.nullArray() }
            each { $0.mapHeader(1) }
            each { $0.setHeader(2) }
            each { $0.double(3.5) }
            each { $0.boolean(true) }
            each { $0.verbatim(bytes("txt body")) }
        }
        #expect(String(decoding: w2.bytes, as: UTF8.self)
            == "+OK\r\n-ERR bad  thing\r\n:-42\r\n$2\r\nhi\r\n$-1\r\n*-1\r\n*2\r\n*2\r\n$3\r\n3.5\r\n:1\r\n$8\r\ntxt body\r\n")
        #expect(String(decoding: w3.bytes, as: UTF8.self)
            == "+OK\r\n-ERR bad  thing\r\n:-42\r\n$2\r\nhi\r\n_\r\n_\r\n%1\r\n~2\r\n,3.5\r\n#t\r\n=12\r\ntxt:txt body\r\n")
    }

    @Test func doubleText() {
        #expect(RESPWriter.doubleText(3.5) == "3.5")
        #expect(RESPWriter.doubleText(10) == "10")
        #expect(RESPWriter.doubleText(-0.1) == "-0.1")
        #expect(RESPWriter.doubleText(.infinity) == "inf")
        #expect(RESPWriter.doubleText(-.infinity) == "-inf")
        #expect(RESPWriter.doubleText(.nan) == "nan")
        #expect(Double(RESPWriter.doubleText(1e20)) == 1e20)
    }

    @Test func integersAtTheEdges() {
        var w = RESPWriter()
        w.integer(Int64.min)
        w.integer(Int64.max)
        w.integer(0)
        #expect(String(decoding: w.bytes, as: UTF8.self) == ":-9223372036854775808\r\n:9223372036854775807\r\n:0\r\n")
        // And they parse back: Int64.min's magnitude does not fit an Int64.
        var p = ValueParser()
        p.append(w.bytes + Array(":-9223372036854775809\r\n".utf8))
        #expect((try? p.next()) == .integer(Int64.min))
        #expect((try? p.next()) == .integer(Int64.max))
        #expect((try? p.next()) == .integer(0))
        #expect(throws: RESPProtocolError.self) { try p.next() }
    }

    /// Headers are composed on the stack and appended whole: the exact bytes for lengths of
    /// one, two and many digits, negative numbers, empty payloads and each payload form.
    @Test func headersAndBulkStringsAreExactBytes() {
        var w = RESPWriter()
        w.integer(-1)
        w.integer(9)
        w.integer(10)
        w.arrayHeader(0)
        w.arrayHeader(123)
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 1234)
        [UInt8]().withUnsafeBytes { w.bulk($0) }
        Array("abcdefghij".utf8).withUnsafeBytes { w.bulk($0) }
        long.withUnsafeBytes { w.bulk($0) }
        w.bulk(Array("ab".utf8))
        w.bulk(Array("xabcx".utf8)[1..<4])
        let expected = ":-1\r\n:9\r\n:10\r\n*0\r\n*123\r\n$0\r\n\r\n$10\r\nabcdefghij\r\n$1234\r\n"
            + String(repeating: "x", count: 1234) + "\r\n$2\r\nab\r\n$3\r\nabc\r\n"
        #expect(String(decoding: w.bytes, as: UTF8.self) == expected)
    }

    @Test func everyTypeParsesAnyWayItArrives() throws {
        let input = bytes("+OK\r\n-ERR x\r\n:5\r\n$3\r\nabc\r\n$-1\r\n*-1\r\n*2\r\n:1\r\n*1\r\n+a\r\n_\r\n,1.5\r\n,inf\r\n#f\r\n(123\r\n=7\r\ntxt:abc\r\n%1\r\n+k\r\n:1\r\n~1\r\n:2\r\n>1\r\n+p\r\n|1\r\n+ttl\r\n:3\r\n:9\r\n!5\r\nERR y\r\n")
        let expected: [RESPValue] = [
            .simpleString("OK"), .error("ERR x"), .integer(5), .bulkString(bytes("abc")), .null, .null,
            .array([.integer(1), .array([.simpleString("a")])]), .null, .double(1.5), .double(.infinity),
            .boolean(false), .bigNumber("123"), .verbatimString(format: "txt", text: bytes("abc")),
            .map([(key: .simpleString("k"), value: .integer(1))]), .set([.integer(2)]), .push([.simpleString("p")]),
            .integer(9), .error("ERR y"),
        ]
        for result in try SplitFeeding.values(input) {
            #expect(result == expected)
        }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        var parser = ValueParser()
        parser.append(Array(repeating: bytes("*1\r\n"), count: 10_000).flatMap { $0 } + bytes(":1\r\n"))
        #expect(throws: RESPProtocolError.self) { try parser.next() }
    }

    @Test func randomValuesRoundTrip() throws {
        var rng = SeededGenerator(seed: 42)
        for version in [RESPVersion.v2, .v3] {
            for _ in 0..<300 {
                let value = randomValue(&rng, depth: 0, version: version)
                var w = RESPWriter(version: version)
                w.write(value)
                var p = ValueParser()
                p.append(w.bytes)
                #expect(try p.next() == value)
            }
        }
    }

    func randomValue(_ rng: inout SeededGenerator, depth: Int, version: RESPVersion) -> RESPValue {
        let kinds = depth > 3 ? 4 : 6
        switch Int.random(in: 0..<kinds, using: &rng) {
        case 0: return .integer(Int64.random(in: Int64.min...Int64.max, using: &rng))
        case 1: return .bulkString((0..<Int.random(in: 0..<40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 2: return .simpleString("s\(Int.random(in: 0..<1000, using: &rng))")
        case 3: return .null
        case 4: return .array((0..<Int.random(in: 0..<5, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1, version: version) })
        default:
            if version == .v3 {
                return .map((0..<Int.random(in: 0..<3, using: &rng)).map { i in (key: .bulkString(bytes("k\(i)")), value: randomValue(&rng, depth: depth + 1, version: version)) })
            }
            return .error("ERR e\(Int.random(in: 0..<9, using: &rng))")
        }
    }
}
