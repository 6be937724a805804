@testable import CairnEngine
import CairnTestSupport
import RESP
import Testing

/// One door: a pipeline run through the grouped executors (`executePipeline`: GETs as one
/// MultiGet, writes run by their handlers over one transaction overlay and batch, MULTI/EXEC
/// and scripts between them) must answer exactly what the same requests answer run one at a
/// time through `execute`, leave the same data, and leave the same client record; so must a
/// round of many connections.
@Suite struct GroupedPathsTests {
    static func argv(_ words: [String]) -> [[UInt8]] { words.map { Array($0.utf8) } }

    /// A seeded mix of grouped and ungrouped requests over a few keys, with errors on purpose.
    static func requests(seed: UInt64, count: Int) -> [[[UInt8]]] {
        var rng = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c", "n", "m", "word"]
        func key() -> String { keys.randomElement(using: &rng)! }
        func number() -> String { ["1", "-3", "17", "x", "9223372036854775807", "-9223372036854775808"].randomElement(using: &rng)! }
        var out: [[[UInt8]]] = []
        for _ in 0..<count {
            let words: [String] = switch Int.random(in: 0..<34, using: &rng) {
            case 30: ["XADD", key(), "\(Int.random(in: 1..<4, using: &rng))-*", "f", number()]
            case 31: ["XDEL", key(), "1-0", "2-1"]
            case 32: ["XRANGE", key(), "-", "+"]
            case 33: ["XTRIM", key(), "MAXLEN", "\(Int.random(in: 0..<3, using: &rng))"]
            case 26: ["SADD", key(), "m\(Int.random(in: 0..<3, using: &rng))", "n"]
            case 27: ["SREM", key(), "m1"]
            case 28: ["ZADD", key(), number(), "m\(Int.random(in: 0..<3, using: &rng))"]
            case 29: ["ZINCRBY", key(), "2", "m0"]
            case 22: ["LPUSH", key(), number(), "e"]
            case 23: ["RPUSH", key(), "z"]
            case 24: ["LPOP", key()]
            case 25: ["LRANGE", key(), "0", "-1"]
            case 16, 17: ["HSET", key(), "f\(Int.random(in: 0..<3, using: &rng))", number()]
            case 18: ["HDEL", key(), "f0", "f1"]
            case 19: ["HINCRBY", key(), "f2", number()]
            case 20: ["HGETALL", key()]
            case 21: ["HSETNX", key(), "f1", "x"]
            case 0, 1, 2: ["GET", key()]
            case 3, 4: ["SET", key(), number()]
            case 5: ["MSET", key(), number(), key(), "v"]
            case 6: ["INCR", key()]
            case 7: ["DECR", key()]
            case 8: ["INCRBY", key(), number()]
            case 9: ["DECRBY", key(), number()]
            case 10: ["DEL", key()]
            case 11: ["SET", key(), "t", "EX", "1000"]
            case 12: ["APPEND", key(), "z"]
            case 13: ["MGET", key(), key()]
            case 14: ["MSET", key()]  // wrong number of arguments
            case 15 where Int.random(in: 0..<3, using: &rng) == 0:
                // A script reading and writing through the same door.
                ["EVAL", "redis.call('INCR', KEYS[1]); redis.call('HSET', KEYS[2], 'f', '1'); return redis.call('GET', KEYS[1])", "2", key(), key()]
            case 15 where Int.random(in: 0..<2, using: &rng) == 0:
                // A transaction: its writes queued, then run together by EXEC.
                ["MULTI"]
            default: ["EXISTS", key(), key()]
            }
            out.append(argv(words))
            if words == ["MULTI"] {
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let queued: [String] = switch Int.random(in: 0..<4, using: &rng) {
                    case 0: ["INCR", key()]
                    case 1: ["HSET", key(), "f0", number()]
                    case 2: ["SET", key(), number()]
                    default: ["LPUSH", key(), "q"]
                    }
                    out.append(argv(queued))
                }
                out.append(argv(["EXEC"]))
            }
        }
        return out
    }

    /// A seeded mix of the writes a poller round runs together (`Grouping.batched`), errors
    /// included (WRONGTYPE, not an integer, overflow).
    static func batchedWrites(seed: UInt64, count: Int) -> [[[UInt8]]] {
        var rng = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c", "n"]
        func key() -> String { keys.randomElement(using: &rng)! }
        func number() -> String { ["1", "-3", "x", "9223372036854775807"].randomElement(using: &rng)! }
        return (0..<count).map { _ in
            let words: [String] = switch Int.random(in: 0..<10, using: &rng) {
            case 0: ["SET", key(), number()]
            case 1: ["MSET", key(), number(), key(), "v"]
            case 2: ["INCR", key()]
            case 3: ["DECRBY", key(), number()]
            case 4: ["HSET", key(), "f\(Int.random(in: 0..<2, using: &rng))", number()]
            case 5: ["HINCRBY", key(), "f0", number()]
            case 6: ["LPUSH", key(), number()]
            case 7: ["LPOP", key()]
            case 8: ["SADD", key(), "m\(Int.random(in: 0..<2, using: &rng))"]
            default: ["ZADD", key(), number(), "m0"]
            }
            return argv(words)
        }
    }

    static func replies(_ bytes: [UInt8]) throws -> [RESPValue] {
        var parser = ValueParser()
        parser.append(bytes)
        var values: [RESPValue] = []
        while let v = try parser.next() { values.append(v) }
        return values
    }

    static func contents(_ h: EngineHarness) -> [String: RESPValue] {
        guard case .array(let keys) = h.run("KEYS", "*") else { return [:] }
        var out: [String: RESPValue] = [:]
        for case .bulkString(let k) in keys {
            let type = h.run([Array("TYPE".utf8), k])
            let read: [String] = switch type {
            case .simpleString("hash"): ["HGETALL"]
            case .simpleString("list"): ["LRANGE", "", "0", "-1"]
            case .simpleString("set"): ["SMEMBERS"]
            case .simpleString("zset"): ["ZRANGE", "", "0", "-1", "WITHSCORES"]
            default: ["GET"]
            }
            var argv = read.map { Array($0.utf8) }
            if argv.count > 1 { argv[1] = k } else { argv.append(k) }
            out[String(decoding: k, as: UTF8.self)] = h.run(argv)
        }
        return out
    }

    /// Runs `requests` as one pipeline on `pipelined` (the grouped executors) and one at a time
    /// on `alone`, and records every reply, and the data left, that differ.
    static func expectSameAnswers(_ requests: [[[UInt8]]], pipelined: EngineHarness, alone: EngineHarness) throws {
        var pipelinedOut = RESPWriter(version: .v2)
        pipelined.engine.executePipeline(requests, session: pipelined.session, out: &pipelinedOut)
        var aloneOut = RESPWriter(version: .v2)
        for r in requests { alone.engine.execute(r, session: alone.session, out: &aloneOut) }
        let a = try replies(pipelinedOut.bytes)
        let b = try replies(aloneOut.bytes)
        #expect(a.count == requests.count)
        for i in 0..<min(a.count, b.count) where a[i] != b[i] {
            Issue.record("request \(i) \(requests[i].map { String(decoding: $0, as: UTF8.self) }): pipelined \(a[i]), alone \(b[i])")
        }
        #expect(contents(pipelined) == contents(alone))
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func groupedAnswersAsAlone(seed: UInt64) throws {
        let requests = Self.requests(seed: seed, count: 400)
        let grouped = try EngineHarness()
        let alone = try EngineHarness()
        try Self.expectSameAnswers(requests, pipelined: grouped, alone: alone)
        #expect(grouped.engine.stats.commandsProcessed.value == alone.engine.stats.commandsProcessed.value)
    }

    /// A poller round of several connections (`executeBatched` of many runs, as the worker
    /// stages them) answers each connection what its requests answer run one at a time in
    /// staging order, connection after connection, and leaves the same data.
    @Test(arguments: [11, 12, 13, 14] as [UInt64])
    func roundsOfManyConnectionsAnswerAsAlone(seed: UInt64) throws {
        let round = try EngineHarness()
        let alone = try EngineHarness()
        let sessions = (round.session, [round.session] + (0..<3).map { _ in round.otherSession() })
        var rng = SeededGenerator(seed: seed)
        var requests = Self.batchedWrites(seed: seed, count: 600)[...]
        while !requests.isEmpty {
            // One round: each connection stages a run of 1 to 6 requests.
            var runs: [Engine.BatchedRun] = []
            for session in sessions.1 where !requests.isEmpty {
                let n = min(requests.count, Int.random(in: 1...6, using: &rng))
                for r in requests.prefix(n) { #expect(round.engine.grouping(r, session: session) == .batched, "\(r) runs in the round") }
                runs.append(Engine.BatchedRun(session: session, requests: Array(requests.prefix(n)), version: .v2))
                requests = requests.dropFirst(n)
            }
            let done = round.engine.executeBatched(runs)
            for (run, d) in zip(runs, done) {
                var out = RESPWriter(version: .v2)
                for r in run.requests { alone.engine.execute(r, session: alone.session, out: &out) }
                let a = try Self.replies(d.reply), b = try Self.replies(out.bytes)
                #expect(a == b, "\(run.requests.map { $0.map { String(decoding: $0, as: UTF8.self) } })")
            }
        }
        #expect(Self.contents(round) == Self.contents(alone))
        #expect(round.engine.stats.commandsProcessed.value == alone.engine.stats.commandsProcessed.value)
    }

    /// The grouped executors update the client record as `execute` does (CLIENT LIST's cmd=).
    @Test func groupedRequestsShowInTheClientRecord() throws {
        let h = try EngineHarness()
        var out = RESPWriter(version: .v2)
        h.engine.executePipeline([Self.argv(["SET", "k", "1"]), Self.argv(["SET", "k", "2"])], session: h.session, out: &out)
        #expect(h.session.record.state.withLock { $0.lastCommand } == "set")
        h.engine.executePipeline([Self.argv(["GET", "k"]), Self.argv(["GET", "k"])], session: h.session, out: &out)
        #expect(h.session.record.state.withLock { $0.lastCommand } == "get")
        h.engine.executePipeline([Self.argv(["INCR", "n"]), Self.argv(["DECRBY", "n", "3"])], session: h.session, out: &out)
        #expect(h.session.record.state.withLock { $0.lastCommand } == "decrby")
    }

    /// An expired key read by a grouped GET is deleted and counted, as a GET alone does.
    @Test func groupedGetsReapExpiredKeys() throws {
        let h = try EngineHarness()
        #expect(h.run("SET", "gone", "v", "PX", "1") == .ok)
        #expect(h.run("SET", "kept", "v") == .ok)
        // Wait without reading the key (a read would delete it first).
        let until = Clock.milliseconds() + 5
        while Clock.milliseconds() < until {}
        let before = h.engine.stats.expiredKeys.value
        var out = RESPWriter(version: .v2)
        h.engine.executePipeline([Self.argv(["GET", "gone"]), Self.argv(["GET", "kept"])], session: h.session, out: &out)
        #expect(try Self.replies(out.bytes) == [.null, .bulk("v")])
        #expect(h.engine.stats.expiredKeys.value == before + 1)
    }

    /// CF.DROP moves the dropping session to `default`, and CLIENT LIST says so.
    @Test func familyDropShowsInTheClientRecord() throws {
        let h = try EngineHarness()
        #expect(h.run("CF.CREATE", "tmp") == .ok)
        #expect(h.run("CF.USE", "tmp") == .ok)
        #expect(h.session.record.state.withLock { $0.family?.name } == "tmp")
        #expect(h.run("CF.DROP", "tmp") == .ok)
        #expect(h.session.family.name == "default")
        #expect(h.session.record.state.withLock { $0.family?.name } == "default")
    }
}
