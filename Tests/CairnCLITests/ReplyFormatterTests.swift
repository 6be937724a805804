import CairnCLIKit
import RESP
import Testing

/// Byte-exact against what redis-cli 7 prints for the same replies.
@Suite struct ReplyFormatterTests {
    func standard(_ v: RESPValue) -> String { String(decoding: ReplyFormatter.format(v, as: .standard), as: UTF8.self) }
    func raw(_ v: RESPValue) -> [UInt8] { ReplyFormatter.format(v, as: .raw) }
    func json(_ v: RESPValue) -> String { String(decoding: ReplyFormatter.format(v, as: .json), as: UTF8.self) }
    func bulk(_ s: String) -> RESPValue { .bulkString(Array(s.utf8)) }

    @Test func scalars() {
        #expect(standard(.simpleString("OK")) == "OK\n")
        #expect(standard(.integer(-42)) == "(integer) -42\n")
        #expect(standard(.null) == "(nil)\n")
        #expect(standard(.error("ERR unknown command 'FOO'")) == "(error) ERR unknown command 'FOO'\n")
        #expect(standard(bulk("hello")) == "\"hello\"\n")
        #expect(standard(.double(1.5)) == "(double) 1.5\n")
        #expect(standard(.boolean(true)) == "(true)\n")
        #expect(standard(.bigNumber("12345678901234567890")) == "(big number) 12345678901234567890\n")
    }

    @Test func quotingEscapesAsSdscatrepr() {
        let bytes: [UInt8] = [0x00, 0x7f, 0xe2, 0x82, 0xac, 34, 92, 10, 13, 9, 7, 8, 32, 126]
        #expect(ReplyFormatter.quoted(bytes) == #""\x00\x7f\xe2\x82\xac\"\\\n\r\t\a\b ~""#)
    }

    @Test func nestedArraysAreNumberedAndIndented() {
        let v: RESPValue = .array([.integer(1), .array([bulk("a"), .array([bulk("x")])]), .array([]), .null])
        #expect(standard(v) == """
            1) (integer) 1
            2) 1) "a"
               2) 1) "x"
            3) (empty array)
            4) (nil)

            """)
    }

    @Test func indexesAreRightAlignedAndWidenTheIndent() {
        var items = (1...9).map { RESPValue.integer(Int64($0)) }
        items.append(.array([bulk("a"), bulk("b")]))
        let lines = standard(.array(items)).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[0] == " 1) (integer) 1")
        #expect(lines[9] == "10) 1) \"a\"")
        #expect(lines[10] == "    2) \"b\"")
    }

    @Test func mapsAndSets() {
        let m: RESPValue = .map([(bulk("a"), .integer(1)), (bulk("b"), .array([bulk("x"), bulk("y")]))])
        #expect(standard(m) == "1# \"a\" => (integer) 1\n2# \"b\" => 1) \"x\"\n   2) \"y\"\n")
        #expect(standard(.set([bulk("x")])) == "1~ \"x\"\n")
        #expect(standard(.map([])) == "(empty hash)\n")
        #expect(standard(.set([])) == "(empty set)\n")
    }

    @Test func rawPrintsBytesOnePerLine() {
        #expect(raw(bulk("a b\n")) == Array("a b\n\n".utf8))
        #expect(raw(.array([bulk("a"), .null, .integer(3), .array([bulk("x"), bulk("y")])])) == Array("a\n\n3\nx\ny\n".utf8))
        #expect(raw(.null) == [10])
        #expect(raw(.bulkString([0xff, 0])) == [0xff, 0, 10])
        #expect(raw(.error("ERR x")) == Array("ERR x\n".utf8))
        #expect(raw(.map([(bulk("proto"), .integer(3)), (bulk("modules"), .array([]))])) == Array("proto 3\nmodules \n".utf8))
    }

    @Test func json() {
        #expect(json(.array([bulk("héllo"), .integer(1), .null, .simpleString("OK")])) == "[\"héllo\",1,null,\"OK\"]\n")
        #expect(json(.error("ERR bad")) == "{\"error\":\"ERR bad\"}\n")
        #expect(json(bulk("a\"b\\c\n\u{01}")) == #""a\"b\\c\n\u0001""# + "\n")
        #expect(json(.bulkString([0x61, 0xff])) == #""a\u00ff""# + "\n")
        #expect(json(.map([(bulk("k"), .boolean(true)), (.integer(2), .double(.infinity))])) == "{\"k\":true,\"2\":\"inf\"}\n")
        #expect(json(.double(2.5)) == "2.5\n")
    }
}
