import RESP

/// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD, as Redis's
/// `zunionInterDiffGenericCommand`: inputs may be sorted sets or sets (members of a set score
/// 1), WEIGHTS multiply, AGGREGATE SUM|MIN|MAX combines. Results are ordered by score, then
/// member. https://redis.io/docs/latest/commands/zunion/
enum SortedSetAlgebra {
    enum Operation { case union, inter, diff }
    enum Aggregate { case sum, min, max }

    static let all: [Command] = [
        Command("zunion", arity: -3, flags: [.readonly], group: "sortedset", since: "6.2.0",
                summary: "Returns the union of multiple sorted sets.",
                arguments: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]") {
            call, out throws(CommandError) in
            try combine(call, &out, .union, store: false)
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
        Command("zinter", arity: -3, flags: [.readonly], group: "sortedset", since: "6.2.0",
                summary: "Returns the intersect of multiple sorted sets.",
                arguments: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]") {
            call, out throws(CommandError) in
            try combine(call, &out, .inter, store: false)
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
        Command("zdiff", arity: -3, flags: [.readonly], group: "sortedset", since: "6.2.0",
                summary: "Returns the difference between multiple sorted sets.", arguments: "numkeys key [key ...] [WITHSCORES]") {
            call, out throws(CommandError) in
            try combine(call, &out, .diff, store: false)
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
        Command("zunionstore", arity: -4, flags: [.write], keys: (1, 1, 1), group: "sortedset", since: "2.0.0",
                summary: "Stores the union of multiple sorted sets in a key.",
                arguments: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]") {
            call, out throws(CommandError) in
            try combine(call, &out, .union, store: true)
        }.movingKeys { $0.count > 2 ? [$0[1]] + SetCommands.numberedKeys($0, countAt: 2) : [] },
        Command("zinterstore", arity: -4, flags: [.write], keys: (1, 1, 1), group: "sortedset", since: "2.0.0",
                summary: "Stores the intersect of multiple sorted sets in a key.",
                arguments: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]") {
            call, out throws(CommandError) in
            try combine(call, &out, .inter, store: true)
        }.movingKeys { $0.count > 2 ? [$0[1]] + SetCommands.numberedKeys($0, countAt: 2) : [] },
        Command("zdiffstore", arity: -4, flags: [.write], keys: (1, 1, 1), group: "sortedset", since: "6.2.0",
                summary: "Stores the difference of multiple sorted sets in a key.", arguments: "destination numkeys key [key ...]") {
            call, out throws(CommandError) in
            try combine(call, &out, .diff, store: true)
        }.movingKeys { $0.count > 2 ? [$0[1]] + SetCommands.numberedKeys($0, countAt: 2) : [] },
        Command("zintercard", arity: -3, flags: [.readonly], group: "sortedset", since: "7.0.0",
                summary: "Returns the number of members of the intersect of multiple sorted sets.", arguments: "numkeys key [key ...] [LIMIT limit]") {
            call, out throws(CommandError) in
            try combine(call, &out, .inter, store: false, cardinality: true)
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
    ]

    /// One input read whole: member to score (a set's members score 1).
    static func read(_ call: Call, _ key: [UInt8]) throws(CommandError) -> [[UInt8]: Double]? {
        try call.withStored(key) { (t: KeyType?, _, _) throws(CommandError) -> KeyType? in t }.map { (type: KeyType) throws(CommandError) -> [[UInt8]: Double] in
            guard type == .zset || type == .set else { throw .wrongType }
            guard let meta = try call.collection(key, type) else { return [:] }
            var out: [[UInt8]: Double] = [:]
            try call.scanMembers(meta, of: key, .member) { sub, value in
                out[sub] = type == .zset ? MemberKeys.score(value: value) : 1
                return true
            }
            return out
        }
    }

