import CairnEngine
import CairnTestSupport
import RESP
import Testing

/// SINTER, SUNION, SDIFF, their STORE forms and SINTERCARD merge the sets' sorted member streams
/// (SetAlgebra.swift): compared with Swift's Set on random sets, alone and inside EXEC (where a
/// set changed earlier in the transaction is read through its overlay).
@Suite struct SetAlgebraTests {
    static func members(_ value: RESPValue) -> Set<String> {
        guard case .array(let items) = value else { return [] }
        return Set(items.compactMap { if case .bulkString(let b) = $0 { String(decoding: b, as: UTF8.self) } else { nil } })
    }

    static func sorted(_ value: RESPValue) -> [String] {
        guard case .array(let items) = value else { return [] }
        return items.compactMap { if case .bulkString(let b) = $0 { String(decoding: b, as: UTF8.self) } else { nil } }
    }

    @Test func agreesWithSwiftSetsOnRandomSets() throws {
        let h = try EngineHarness()
        var rng = SeededGenerator(seed: 11)
        for round in 0..<60 {
            var model: [String: Set<String>] = [:]
            h.run("DEL", "a", "b", "c")
            for key in ["a", "b", "c"] {
                // Sometimes missing, sometimes small against big (the lookup path), mostly alike.
                let size = Int.random(in: 0...(round % 5 == 0 ? 400 : 60), using: &rng)
                let members = Set((0..<size).map { _ in "m\(Int.random(in: 0..<(round % 5 == 0 ? 800 : 90), using: &rng))" })
                model[key] = members
                if !members.isEmpty { h.run(["SADD", key].map { Array($0.utf8) } + members.map { Array($0.utf8) }) }
            }
            let (a, b, c) = (model["a"]!, model["b"]!, model["c"]!)
            let inter = a.intersection(b).intersection(c), union = a.union(b).union(c), diff = a.subtracting(b).subtracting(c)
            #expect(Self.members(h.run("SINTER", "a", "b", "c")) == inter)
            #expect(Self.members(h.run("SUNION", "a", "b", "c")) == union)
            #expect(Self.members(h.run("SDIFF", "a", "b", "c")) == diff)
            #expect(Self.sorted(h.run("SUNION", "a", "b", "c")) == union.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
            #expect(h.run("SINTERCARD", "3", "a", "b", "c") == .integer(Int64(inter.count)))
            #expect(h.run("SINTERCARD", "2", "a", "b", "LIMIT", "3") == .integer(Int64(min(3, a.intersection(b).count))))
            #expect(h.run("SUNIONSTORE", "d", "a", "b", "c") == .integer(Int64(union.count)))
            #expect(Self.members(h.run("SMEMBERS", "d")) == union)
            #expect(h.run("SDIFFSTORE", "d", "a", "b", "c") == .integer(Int64(diff.count)))
            #expect(Self.members(h.run("SMEMBERS", "d")) == diff)
            // Inside EXEC: b changes first, and the algebra reads it through the overlay.
            #expect(h.run("MULTI") == .ok)
            h.run("SADD", "b", "m1", "zz")
            h.run("SREM", "b", "m2")
            h.run("SINTER", "a", "b")
            h.run("SDIFF", "a", "b")
            let b2 = b.union(["m1", "zz"]).subtracting(["m2"])
            guard case .array(let replies) = h.run("EXEC"), replies.count == 4 else {
                Issue.record("EXEC did not answer four replies")
                return
            }
            #expect(Self.members(replies[2]) == a.intersection(b2))
            #expect(Self.members(replies[3]) == a.subtracting(b2))
        }
    }
}

/// ZUNION, ZINTER, ZDIFF and ZINTERCARD merge the inputs' member streams (SortedSetAlgebra):
/// compared with a model on random sorted sets and sets, with weights and each aggregate.
@Suite struct SortedSetAlgebraTests {
    static func entries(_ value: RESPValue) -> [String: Double] {
        guard case .array(let items) = value else { return [:] }
        var out: [String: Double] = [:]
        var i = 0
        while i + 1 < items.count {
            if case .bulkString(let m) = items[i], case .bulkString(let s) = items[i + 1] {
                out[String(decoding: m, as: UTF8.self)] = Double(String(decoding: s, as: UTF8.self))
            }
            i += 2
        }
        return out
    }

    @Test func agreesWithAModelOnRandomInputs() throws {
        let h = try EngineHarness()
        var rng = SeededGenerator(seed: 5)
        for round in 0..<40 {
            h.run("DEL", "a", "b", "c")
            var model: [[String: Double]] = []
            for (n, key) in ["a", "b", "c"].enumerated() {
                var m: [String: Double] = [:]
                for _ in 0..<Int.random(in: 0...50, using: &rng) { m["m\(Int.random(in: 0..<70, using: &rng))"] = Double(Int.random(in: -20...20, using: &rng)) }
                // The last input is a plain set now and then (its members score 1).
                if n == 2 && round % 3 == 0 {
                    for k in m.keys { m[k] = 1 }
                    if !m.isEmpty { h.run(["SADD", key].map { Array($0.utf8) } + m.keys.map { Array($0.utf8) }) }
                } else if !m.isEmpty {
                    h.run(["ZADD", key].map { Array($0.utf8) } + m.flatMap { [Array(String(Int($0.value)).utf8), Array($0.key.utf8)] })
                }
                model.append(m)
            }
            let weights = [2.0, -1.0, 3.0]
            for (name, aggregate) in [("SUM", { (x: Double, y: Double) in x + y }), ("MIN", { min($0, $1) }), ("MAX", { max($0, $1) })] {
                var union: [String: Double] = [:]
                for (i, m) in model.enumerated() {
                    for (k, v) in m { union[k] = union[k].map { aggregate($0, v * weights[i]) } ?? v * weights[i] }
                }
                let w = ["WEIGHTS", "2", "-1", "3", "AGGREGATE", name, "WITHSCORES"]
                #expect(Self.entries(h.run((["ZUNION", "3", "a", "b", "c"] + w).map { Array($0.utf8) })) == union)
                var inter: [String: Double] = [:]
                for k in model[0].keys where model[1][k] != nil && model[2][k] != nil {
                    let vs = (0..<3).map { model[$0][k]! * weights[$0] }
                    inter[k] = vs.dropFirst().reduce(vs[0], aggregate)
                }
                #expect(Self.entries(h.run((["ZINTER", "3", "a", "b", "c"] + w).map { Array($0.utf8) })) == inter)
            }
            let diff = model[0].filter { model[1][$0.key] == nil && model[2][$0.key] == nil }
            #expect(Self.entries(h.run("ZDIFF", "3", "a", "b", "c", "WITHSCORES")) == diff)
            let common = model[0].keys.filter { model[1][$0] != nil }.count
            #expect(h.run("ZINTERCARD", "2", "a", "b") == .integer(Int64(common)))
            #expect(h.run("ZUNIONSTORE", "d", "2", "a", "b") == .integer(Int64(Set(model[0].keys).union(model[1].keys).count)))
            // Replies come by score, then member.
            guard case .array(let replies) = h.run("ZRANGE", "d", "0", "-1", "WITHSCORES") else { continue }
            #expect(h.run("ZUNION", "2", "a", "b", "WITHSCORES") == .array(replies))
        }
    }
}
