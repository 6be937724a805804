@testable import CairnEngine
import CairnTestSupport
import RESP
import Testing

/// ZPOPMIN and ZPOPMAX run batched (`Engine.executeBatched`): a run of pops moves its
/// transaction's popped-front bound, shared once the batch committed (`PoppedFronts`). They
/// must answer and leave exactly what the same pops alone do, including when a write of the
/// same batch puts a member back below the bound.
@Suite struct GroupedPopsTests {
    static func argv(_ words: [String]) -> [[UInt8]] { words.map { Array($0.utf8) } }

    static func pipeline(_ h: EngineHarness, _ requests: [[String]], session: Session? = nil) throws -> [RESPValue] {
        var out = RESPWriter(version: .v2)
        h.engine.executePipeline(requests.map(argv), session: session ?? h.session, out: &out)
        return try GroupedPathsTests.replies(out.bytes)
    }

    static func alone(_ h: EngineHarness, _ requests: [[String]]) -> [RESPValue] {
        requests.map { h.run(argv($0)) }
    }

    static func filled(members: Int) throws -> EngineHarness {
        let h = try EngineHarness()
        var zadd = ["ZADD", "z"]
        for i in 0..<members { zadd += ["\(i % 7)", "m\(i)"] }
        h.run(argv(zadd))
        return h
    }

    @Test func popsOfOneKeyInOneBatchAnswerAsAlone() throws {
        let grouped = try Self.filled(members: 40)
        let alone = try Self.filled(members: 40)
        let requests: [[String]] = Array(repeating: ["ZPOPMIN", "z"], count: 10) + [["ZPOPMAX", "z", "3"]]
            + Array(repeating: ["ZPOPMIN", "z"], count: 5)
        #expect(try Self.pipeline(grouped, requests) == Self.alone(alone, requests))
        // The bound the batch published: later pops, alone, carry on where it ended.
        let after: [[String]] = [["ZPOPMIN", "z", "2"], ["ZPOPMAX", "z"], ["ZCARD", "z"]]
        #expect(Self.alone(grouped, after) == Self.alone(alone, after))
        #expect(GroupedPathsTests.contents(grouped) == GroupedPathsTests.contents(alone))
    }

