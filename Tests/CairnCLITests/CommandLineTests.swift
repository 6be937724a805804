import CairnCLIKit
import RESP
import Testing

@Suite struct CommandLineTests {
    /// cairn-cli splits lines with RESP's InlineSplitter (sdssplitargs), as redis-cli does.
    @Test func linesSplitWithRedisCliQuoting() {
        let words = InlineSplitter.split(Array(#"set "a b" 'it\'s' "\x41\n" plain"#.utf8))
        #expect(words == [Array("set".utf8), Array("a b".utf8), Array("it's".utf8), [0x41, 10], Array("plain".utf8)])
        #expect(InlineSplitter.split(Array(#"get "open"#.utf8)) == nil)
    }

    @Test func adminSubcommandsAreLowerCaseWords() throws {
        #expect(try AdminCommand.parse(["backup", "list"]) == .backupList)
        #expect(try AdminCommand.parse(["backup", "create"]) == .backupCreate)
        #expect(try AdminCommand.parse(["backup", "verify", "3", "--quick"]) == .backupVerify(id: 3, quick: true))
        #expect(try AdminCommand.parse(["backup", "restore", "latest"]) == .backupRestore(id: nil))
        #expect(try AdminCommand.parse(["backup", "restore", "4"]) == .backupRestore(id: 4))
        #expect(try AdminCommand.parse(["backup", "purge", "--keep", "2"]) == .backupPurge(keep: 2))
        #expect(try AdminCommand.parse(["info"]) == .info(section: nil))
        #expect(try AdminCommand.parse(["info", "rocksdb"]) == .info(section: "rocksdb"))
        #expect(try AdminCommand.parse(["scan", "--match", "user:*", "--cf", "users"])
                == .scan(match: "user:*", count: nil, type: nil, family: "users"))
        #expect(try AdminCommand.parse(["range", "[a", "(c", "--rev", "--limit", "5"])
                == .range(start: "[a", end: "(c", reverse: true, limit: 5, keysOnly: false, family: nil))
        #expect(try AdminCommand.parse(["range", "-", "+", "REV", "limit", "3", "KEYSONLY"])
                == .range(start: "-", end: "+", reverse: true, limit: 3, keysOnly: true, family: nil))
    }

    @Test func otherWordsAreRawCommands() throws {
        #expect(try AdminCommand.parse(["INFO"]) == nil)
        #expect(try AdminCommand.parse(["BACKUP.LIST"]) == nil)
        #expect(try AdminCommand.parse(["get", "k"]) == nil)
        #expect(try AdminCommand.parse(["SCAN", "0"]) == nil)
    }

    @Test func malformedSubcommandsExplainThemselves() {
        for words in [["backup", "verify"], ["backup", "verify", "x"], ["backup", "frobnicate"], ["backup", "purge"], ["range", "a"]] {
            #expect(throws: (any Error).self) { try AdminCommand.parse(words) }
        }
        do {
            _ = try AdminCommand.parse(["backup", "verify"])
        } catch {
            #expect(AdminCommand.message(for: error, words: ["backup", "verify"]).text.contains("needs a backup id"))
        }
    }

    @Test func rangeBounds() {
        #expect(RangeBoundText.parse("-").key == nil)
        #expect(RangeBoundText.parse("+").key == nil)
        #expect(RangeBoundText.parse("[a").inclusive && RangeBoundText.parse("[a").key == Array("a".utf8))
        #expect(!RangeBoundText.parse("(a").inclusive)
        #expect(RangeBoundText.parse("user:").inclusive && RangeBoundText.parse("user:").key == Array("user:".utf8))
    }

    /// COMMAND DOCS as Redis 7 and Cairn give it (RESP3): the syntax comes from `arguments`.
    @Test func syntaxFromCommandDocsArguments() {
        func b(_ s: String) -> RESPValue { .bulkString(Array(s.utf8)) }
        func arg(_ fields: [(String, RESPValue)]) -> RESPValue { .map(fields.map { (key: b($0.0), value: $0.1) }) }
        let optional = RESPValue.set([.simpleString("optional")])
        let reply: RESPValue = .map([(key: b("set"), value: .map([
            (key: b("summary"), value: b("Sets a key.")), (key: b("since"), value: b("1.0.0")), (key: b("group"), value: b("string")),
            (key: b("arguments"), value: .array([
                arg([("name", b("key")), ("type", b("key")), ("key_spec_index", .integer(0))]),
                arg([("name", b("value")), ("type", b("string"))]),
                arg([("name", b("condition")), ("type", b("oneof")), ("flags", optional), ("arguments", .array([
                    arg([("name", b("nx")), ("type", b("pure-token")), ("token", b("NX"))]),
                    arg([("name", b("xx")), ("type", b("pure-token")), ("token", b("XX"))]),
                ]))]),
                arg([("name", b("seconds")), ("type", b("integer")), ("token", b("EX")), ("flags", optional)]),
                arg([("name", b("field")), ("type", b("string")), ("flags", .set([.simpleString("multiple")]))]),
            ])),
        ]))])
        let docs = CommandDoc.parse(reply)
        #expect(docs.first?.syntax == "key value [NX|XX] [EX seconds] field [field ...]")
        #expect(CommandHelp.text(for: ["set"], in: docs)?.hasPrefix("\n  SET key value [NX|XX]") == true)
    }

    /// COMMAND DOCS in RESP2: a flat array of name, [field, value, ...].
    @Test func helpFromCommandDocs() {
        func b(_ s: String) -> RESPValue { .bulkString(Array(s.utf8)) }
        let reply: RESPValue = .array([
            b("set"), .array([b("summary"), b("Sets the string value of a key."), b("since"), b("1.0.0"),
                              b("group"), b("string"), b("syntax"), b("key value [NX | XX]")]),
            b("config"), .array([b("summary"), b("A container."), b("since"), b("2.0.0"), b("group"), b("server"),
                                 b("syntax"), b(""), b("subcommands"),
                                 .array([b("config|get"), .array([b("summary"), b("Returns config."), b("since"), b("2.0.0"),
                                                                  b("group"), b("server"), b("syntax"), b("parameter")])])]),
        ])
        let docs = CommandDoc.parse(reply)
        #expect(docs.map(\.name) == ["SET", "CONFIG"])
        #expect(docs[1].subcommands.map(\.name) == ["CONFIG GET"])
        #expect(CommandHelp.text(for: ["set"], in: docs)
                == "\n  SET key value [NX | XX]\n  summary: Sets the string value of a key.\n  since: 1.0.0\n  group: string\n\n")
        #expect(CommandHelp.text(for: ["config", "get"], in: docs)?.contains("CONFIG GET parameter") == true)
        #expect(CommandHelp.text(for: ["config"], in: docs)?.contains("CONFIG GET parameter") == true)
        #expect(CommandHelp.text(for: ["@string"], in: docs)?.contains("SET key value") == true)
        #expect(CommandHelp.text(for: ["nosuch"], in: docs) == nil)
        #expect(CommandHelp.text(for: [], in: docs) == CommandHelp.overview)
    }
}
