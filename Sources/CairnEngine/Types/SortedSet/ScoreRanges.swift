import Foundation
import RESP

/// Scores as sorted-set commands read and write them: parsing with Redis's texts, Redis 7.0's
/// `%.17g` formatting, and the `min max` bounds of BYSCORE and BYLEX ranges.
enum Scores {
    /// A score argument (ZADD, ZINCRBY, WEIGHTS...): a double, `inf`/`-inf` allowed, NaN refused.
    static func parse(_ bytes: [UInt8]) -> Double? {
        guard let d = Bytes.double(bytes) else { return nil }
        return d == 0 ? 0 : d  // -0 is stored as 0, as Redis's listpack encoding does
    }

    /// Redis 7.0's text for a score: `%.17g` (`1.1000000000000001`, `1e+20`, `inf`).
    static func text(_ d: Double) -> String {
        if d.isInfinite { return d > 0 ? "inf" : "-inf" }
        if let n = integer(d) { return String(n) }
        return String(format: "%.17g", d)
    }

    /// The score as an integer when `%.17g` prints it as one: an integer below 2^53 has at most
    /// 16 digits, so no exponent or point (Foundation's formatter costs ~12,000 instructions
    /// per score).
    static func integer(_ d: Double) -> Int64? {
        d == d.rounded() && d.magnitude < 9_007_199_254_740_992 && !(d == 0 && d.sign == .minus) ? Int64(d) : nil
    }

    /// A score reply: a RESP3 double, or a bulk string in RESP2, with Redis 7.0's text.
    static func write(_ d: Double, _ out: inout RESPWriter) {
        // An integer score (the common case) straight into the reply, as `text` would write it.
        if let n = integer(d) {
            out.decimal(n, double: out.version == .v3)
            return
        }
        if out.version == .v3 {
            out.simpleDouble(text(d))
        } else {
            out.bulk(text(d))
        }
    }

    /// Members with their scores: a flat array, or in RESP3 an array of [member, score] pairs
    /// when `pairs` (ZRANGE WITHSCORES, ZPOPMIN with a count, ZRANDMEMBER WITHSCORES).
    static func writeEntries(_ entries: [SortedEntry], withScores: Bool, pairs: Bool = true, _ out: inout RESPWriter) {
        if withScores && pairs && out.version == .v3 {
            out.arrayHeader(entries.count)
            for e in entries {
                out.arrayHeader(2)
                out.bulk(e.member)
                write(e.score, &out)
            }
            return
        }
        out.arrayHeader(withScores ? entries.count * 2 : entries.count)
        for e in entries {
            out.bulk(e.member)
            if withScores { write(e.score, &out) }
        }
    }
}

extension RESPWriter {
    /// A RESP3 double with its text given (`,text`).
    mutating func simpleDouble(_ text: String) {
        var line: [UInt8] = [UInt8(ascii: ",")]
        line += Array(text.utf8)
        line += [13, 10]
        bytes += line
    }
}

/// One member of a sorted set and its score.
struct SortedEntry {
    var member: [UInt8]
    var score: Double
}

/// `min max` of ZRANGEBYSCORE, ZCOUNT...: `(` makes a bound exclusive, `-inf`/`+inf` are open.
struct ScoreRange {
    var min: Double
    var max: Double
    var minExclusive = false
    var maxExclusive = false

    init(_ min: [UInt8], _ max: [UInt8]) throws(CommandError) {
        (self.min, minExclusive) = try Self.bound(min)
        (self.max, maxExclusive) = try Self.bound(max)
    }

    /// Read as Redis reads it (`Bytes.strtod`): a stricter parse would refuse bounds Redis
    /// takes, such as `(` alone, an empty bound or `1e1000`.
    private static func bound(_ b: [UInt8]) throws(CommandError) -> (Double, Bool) {
        let exclusive = b.first == UInt8(ascii: "(")
        guard let d = Bytes.strtod(exclusive ? Array(b.dropFirst()) : b) else { throw CommandError("ERR", "min or max is not a float") }
        return (d, exclusive)
    }

    func above(_ s: Double) -> Bool { minExclusive ? s > min : s >= min }
    func below(_ s: Double) -> Bool { maxExclusive ? s < max : s <= max }
    func contains(_ s: Double) -> Bool { above(s) && below(s) }
    var isEmpty: Bool { min > max || (min == max && (minExclusive || maxExclusive)) }

    /// Score-index sub-keys to scan: from the first entry of score `min` to just past the
    /// entries of score `max` (bounds are then checked entry by entry for exclusivity).
    var lowerKey: [UInt8] { MemberKeys.orderedScore(min) }
    var upperKey: [UInt8]? { ScoreRange.successor(MemberKeys.orderedScore(max)) }

    /// The 8-byte value after `bytes` (nil past the largest): the end of all entries of a score.
    static func successor(_ bytes: [UInt8]) -> [UInt8]? {
        var b = bytes
        for i in b.indices.reversed() {
            if b[i] == 0xFF { b[i] = 0; continue }
            b[i] += 1
            return b
        }
        return nil
    }
}

/// `min max` of ZRANGEBYLEX, ZLEXCOUNT...: `[a` inclusive, `(a` exclusive, `-` before every
/// member and `+` after every member (whichever side they are given on, as in Redis).
struct LexRange {
    enum Bound {
        case first
        case last
        case inclusive([UInt8])
        case exclusive([UInt8])
    }
    var min: Bound
    var max: Bound

    init(_ min: [UInt8], _ max: [UInt8]) throws(CommandError) {
        self.min = try Self.bound(min)
        self.max = try Self.bound(max)
    }

    private static func bound(_ b: [UInt8]) throws(CommandError) -> Bound {
        let bad = CommandError("ERR", "min or max not valid string range item")
        guard let first = b.first else { throw bad }
        switch first {
        case UInt8(ascii: "-") where b.count == 1: return .first
        case UInt8(ascii: "+") where b.count == 1: return .last
        case UInt8(ascii: "["): return .inclusive(Array(b.dropFirst()))
        case UInt8(ascii: "("): return .exclusive(Array(b.dropFirst()))
        default: throw bad
        }
    }

    func above(_ m: [UInt8]) -> Bool {
        switch min {
        case .first: true
        case .last: false
        case .inclusive(let b): !m.lexicographicallyPrecedes(b)
        case .exclusive(let b): b.lexicographicallyPrecedes(m)
        }
    }

    func below(_ m: [UInt8]) -> Bool {
        switch max {
        case .first: false
        case .last: true
        case .inclusive(let b): !b.lexicographicallyPrecedes(m)
        case .exclusive(let b): m.lexicographicallyPrecedes(b)
        }
    }

    /// Member sub-key where a forward scan starts (exclusivity is checked per entry).
    var lowerKey: [UInt8]? {
        switch min {
        case .first, .last: nil
        case .inclusive(let b), .exclusive(let b): b
        }
    }

    /// Member sub-key where a scan ends (exclusive): just past the max bound's member.
    var upperKey: [UInt8]? {
        switch max {
        case .first, .last: nil
        case .inclusive(let b), .exclusive(let b): b + [0]
        }
    }
}