    @Test func aMemberPutBackBelowTheBoundInTheSameBatchIsPopped() throws {
        let grouped = try Self.filled(members: 20)
        let alone = try Self.filled(members: 20)
        let requests: [[String]] = [
            ["ZPOPMIN", "z"], ["ZPOPMIN", "z"], ["ZADD", "z", "-1", "back"], ["ZPOPMIN", "z"], ["ZPOPMIN", "z"],
            ["ZPOPMAX", "z"], ["ZADD", "z", "100", "top"], ["ZPOPMAX", "z"], ["ZINCRBY", "z", "-50", "m3"], ["ZPOPMIN", "z", "2"],
        ]
        #expect(try Self.pipeline(grouped, requests) == Self.alone(alone, requests))
        // After the batch, alone: a put-back below the published bound is still found.
        let after: [[String]] = [["ZADD", "z", "-5", "low"], ["ZPOPMIN", "z"], ["ZADD", "z", "999", "high"], ["ZPOPMAX", "z"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"]]
        #expect(Self.alone(grouped, after) == Self.alone(alone, after))
    }

    /// A transaction that does not commit (EXEC whose WATCH fired runs nothing; a script's
    /// error keeps its earlier writes, as Redis does) leaves no bound past live members.
    @Test func popsInsideExecAndScriptsPublishOnlyWhatCommitted() throws {
        let h = try Self.filled(members: 10)
        h.run("MULTI")
        h.run("ZPOPMIN", "z", "3")
        h.run("ZADD", "z", "-1", "again")
        h.run("ZPOPMIN", "z")
        #expect(h.run("EXEC") == .array([
            .array([.bulk("m0"), .bulk("0"), .bulk("m7"), .bulk("0"), .bulk("m1"), .bulk("1")]), .integer(1), .array([.bulk("again"), .bulk("-1")]),
        ]))
        #expect(h.run("ZPOPMIN", "z") == .array([.bulk("m8"), .bulk("1")]))
        #expect(h.run("EVAL", "redis.call('ZPOPMIN', KEYS[1]); redis.call('ZADD', KEYS[1], 0, 'zero'); return redis.call('ZPOPMIN', KEYS[1])", "1", "z")
            == .array([.bulk("zero"), .bulk("0")]))
        #expect(h.run("ZRANGE", "z", "0", "0") == .array([.bulk("m9")]))
    }

    /// Several clients popping one key in one poller round: one batch, each answered in turn.
    @Test func popsOfSeveralClientsInOneRound() throws {
        let grouped = try Self.filled(members: 60)
        let alone = try Self.filled(members: 60)
        let sessions = [grouped.session, grouped.otherSession(), grouped.otherSession()]
        let perClient: [[[String]]] = [
            [["ZPOPMIN", "z"], ["ZPOPMIN", "z"], ["ZADD", "z", "-2", "x"]],
            [["ZPOPMIN", "z", "2"], ["ZPOPMAX", "z"]],
            [["ZPOPMIN", "z"], ["ZREM", "z", "m20"], ["ZPOPMIN", "z"]],
        ]
        let runs = zip(sessions, perClient).map { Engine.BatchedRun(session: $0, requests: $1.map(Self.argv), version: .v2) }
        let results = grouped.engine.executeBatched(runs)
        var expected: [RESPValue] = []
        for requests in perClient { expected += Self.alone(alone, requests) }
        var got: [RESPValue] = []
        for r in results { got += try GroupedPathsTests.replies(r.reply) }
        #expect(got == expected)
        let after: [[String]] = [["ZPOPMIN", "z", "3"], ["ZPOPMAX", "z", "2"], ["ZCARD", "z"]]
        #expect(Self.alone(grouped, after) == Self.alone(alone, after))
        #expect(GroupedPathsTests.contents(grouped) == GroupedPathsTests.contents(alone))
    }

    /// SPOP runs batched too: its picks are random, so check what it must keep, for a set read
    /// whole and for one past `RandomMembers.readAllLimit` (random probes, then the front).
    @Test(arguments: [50, 5000]) func setPopsInOneBatchTakeDistinctMembers(members: Int) throws {
        let h = try EngineHarness()
        let all = Set((0..<members).map { "m\($0)" })
        h.run(Self.argv(["SADD", "s"] + all.sorted()))
        let requests: [[String]] = Array(repeating: ["SPOP", "s"], count: 20) + [["SPOP", "s", "15"], ["SADD", "s", "extra"], ["SPOP", "s", "3"]]
        let replies = try Self.pipeline(h, requests)
        var popped: [String] = []
        for r in replies {
            switch r {
            case .bulkString(let m): popped.append(String(decoding: m, as: UTF8.self))
            case .array(let ms): for case .bulkString(let m) in ms { popped.append(String(decoding: m, as: UTF8.self)) }
            default: break
            }
        }
        #expect(replies[21] == .integer(1))
        #expect(popped.count == 38)
        #expect(Set(popped).count == popped.count)
        #expect(Set(popped.prefix(35)).isSubset(of: all))
        let expected = all.union(["extra"]).subtracting(popped)
        guard case .array(let left) = h.run("SMEMBERS", "s") else { Issue.record("no members"); return }
        #expect(Set(left.compactMap { if case .bulkString(let m) = $0 { String(decoding: m, as: UTF8.self) } else { nil } }) == expected)
        #expect(h.run("SCARD", "s") == .integer(Int64(expected.count)))
    }

    /// List pops in a batch read their elements with the transaction's kept cursor: random
    /// pipelines of pops from both ends and pushes to both ends, grouped against alone.
    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func randomPipelinesOfListPops(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let grouped = try EngineHarness()
        let alone = try EngineHarness()
        let fill = Self.argv(["RPUSH", "l"] + (0..<30).map { "e\($0)" })
        grouped.run(fill)
        alone.run(fill)
        for _ in 0..<12 {
            var requests: [[String]] = []
            for _ in 0..<Int.random(in: 1...24, using: &rng) {
                let element = "x\(Int.random(in: 0..<100, using: &rng))"
                let request: [String] = switch Int.random(in: 0..<10, using: &rng) {
                case 0, 1, 2: ["LPOP", "l"]
                case 3, 4: ["RPOP", "l"]
                case 5: ["LPOP", "l", "\(Int.random(in: 0...4, using: &rng))"]
                case 6: ["RPOP", "l", "\(Int.random(in: 0...4, using: &rng))"]
                case 7: ["LPUSH", "l", element]
                case 8: ["RPUSH", "l", element, element + "b"]
                default: ["LSET", "l", "0", element]
                }
                requests.append(request)
            }
            let a = try Self.pipeline(grouped, requests)
            let b = Self.alone(alone, requests)
            #expect(a == b, "\(requests)")
        }
        #expect(GroupedPathsTests.contents(grouped) == GroupedPathsTests.contents(alone))
    }

    /// Random pipelines of pops and writes on one sorted set, grouped against alone.
    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func randomPipelinesOfPops(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let grouped = try Self.filled(members: 30)
        let alone = try Self.filled(members: 30)
        for _ in 0..<10 {
            var requests: [[String]] = []
            for _ in 0..<Int.random(in: 1...24, using: &rng) {
                let score = "\(Int.random(in: -3...9, using: &rng))"
                let member = "m\(Int.random(in: 0..<40, using: &rng))"
                let request: [String] = switch Int.random(in: 0..<12, using: &rng) {
                case 0, 1, 2, 3: ["ZPOPMIN", "z"]
                case 4, 5: ["ZPOPMAX", "z"]
                case 6: ["ZPOPMIN", "z", "\(Int.random(in: 0...3, using: &rng))"]
                case 7, 8: ["ZADD", "z", score, member]
                case 9: ["ZREM", "z", member]
                case 10: ["ZINCRBY", "z", score, member]
                default: ["ZRANGE", "z", "0", "2", "WITHSCORES"]
                }
                requests.append(request)
            }
            let a = try Self.pipeline(grouped, requests)
            let b = Self.alone(alone, requests)
            #expect(a == b, "\(requests)")
        }
        #expect(GroupedPathsTests.contents(grouped) == GroupedPathsTests.contents(alone))
    }
}