    static func combine(_ call: Call, _ out: inout RESPWriter, _ op: Operation, store: Bool, cardinality: Bool = false) throws(CommandError) {
        let countAt = store ? 2 : 1
        let n = try call.integer(countAt)
        guard n >= 1 else { throw CommandError("ERR", "at least 1 input key is needed for '\(call.name)' command") }
        guard n <= call.count - countAt - 1 else { throw .syntax }
        let keys = Array(call.argv[(countAt + 1)...(countAt + Int(n))])
        let body = { () throws(CommandError) -> (entries: [SortedEntry], withScores: Bool, card: Int?) in
            let inputs = try keys.map { (k: [UInt8]) throws(CommandError) -> [[UInt8]: Double]? in try read(call, k) }
            var weights = [Double](repeating: 1, count: keys.count)
            var aggregate = Aggregate.sum
            var withScores = false
            var limit = 0
            var j = countAt + 1 + Int(n)
            while j < call.count {
                let left = call.count - j - 1
                if cardinality && call[j].isKeyword("LIMIT") && left >= 1 {
                    guard let l = Bytes.int64(call[j + 1]), l >= 0 else { throw CommandError("ERR", "LIMIT can't be negative") }
                    limit = Int(clamping: l)
                    j += 1
                } else if !cardinality && op != .diff && call[j].isKeyword("WEIGHTS") && left >= keys.count {
                    for w in 0..<keys.count {
                        guard let weight = Scores.parse(call[j + 1 + w]) else { throw CommandError("ERR", "weight value is not a float") }
                        weights[w] = weight
                    }
                    j += keys.count
                } else if !cardinality && op != .diff && call[j].isKeyword("AGGREGATE") && left >= 1 {
                    let a = call[j + 1]
                    if a.isKeyword("SUM") { aggregate = .sum } else if a.isKeyword("MIN") { aggregate = .min } else if a.isKeyword("MAX") { aggregate = .max } else { throw .syntax }
                    j += 1
                } else if !cardinality && !store && call[j].isKeyword("WITHSCORES") {
                    withScores = true
                } else {
                    throw .syntax
                }
                j += 1
            }
            var result = compute(op, inputs, weights: weights, aggregate: aggregate)
            if cardinality { return ([], false, limit > 0 ? min(limit, result.count) : result.count) }
            result.sort { $0.score != $1.score ? $0.score < $1.score : $0.member.lexicographicallyPrecedes($1.member) }
            return (result, withScores, nil)
        }
        guard store else {
            let r = try body()
            if let card = r.card { out.integer(card) } else { Scores.writeEntries(r.entries, withScores: r.withScores, &out) }
            return
        }
        let stored = try call.locked([call[1]] + keys) { () throws(CommandError) -> Int in
            try SortedSetRanges.storeEntries(call, call[1], try body().entries)
        }
        out.integer(stored)
    }

    static func compute(_ op: Operation, _ inputs: [[[UInt8]: Double]?], weights: [Double], aggregate: Aggregate) -> [SortedEntry] {
        func weighted(_ s: Double, _ w: Double) -> Double {
            let v = s * w
            return v.isNaN ? 0 : v  // inf * 0, as Redis
        }
        func combine(_ a: Double, _ b: Double) -> Double {
            switch aggregate {
            case .sum:
                let v = a + b
                return v.isNaN ? 0 : v  // inf + -inf, as Redis
            case .min: return Swift.min(a, b)
            case .max: return Swift.max(a, b)
            }
        }
        switch op {
        case .union:
            var acc: [[UInt8]: Double] = [:]
            for (i, input) in inputs.enumerated() {
                for (m, s) in input ?? [:] {
                    let v = weighted(s, weights[i])
                    acc[m] = acc[m].map { combine($0, v) } ?? v
                }
            }
            return acc.map { SortedEntry(member: $0.key, score: $0.value) }
        case .inter:
            guard inputs.allSatisfy({ $0 != nil }) else { return [] }
            let order = inputs.indices.sorted { inputs[$0]!.count < inputs[$1]!.count }
            var out: [SortedEntry] = []
            outer: for (m, s) in inputs[order[0]]! {
                var acc = weighted(s, weights[order[0]])
                for i in order.dropFirst() {
                    guard let other = inputs[i]![m] else { continue outer }
                    acc = combine(acc, weighted(other, weights[i]))
                }
                out.append(SortedEntry(member: m, score: acc))
            }
            return out
        case .diff:
            guard let first = inputs[0] else { return [] }
            return first.compactMap { m, s in
                inputs.dropFirst().contains { $0?[m] != nil } ? nil : SortedEntry(member: m, score: s)
            }
        }
    }
}
