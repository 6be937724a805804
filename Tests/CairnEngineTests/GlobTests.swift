@testable import CairnEngine
import CairnTestSupport
import Testing

/// Glob matching (KEYS, SCAN MATCH, ACL key patterns, PSUBSCRIBE): the same answers as the
/// backtracking definition, without its exponential time.
@Suite struct GlobTests {
    /// The textbook definition: `*` tries every split. Exponential on `a*a*a*...b`, fine for
    /// the short inputs below.
    static func reference(_ p: [UInt8], _ s: [UInt8]) -> Bool {
        guard let c = p.first else { return s.isEmpty }
        switch c {
        case UInt8(ascii: "*"):
            return (0...s.count).contains { reference(Array(p.dropFirst()), Array(s[$0...])) }
        case UInt8(ascii: "?"):
            return !s.isEmpty && reference(Array(p.dropFirst()), Array(s.dropFirst()))
        case UInt8(ascii: "["):
            guard let first = s.first, let close = p.dropFirst().firstIndex(of: UInt8(ascii: "]")) else {
                return !s.isEmpty && p.first == s.first && reference(Array(p.dropFirst()), Array(s.dropFirst()))
            }
            var body = Array(p[1..<close])
            let not = body.first == UInt8(ascii: "^")
            if not { body.removeFirst() }
            var matched = false
            var i = 0
            while i < body.count {
                if i + 2 < body.count && body[i + 1] == UInt8(ascii: "-") {
                    let (lo, hi) = (min(body[i], body[i + 2]), max(body[i], body[i + 2]))
                    if first >= lo && first <= hi { matched = true }
                    i += 3
                } else {
                    if body[i] == first { matched = true }
                    i += 1
                }
            }
            return matched != not && reference(Array(p[(close + 1)...]), Array(s.dropFirst()))
        default:
            return !s.isEmpty && c == s.first && reference(Array(p.dropFirst()), Array(s.dropFirst()))
        }
    }

    @Test func agreesWithTheBacktrackingDefinition() {
        var rng = SeededGenerator(seed: 7)
        let patternBytes = Array("ab*?[]^-".utf8)
        let stringBytes = Array("abc".utf8)
        for _ in 0..<20_000 {
            // Classes kept well formed (the reference does not model Redis's unterminated `[`).
            var p: [UInt8] = []
            for _ in 0..<Int.random(in: 0...7, using: &rng) {
                let c = patternBytes.randomElement(using: &rng)!
                switch c {
                case UInt8(ascii: "["): p += Array("[a-b]".utf8)
                case UInt8(ascii: "]"), UInt8(ascii: "^"), UInt8(ascii: "-"): p += Array("[^c]".utf8)
                default: p.append(c)
                }
            }
            let s = (0..<Int.random(in: 0...7, using: &rng)).map { _ in stringBytes.randomElement(using: &rng)! }
            #expect(Glob.matches(p, s) == Self.reference(p, s), "pattern \(Bytes.text(p)) string \(Bytes.text(s))")
        }
    }

    @Test func redisEdgeCases() {
        #expect(Glob.matches(Array("h\\*llo".utf8), Array("h*llo".utf8)))
        #expect(!Glob.matches(Array("h\\*llo".utf8), Array("hello".utf8)))
        #expect(Glob.matches(Array("h[^e]llo".utf8), Array("hallo".utf8)))
        #expect(!Glob.matches(Array("h[^e]llo".utf8), Array("hello".utf8)))
        #expect(Glob.matches(Array("h[a-b]llo".utf8), Array("hbllo".utf8)))
        #expect(Glob.matches(Array("h[b-a]llo".utf8), Array("hallo".utf8)))
        #expect(Glob.matches(Array("*".utf8), []))
        #expect(!Glob.matches(Array("?".utf8), []))
        #expect(Glob.matches(Array("a**b".utf8), Array("axxb".utf8)))
        // An unterminated class ends at the pattern's end, as in Redis's stringmatchlen.
        #expect(Glob.matches(Array("a[bc".utf8), Array("ac".utf8)))
    }

    /// `a*a*...*b` against a long run of `a`: the recursive matcher retried every `*` at every
    /// position (KEYS with such a pattern had not returned after 45 s); this one makes at most
    /// pattern length x string length steps, so the test finishes at once.
    @Test func nestedStarsTakePolynomialTime() {
        let pattern = Array(String(repeating: "a*", count: 500).utf8) + [UInt8(ascii: "b")]
        let string = [UInt8](repeating: UInt8(ascii: "a"), count: 2000)
        #expect(!Glob.matches(pattern, string))
        #expect(Glob.matches(pattern, string + [UInt8(ascii: "b")]))
    }
}
