import RESP

/// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD, as Redis's
/// `zunionInterDiffGenericCommand`: inputs may be sorted sets or sets (members of a set score
/// 1), WEIGHTS multiply, AGGREGATE SUM|MIN|MAX combines. Results are ordered by score, then
/// member. https://redis.io/docs/latest/commands/zunion/
enum SortedSetAlgebra {
    enum Operation { case union, inter, diff }
    enum Aggregate { case sum, min, max }

    static let all: [Command] = [
        Command("zunion") {
            call, out throws(CommandError) in
            try combine(call, &out, .union, store: false)
        }.measuringMembers().movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
        Command("zinter") {
            call, out throws(CommandError) in
            try combine(call, &out, .inter, store: false)
        }.measuringMembers().movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
        Command("zdiff") {
            call, out throws(CommandError) in
            try combine(call, &out, .diff, store: false)
        }.measuringMembers().movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
        Command("zunionstore") {
            call, out throws(CommandError) in
            try combine(call, &out, .union, store: true)
        }.measuringMembers().movingKeys(storeKeys),
        Command("zinterstore") {
            call, out throws(CommandError) in
            try combine(call, &out, .inter, store: true)
        }.measuringMembers().movingKeys(storeKeys),
        Command("zdiffstore") {
            call, out throws(CommandError) in
            try combine(call, &out, .diff, store: true)
        }.measuringMembers().movingKeys(storeKeys),
        Command("zintercard") {
            call, out throws(CommandError) in
            try combine(call, &out, .inter, store: false, cardinality: true)
        }.measuringMembers().movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
    ]

    /// The keys of ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE: the destination, then `numkeys`
    /// keys; none when `numkeys` is malformed, as in Redis (COMMAND GETKEYS refuses it).
    @Sendable static func storeKeys(_ argv: [[UInt8]]) -> [[UInt8]] {
        let inputs = SetCommands.numberedKeys(argv, countAt: 2)
        return inputs.isEmpty ? [] : [argv[1]] + inputs
    }

    /// One input: its member stream (scores alongside for a sorted set; a set's members score 1)
    /// and its weight.
    struct Input {
        let stream: MemberStream
        let isSet: Bool
        let size: UInt64
        var weight: Double = 1

        var score: Double { isSet ? 1 : MemberKeys.score(value: stream.headValue) }
    }

    /// The inputs for `keys`, nil for a missing key; WRONGTYPE for a key that is neither a
    /// sorted set nor a set. Their streams must be closed.
    static func open(_ call: Call, _ keys: [[UInt8]]) throws(CommandError) -> [Input?] {
        var inputs: [Input?] = []
        do throws(CommandError) {
            for key in keys {
                guard let type = try call.withStored(key, { (t: KeyType?, _, _) -> KeyType? in t }) else {
                    inputs.append(nil)
                    continue
                }
                guard type == .zset || type == .set else { throw .wrongType }
                guard let meta = try call.collection(key, type) else {
                    inputs.append(nil)
                    continue
                }
                inputs.append(Input(stream: try MemberStream(call, meta, of: key, values: type == .zset), isSet: type == .set, size: meta.size))
            }
        } catch {
            for i in inputs { i?.stream.close() }
            throw error
        }
        return inputs
    }

