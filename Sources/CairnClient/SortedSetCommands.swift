import RESP

/// A sorted-set member and its score.
public struct ScoredMember: Sendable, Hashable {
    public var member: [UInt8]
    public var score: Double

    public init(member: [UInt8], score: Double) {
        self.member = member
        self.score = score
    }

    /// The member decoded as UTF-8 (invalid bytes replaced).
    public var memberString: String { String(decoding: member, as: UTF8.self) }
}

/// Which members `ZADD` writes, and how.
public struct ZAddOptions: Sendable, Hashable {
    public enum Condition: Sendable, Hashable {
        case always
        /// `NX`: only add new members.
        case ifNotExists
        /// `XX`: only update existing members.
        case ifExists
    }
    public enum Comparison: Sendable, Hashable {
        case any
        /// `GT`: only update when the new score is greater.
        case greaterThan
        /// `LT`: only update when the new score is less.
        case lessThan
    }
    public var condition: Condition = .always
    public var comparison: Comparison = .any
    /// `CH`: count changed members, not only added ones.
    public var countChanged = false

    public init(condition: Condition = .always, comparison: Comparison = .any, countChanged: Bool = false) {
        self.condition = condition
        self.comparison = comparison
        self.countChanged = countChanged
    }

    var arguments: [any RESPArgument] {
        var out: [any RESPArgument] = []
        switch condition {
        case .always: break
        case .ifNotExists: out.append("NX")
        case .ifExists: out.append("XX")
        }
        switch comparison {
        case .any: break
        case .greaterThan: out.append("GT")
        case .lessThan: out.append("LT")
        }
        if countChanged { out.append("CH") }
        return out
    }
}

/// A `ZRANGE` range: by rank (indexes, negative from the end), by score (`(` in the text makes a
/// bound exclusive; `-inf`/`+inf`), or by member in byte order (`[a`, `(a`, `-`, `+`).
public enum ZRange: Sendable, Hashable {
    case rank(Int, Int)
    case score(String, String)
    case lex(String, String)

    /// Scores `min...max`, inclusive.
    public static func scores(_ min: Double, _ max: Double) -> ZRange { .score(String(min), String(max)) }

    /// `ZREMRANGEBYRANK|BYSCORE|BYLEX key min max` for this range.
    func removeArguments(_ key: some RESPArgument) -> [any RESPArgument] {
        switch self {
        case .rank(let start, let stop): ["ZREMRANGEBYRANK", key, start, stop]
        case .score(let min, let max): ["ZREMRANGEBYSCORE", key, min, max]
        case .lex(let min, let max): ["ZREMRANGEBYLEX", key, min, max]
        }
    }
}

/// One page of `ZSCAN`: the cursor to pass next (`"0"` when complete) and the members.
public struct ZScanPage: Sendable, Hashable {
    public var cursor: String
    public var members: [ScoredMember]
    /// True when this was the last page.
    public var isComplete: Bool { cursor == "0" }
}

extension RESPValue {
    /// Members with scores: RESP3 [member, score] pairs, or a RESP2 flat array.
    func expectScoredMembers() throws(CairnClientError) -> [ScoredMember] {
        let items = try expectArray()
        if let first = items.first, first.array != nil {
            return try items.map { (pair: RESPValue) throws(CairnClientError) -> ScoredMember in
                guard let p = pair.array, p.count == 2, let m = p[0].bytes else { throw .unexpected(self, expected: "[member, score] pairs") }
                return ScoredMember(member: m, score: try p[1].expectDouble())
            }
        }
        guard items.count % 2 == 0 else { throw .unexpected(self, expected: "members and scores") }
        var out: [ScoredMember] = []
        for i in stride(from: 0, to: items.count, by: 2) {
            guard let m = items[i].bytes else { throw .unexpected(self, expected: "members and scores") }
            out.append(ScoredMember(member: m, score: try items[i + 1].expectDouble()))
        }
        return out
    }

    func expectOptionalDouble() throws(CairnClientError) -> Double? {
        isNull ? nil : try expectDouble()
    }
}

// Sorted sets: https://redis.io/docs/latest/commands/?group=sorted-set
extension KeyValueReader {
    /// `ZCARD key`: the number of members, 0 when missing.
    public func zcard(_ key: some RESPArgument) async throws -> Int {
        Int(try await call("ZCARD", key).expectInt())
    }

    /// `ZSCORE key member`: nil when the member (or the key) is missing.
    public func zscore(_ key: some RESPArgument, _ member: some RESPArgument) async throws -> Double? {
        try await call("ZSCORE", key, member).expectOptionalDouble()
    }

    /// `ZMSCORE key member...`: one score (or nil) per member.
    public func zmscore(_ key: some RESPArgument, _ members: [any RESPArgument]) async throws -> [Double?] {
        try await send(["ZMSCORE", key] + members).expectArray().map { v throws(CairnClientError) in try v.expectOptionalDouble() }
    }

