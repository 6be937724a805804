/// Redis glob-style matching (`*`, `?`, `[a-z]`, `[^a]`, `\x`), as `stringmatchlen` in util.c.
/// https://redis.io/docs/latest/commands/keys/
enum Glob {
    static func matches(_ pattern: [UInt8], _ string: UnsafeRawBufferPointer, noCase: Bool = false) -> Bool {
        pattern.withUnsafeBufferPointer { p in
            match(p, string, noCase)
        }
    }

    static func matches(_ pattern: [UInt8], _ string: [UInt8]) -> Bool {
        string.withUnsafeBytes { matches(pattern, $0) }
    }

    /// The literal prefix before the first special character: keys matching the pattern all
    /// start with it, so an ordered scan can seek there and stop after it.
    static func literalPrefix(_ pattern: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < pattern.count {
            let c = pattern[i]
            if c == UInt8(ascii: "*") || c == UInt8(ascii: "?") || c == UInt8(ascii: "[") { break }
            if c == UInt8(ascii: "\\") {
                guard i + 1 < pattern.count else { break }
                out.append(pattern[i + 1])
                i += 2
                continue
            }
            out.append(c)
            i += 1
        }
        return out
    }

    private static func lower(_ c: UInt8, _ noCase: Bool) -> UInt8 {
        noCase ? Bytes.lowercased(c) : c
    }

    /// Matches without recursion: on a mismatch it goes back to the last `*` only and lets it
    /// take one more byte, so the work is at most pattern length x string length (a pattern
    /// like `a*a*a*...b` took exponential time when every `*` was retried recursively). The last
    /// `*` is enough: whatever an earlier `*` would take differently, the later one can take.
    private static func match(_ p: UnsafeBufferPointer<UInt8>, _ s: UnsafeRawBufferPointer, _ noCase: Bool) -> Bool {
        var pi = 0
        var si = 0
        // Where to resume after the last `*`: the pattern after it, and the string byte it
        // has taken up to.
        var starPattern = -1
        var starString = 0
        while si < s.count {
            if pi < p.count {
                if p[pi] == UInt8(ascii: "*") {
                    while pi + 1 < p.count && p[pi + 1] == UInt8(ascii: "*") { pi += 1 }
                    if pi + 1 == p.count { return true }
                    starPattern = pi + 1
                    starString = si
                    pi += 1
                    continue
                }
                if let next = matchOne(p, pi, s[si], noCase) {
                    pi = next
                    si += 1
                    continue
                }
            }
            guard starPattern >= 0 else { return false }
            starString += 1
            si = starString
            pi = starPattern
        }
        while pi < p.count && p[pi] == UInt8(ascii: "*") { pi += 1 }
        return pi == p.count
    }

    /// Matches one byte `c` against the pattern item at `pi` (not `*`): the position after the
    /// item, or nil. Items and their edge cases as Redis's `stringmatchlen`.
    private static func matchOne(_ p: UnsafeBufferPointer<UInt8>, _ start: Int, _ c: UInt8, _ noCase: Bool) -> Int? {
        var pi = start
        switch p[pi] {
        case UInt8(ascii: "?"):
            return pi + 1
        case UInt8(ascii: "["):
            pi += 1
            let not = pi < p.count && p[pi] == UInt8(ascii: "^")
            if not { pi += 1 }
            var matched = false
            while true {
                if pi >= p.count { pi -= 1; break }
                if p[pi] == UInt8(ascii: "\\") && pi + 1 < p.count {
                    pi += 1
                    if p[pi] == c { matched = true }
                } else if p[pi] == UInt8(ascii: "]") {
                    break
                } else if pi + 2 < p.count && p[pi + 1] == UInt8(ascii: "-") {
                    var low = lower(p[pi], noCase)
                    var high = lower(p[pi + 2], noCase)
                    let l = lower(c, noCase)
                    if low > high { swap(&low, &high) }
                    pi += 2
                    if l >= low && l <= high { matched = true }
                } else if lower(p[pi], noCase) == lower(c, noCase) {
                    matched = true
                }
                pi += 1
            }
            if not { matched = !matched }
            return matched ? pi + 1 : nil
        case UInt8(ascii: "\\") where pi + 1 < p.count:
            return lower(p[pi + 1], noCase) == lower(c, noCase) ? pi + 2 : nil
        default:
            return lower(p[pi], noCase) == lower(c, noCase) ? pi + 1 : nil
        }
    }
}
