import CairnEngine
import RESP
import Testing

/// SETs, MSETs and increments of many connections are written as one batch
/// (`executeBatched`): each reply must be what the request alone would answer, in order, and
/// one connection's failure must stay its own.
@Suite struct GroupedWriteTests {
    static func argv(_ words: String...) -> [[UInt8]] { words.map { Array($0.utf8) } }

    /// Writes `groups` (session, requests) as one batch and decodes every group's replies.
    func grouped(_ h: EngineHarness, _ groups: [(Session, [[[UInt8]]])]) throws -> [[RESPValue]] {
        for (session, requests) in groups {
            for r in requests { #expect(h.engine.grouping(r, session: session) == .batched, "\(r) takes the grouped path") }
        }
        let done = h.engine.executeBatched(groups.map { Engine.BatchedRun(session: $0.0, requests: $0.1, version: $0.0.protocolVersion) })
        return try done.map { d in
            var parser = ValueParser()
            parser.append(d.reply)
            var values: [RESPValue] = []
            while let v = try parser.next() { values.append(v) }
            return values
        }
    }

    static let requests: [[[UInt8]]] = [
        argv("SET", "a", "1"), argv("INCR", "a"), argv("INCRBY", "a", "x"), argv("INCR", "word"),
        argv("MSET", "b", "5", "c", "6"), argv("DECRBY", "b", "2"), argv("INCR", "new"), argv("DECR", "new"),
        argv("DECR", "new"), argv("SET", "new", "10"), argv("INCRBY", "new", "-3"), argv("INCR", "max"),
    ]

    @Test func groupedRepliesEqualRequestsRunAlone() throws {
        let alone = try EngineHarness()
        let batched = try EngineHarness()
        for h in [alone, batched] {
            h.run("SET", "word", "abc")
            h.run("SET", "max", String(Int64.max))
        }
        let singles = Self.requests.map { alone.run($0) }
        #expect(try grouped(batched, [(batched.session, Self.requests)]) == [singles])
        #expect(singles[1] == .integer(2) && singles[10] == .integer(7))
        for key in ["a", "b", "c", "new", "word", "max"] {
            #expect(batched.run("GET", key) == alone.run("GET", key), "\(key) ends the same")
        }
    }

    @Test func connectionsOfOneBatchEachSeeTheOthersInStagingOrder() throws {
        let h = try EngineHarness()
        let other = h.otherSession()
        let replies = try grouped(h, [
            (h.session, [Self.argv("INCR", "n"), Self.argv("INCR", "n")]),
            (other, [Self.argv("INCRBY", "n", "10"), Self.argv("SET", "n", "0"), Self.argv("INCR", "n")]),
            (h.session, [Self.argv("INCR", "n")]),
        ])
        #expect(replies == [[.integer(1), .integer(2)], [.integer(12), .ok, .integer(1)], [.integer(2)]])
        #expect(h.run("GET", "n") == .bulk("2"))
    }

    /// The batch reaches RocksDB sorted by key; a key written many times, in one MSET or by
    /// several connections, must still end with the write staged last, in each family.
    @Test func theLastWriteOfAKeyWinsWhateverTheKeyOrder() throws {
        let h = try EngineHarness()
        let other = h.otherSession()
        h.run("CF.CREATE", "side")
        h.run("CF.USE", "side", on: other)
        var groups: [(Session, [[[UInt8]]])] = []
        var last: [String: String] = [:]  // "family/key" -> value
        for round in 0..<4 {
            for (name, session) in [("default", h.session), ("side", other)] {
                var mset = ["MSET"]
                for i in (0..<12).reversed() {
                    let key = "k\((i * 5 + round) % 7)", value = "\(name)-\(round)-\(i)"
                    mset += [key, value]
                    last["\(name)/\(key)"] = value
                }
                groups.append((session, [mset.map { Array($0.utf8) }, Self.argv("INCR", "n\(round % 2)")]))
            }
        }
        let replies = try grouped(h, groups)
        #expect(replies.count == groups.count)
        for (name, session) in [("default", h.session), ("side", other)] {
            for k in 0..<7 {
                #expect(h.run("GET", "k\(k)", on: session) == .bulk(last["\(name)/k\(k)"]!), "k\(k) in \(name)")
            }
            #expect(h.run("GET", "n0", on: session) == .bulk("2") && h.run("GET", "n1", on: session) == .bulk("2"))
        }
    }

    @Test func incrementKeepsALiveTTLAndDropsAnExpiredOne() async throws {
        let h = try EngineHarness()
        h.run("SET", "live", "1", "EX", "100")
        h.run("SET", "gone", "1", "PX", "1")
        try await Task.sleep(for: .milliseconds(10))
        #expect(try grouped(h, [(h.session, [Self.argv("INCR", "live"), Self.argv("INCR", "gone")])]) == [[.integer(2), .integer(1)]])
        guard case .integer(let ttl) = h.run("TTL", "live") else { Issue.record("TTL is an integer"); return }
        #expect(ttl > 0 && ttl <= 100)
        #expect(h.run("TTL", "gone") == .integer(-1))
    }

    @Test func aFailedConnectionDoesNotFailTheOthersOfItsBatch() throws {
        let h = try EngineHarness()
        let other = h.otherSession()
        h.run("CF.CREATE", "doomed")
        h.run("CF.USE", "doomed", on: other)
        h.run("CF.DROP", "doomed")
        let replies = try grouped(h, [
            (other, [Self.argv("SET", "k", "v"), Self.argv("INCR", "n")]),
            (h.session, [Self.argv("SET", "k", "v"), Self.argv("INCR", "n")]),
        ])
        #expect(replies[1] == [.ok, .integer(1)])
        #expect(replies[0].count == 2)
        for reply in replies[0] {
            guard case .error(let message) = reply else { Issue.record("\(reply) is an error"); continue }
            #expect(message.contains("dropped"))
        }
        #expect(h.run("GET", "k") == .bulk("v"))
    }

    @Test func onlyPlainFormsTakeTheGroupedPath() throws {
        let h = try EngineHarness()
        let plain = { (argv: [[UInt8]], session: Session) in h.engine.grouping(argv, session: session) == .batched }
        #expect(!plain(Self.argv("SET", "k", "v", "EX", "10"), h.session))
        #expect(!plain(Self.argv("MSET", "k"), h.session))
        #expect(!plain(Self.argv("INCR", "k", "1"), h.session))
        #expect(!plain(Self.argv("INCRBY", "k"), h.session))
        #expect(!plain(Self.argv("INCRBYFLOAT", "k", "1"), h.session))
        #expect(plain(Self.argv("incrby", "k", "1"), h.session))
        guard case .integer(let id) = h.run("SNAPSHOT.CREATE") else { Issue.record("no snapshot id"); return }
        #expect(h.run("SNAPSHOT.USE", String(id)) == .ok)
        #expect(!plain(Self.argv("INCR", "k"), h.session), "increments through a snapshot read there")
        #expect(plain(Self.argv("SET", "k", "v"), h.session))
    }
}
