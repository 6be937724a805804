@testable import CairnEngine
import RESP
import Testing

/// The command table and the command spec (`spec/commands/*.json`) describe the same commands:
/// a handler bound to a name the spec lacks, or a spec entry no handler answers, fails here.
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
}
