@testable import CairnEngine
import RESP
import Testing

/// The command table and the command spec (`spec/commands/*.json`) describe the same commands:
/// a handler bound to a name the spec lacks, or a spec entry no handler answers, fails here.
/// The COMMAND replies themselves are compared with redis-server's by
/// Tests/integration/test_command_spec.py.
@Suite struct CommandSpecTests {
    @Test func everySpecEntryHasAHandlerAndEveryHandlerAnEntry() {
        let table = CommandTable.standard
        #expect(table.unspecified == [], "handlers whose command the spec lacks")
        #expect(table.unbound == [], "spec entries that no handler answers")
        #expect(CommandSpec.named.count == CommandSpec.all.count, "one entry per name")
    }

    @Test func theTableTakesItsFactsFromTheSpec() throws {
        let table = CommandTable.standard
        let get = try #require(table.find("get"))
        #expect(get.arity == 2 && get.flags == [.readonly, .fast] && (get.firstKey, get.lastKey, get.keyStep) == (1, 1, 1))
        #expect(get.aclCategories == [.read, .string, .fast] && get.group == "string" && get.arguments == "key")
        let eval = try #require(table.find("eval"))
        #expect(eval.flags.isSuperset(of: [.noscript, .skipMonitor, .noMandatoryKeys, .movableKeys, .mayReplicate, .long]))
        #expect(eval.flags.names == ["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"])
        let publish = try #require(table.find("publish"))
        #expect(publish.flags.names == ["pubsub", "loading", "stale", "fast"])
        let zunionstore = try #require(table.find("zunionstore"))
        #expect(zunionstore.flags.names == ["write", "denyoom", "movablekeys"])
        #expect(zunionstore.aclCategories == [.write, .sortedset, .slow])
        // Cairn's own switches are not Redis flags: COMMAND INFO does not print them.
        let compact = try #require(table.find("compact"))
        #expect(compact.flags.contains(.long) && !compact.flags.names.contains("long"))
        #expect(try #require(table.find("set")).arguments
                == "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]")
    }

    @Test func keysAsRedisFindsThem() throws {
        func keys(_ words: String...) -> [String]? {
            let argv = words.map { Array($0.utf8) }
            guard let spec = CommandSpec.named[words[0].lowercased()] else { return nil }
            return spec.keys(in: argv).map { String(decoding: argv[$0.position], as: UTF8.self) + " " + $0.flags.names.joined(separator: ",") }
        }
        #expect(keys("mset", "a", "1", "b", "2") == ["a OW,update", "b OW,update"])
        #expect(keys("eval", "return 1", "2", "k1", "k2", "arg") == ["k1 RW,access,update", "k2 RW,access,update"])
        #expect(keys("eval", "return 1", "0") == [], "numkeys 0: none")
        #expect(keys("eval", "return 1", "5", "k") == [], "more keys than arguments: none")
        #expect(keys("zunionstore", "dst", "2", "a", "b") == ["dst OW,update", "a RO,access", "b RO,access"])
        #expect(keys("set", "k", "v", "GET") == ["k RW,access,update"])
        #expect(keys("set", "k", "v") == ["k OW,update"])
        #expect(keys("sort", "src", "LIMIT", "0", "1", "STORE", "dst") == ["src RO,access", "dst OW,update"])
        #expect(keys("migrate", "h", "1", "", "0", "5", "KEYS", "a", "b") == ["a RW,access,delete", "b RW,access,delete"])
        #expect(keys("georadius", "g", "0", "0", "1", "km", "STORE", "dst") == ["g RO,access", "dst OW,update"])
        #expect(keys("bitfield", "k", "GET", "u8", "0") == ["k RO,access"])
    }
}