    /// `ZCOUNT key min max`: members with scores in the range (`(` for exclusive bounds).
    public func zcount(_ key: some RESPArgument, _ min: String, _ max: String) async throws -> Int {
        Int(try await call("ZCOUNT", key, min, max).expectInt())
    }

    /// `ZRANK key member` (or `ZREVRANK` when `reverse`): nil when missing. Cairn: O(rank).
    public func zrank(_ key: some RESPArgument, _ member: some RESPArgument, reverse: Bool = false) async throws -> Int? {
        let reply = try await call(reverse ? "ZREVRANK" : "ZRANK", key, member)
        return reply.isNull ? nil : Int(try reply.expectInt())
    }

    /// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]`: the members.
    public func zrange(_ key: some RESPArgument, _ range: ZRange, reverse: Bool = false, limit: (offset: Int, count: Int)? = nil) async throws -> [[UInt8]] {
        try await send(Self.zrangeArguments(key, range, reverse: reverse, limit: limit, withScores: false)).expectByteArrays()
    }

    /// `ZRANGE ... WITHSCORES`: members with their scores (not for `.lex` ranges).
    public func zrangeWithScores(_ key: some RESPArgument, _ range: ZRange, reverse: Bool = false, limit: (offset: Int, count: Int)? = nil) async throws -> [ScoredMember] {
        try await send(Self.zrangeArguments(key, range, reverse: reverse, limit: limit, withScores: true)).expectScoredMembers()
    }

    static func zrangeArguments(_ key: some RESPArgument, _ range: ZRange, reverse: Bool, limit: (offset: Int, count: Int)?, withScores: Bool) -> [any RESPArgument] {
        var argv: [any RESPArgument] = ["ZRANGE", key]
        switch range {
        case .rank(let start, let stop): argv += [start, stop]
        // Reversed score and lex ranges take the maximum first.
        case .score(let min, let max): argv += (reverse ? [max, min] : [min, max]) + ["BYSCORE"]
        case .lex(let min, let max): argv += (reverse ? [max, min] : [min, max]) + ["BYLEX"]
        }
        if reverse { argv.append("REV") }
        if let limit { argv += ["LIMIT", limit.offset, limit.count] }
        if withScores { argv.append("WITHSCORES") }
        return argv
    }

    /// `ZUNION`/`ZINTER numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX] WITHSCORES`.
    public func zunion(_ keys: [any RESPArgument], weights: [Double]? = nil, aggregate: String? = nil) async throws -> [ScoredMember] {
        try await send(combineArguments("ZUNION", nil, keys, weights, aggregate) + ["WITHSCORES"]).expectScoredMembers()
    }

    public func zinter(_ keys: [any RESPArgument], weights: [Double]? = nil, aggregate: String? = nil) async throws -> [ScoredMember] {
        try await send(combineArguments("ZINTER", nil, keys, weights, aggregate) + ["WITHSCORES"]).expectScoredMembers()
    }

    /// `ZDIFF numkeys key... WITHSCORES`: members of the first set in none of the others.
    public func zdiff(_ keys: [any RESPArgument]) async throws -> [ScoredMember] {
        try await send(["ZDIFF", keys.count] + keys + ["WITHSCORES"]).expectScoredMembers()
    }

    /// `ZSCAN key cursor [MATCH pattern] [COUNT n]`: one page. Start with `"0"`.
    public func zscan(_ key: some RESPArgument, cursor: String = "0", match: String? = nil, count: Int? = nil) async throws -> ZScanPage {
        var argv: [any RESPArgument] = ["ZSCAN", key, cursor]
        if let match { argv += ["MATCH", match] }
        if let count { argv += ["COUNT", count] }
        let reply = try await send(argv).expectArray()
        guard reply.count == 2, let next = reply[0].string else {
            throw CairnClientError.unexpected(.array(reply), expected: "[cursor, members]")
        }
        return ZScanPage(cursor: next, members: try reply[1].expectScoredMembers())
    }
}

/// `ZUNION`/`ZINTER`/`ZUNIONSTORE`/`ZINTERSTORE`'s arguments: a free function, so the queued
/// forms (TypedCommands.generated.swift) can use it as well.
func combineArguments(_ name: String, _ destination: (any RESPArgument)?, _ keys: [any RESPArgument], _ weights: [Double]?, _ aggregate: String?) -> [any RESPArgument] {
    var argv: [any RESPArgument] = [name]
    if let destination { argv.append(destination) }
    argv += [keys.count] + keys
    if let weights { argv += ["WEIGHTS"] + weights }
    if let aggregate { argv += ["AGGREGATE", aggregate] }
    return argv
}
