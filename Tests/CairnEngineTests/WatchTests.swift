import CairnEngine
import RESP
import Testing

/// WATCH fires on a real change of a watched key, whichever path wrote it, and on nothing else.
@Suite struct WatchTests {
    static func argv(_ words: String...) -> [[UInt8]] { words.map { Array($0.utf8) } }

    /// WATCHes `key` on the harness's session, runs `change`, then MULTI / SET / EXEC: true when
    /// EXEC committed.
    func commits(_ h: EngineHarness, watching key: String, after change: () -> Void) -> Bool {
        #expect(h.run("WATCH", key) == .ok)
        change()
        h.run("MULTI")
        h.run("SET", key, "from-watcher")
        return h.run("EXEC") != .null
    }

    @Test func groupedWritesFireOnlyTheirKeys() throws {
        let h = try EngineHarness()
        let other = h.otherSession()
        h.run("SET", "w", "1")
        h.run("SET", "n", "1")
        let unrelated = commits(h, watching: "w") {
            _ = h.engine.executeBatched([Engine.BatchedRun(session: other, requests: [Self.argv("SET", "elsewhere", "x"), Self.argv("INCR", "n")], version: .v2)])
        }
        #expect(unrelated)
        let set = commits(h, watching: "w") {
            _ = h.engine.executeBatched([Engine.BatchedRun(session: other, requests: [Self.argv("MSET", "a", "1", "w", "2")], version: .v2)])
        }
        #expect(!set)
        let incr = commits(h, watching: "n") {
            _ = h.engine.executeBatched([Engine.BatchedRun(session: other, requests: [Self.argv("INCR", "n")], version: .v2)])
        }
        #expect(!incr)
        // An increment that fails (not an integer) writes nothing.
        h.run("SET", "w", "text")
        let failed = commits(h, watching: "w") {
            _ = h.engine.executeBatched([Engine.BatchedRun(session: other, requests: [Self.argv("INCR", "w")], version: .v2)])
        }
        #expect(failed)
    }

    @Test func transactionsFireOnlyWhenTheyWrite() throws {
        let h = try EngineHarness()
        let other = h.otherSession()
        h.run("SET", "w", "1")
        let empty = commits(h, watching: "w") {
            h.run("MULTI", on: other)
            h.run("EXEC", on: other)
        }
        #expect(empty)
        var readOnlyReplies: RESPValue = .null
        let readOnly = commits(h, watching: "w") {
            h.run("MULTI", on: other)
            h.run("GET", "w", on: other)
            h.run("SET", "w", "9", "NX", on: other)
            readOnlyReplies = h.run("EXEC", on: other)
        }
        #expect(readOnly)
        #expect(readOnlyReplies == .array([.bulk("from-watcher"), .null]))
        let discarded = commits(h, watching: "w") {
            h.run("MULTI", on: other)
            h.run("SET", "w", "9", on: other)
            h.run("DISCARD", on: other)
        }
        #expect(discarded)
        let deleting = commits(h, watching: "w") {
            h.run("MULTI", on: other)
            h.run("DEL", "w", on: other)
            h.run("EXEC", on: other)
        }
        #expect(!deleting)
        // A FLUSHDB inside another client's EXEC fires every watch.
        h.run("SET", "w", "1")
        let flushing = commits(h, watching: "w") {
            h.run("MULTI", on: other)
            h.run("FLUSHDB", on: other)
            h.run("EXEC", on: other)
        }
        #expect(!flushing)
    }
}