    static func combine(_ call: Call, _ out: inout RESPWriter, _ op: Operation, store: Bool, cardinality: Bool = false) throws(CommandError) {
        let countAt = store ? 2 : 1
        let n = try call.integer(countAt)
        guard n >= 1 else { throw CommandError("ERR", "at least 1 input key is needed for '\(call.name)' command") }
        guard n <= call.count - countAt - 1 else { throw .syntax }
        let keys = Array(call.argv[(countAt + 1)...(countAt + Int(n))])
        let body = { () throws(CommandError) -> (entries: [SortedEntry], withScores: Bool, card: Int?) in
            var inputs = try open(call, keys)
            defer { for i in inputs { i?.stream.close() } }
            var weights = [Double](repeating: 1, count: keys.count)
            var aggregate = Aggregate.sum
            var withScores = false
            var limit = 0
            var j = countAt + 1 + Int(n)
            while j < call.count {
                let left = call.count - j - 1
                if cardinality && call[j].isKeyword("LIMIT") && left >= 1 {
                    limit = Int(clamping: try call.positiveInteger(j + 1, message: "LIMIT can't be negative"))
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
            for i in inputs.indices { inputs[i]?.weight = weights[i] }
            var result: [SortedEntry] = []
            var count = 0
            try compute(op, inputs, aggregate: aggregate) { member, score in
                count += 1
                if !cardinality { result.append(SortedEntry(member: Array(member), score: score)) }
                return !cardinality || limit == 0 || count < limit
            }
            for i in inputs { try i?.stream.check(call) }
            if cardinality { return ([], false, count) }
            // A store needs no order; a reply is by score, then member.
            if !store { result.sort { $0.score != $1.score ? $0.score < $1.score : Bytes.compare($0.member, $1.member) < 0 } }
            return (result, withScores, nil)
        }
        guard store else {
            let r = try body()
            if let card = r.card { out.integer(card) } else { Scores.writeEntries(r.entries, withScores: r.withScores, &out) }
            return
        }
        let stored = try call.locked([call[1]] + keys) { () throws(CommandError) -> Int in
            try SortedSetRanges.storeEntries(call, call[1], try body().entries, event: call.name)
        }
        out.integer(stored)
    }

    /// Calls `body` with each member of the result and its score, in member order, until it
    /// returns false: the inputs' member streams merged side by side, each score weighted and
    /// the scores of one member aggregated (a NaN from inf * 0 or inf + -inf is 0, as Redis).
    static func compute(
        _ op: Operation, _ inputs: [Input?], aggregate: Aggregate,
        _ body: (UnsafeRawBufferPointer, Double) throws(CommandError) -> Bool
    ) throws(CommandError) {
        func weighted(_ i: Input) -> Double {
            let v = i.score * i.weight
            return v.isNaN ? 0 : v
        }
        func combine(_ a: Double, _ b: Double) -> Double {
            switch aggregate {
            case .sum:
                let v = a + b
                return v.isNaN ? 0 : v
            case .min: return Swift.min(a, b)
            case .max: return Swift.max(a, b)
            }
        }
        func emit(_ stream: MemberStream, _ score: Double) throws(CommandError) -> Bool {
            try stream.withHead { (m: UnsafeRawBufferPointer) throws(CommandError) -> Bool in try body(m, score) }
        }
        switch op {
        case .union:
            // The inputs in the order given, as the scores are aggregated in that order.
            let present = inputs.compactMap { $0 }
            while true {
                var least: MemberStream? = nil
                for i in present where i.stream.valid {
                    if least == nil || i.stream.compareHead(to: least!) < 0 { least = i.stream }
                }
                guard let least else { return }
                var acc: Double? = nil
                var moving: [MemberStream] = []
                for i in present where i.stream.valid && i.stream.compareHead(to: least) == 0 {
                    let v = weighted(i)
                    acc = acc.map { combine($0, v) } ?? v
                    moving.append(i.stream)
                }
                guard try emit(least, acc!) else { return }
                for m in moving { m.advance() }
            }
        case .inter:
            guard inputs.allSatisfy({ $0 != nil }) else { return }
            // Smallest first, as before: the aggregation starts from it.
            let s = inputs.map { $0! }.sorted { $0.size < $1.size }
            guard s.allSatisfy({ $0.stream.valid }) else { return }
            while true {
                var greatest = 0
                for k in s.indices.dropFirst() where s[k].stream.compareHead(to: s[greatest].stream) > 0 { greatest = k }
                var agree = true
                for k in s.indices where k != greatest {
                    while s[k].stream.valid && s[k].stream.compareHead(to: s[greatest].stream) < 0 { s[k].stream.advance() }
                    guard s[k].stream.valid else { return }
                    if s[k].stream.compareHead(to: s[greatest].stream) != 0 { agree = false }
                }
                guard agree else { continue }
                var acc = weighted(s[0])
                for k in s.indices.dropFirst() { acc = combine(acc, weighted(s[k])) }
                guard try emit(s[0].stream, acc) else { return }
                for i in s {
                    i.stream.advance()
                    guard i.stream.valid else { return }
                }
            }
        case .diff:
            guard let first = inputs[0] else { return }
            let others = inputs.dropFirst().compactMap { $0 }
            while first.stream.valid {
                var found = false
                for o in others {
                    while o.stream.valid && o.stream.compareHead(to: first.stream) < 0 { o.stream.advance() }
                    if o.stream.valid && o.stream.compareHead(to: first.stream) == 0 { found = true }
                }
                if !found { guard try emit(first.stream, first.score) else { return } }
                first.stream.advance()
            }
        }
    }
}
