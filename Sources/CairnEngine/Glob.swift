/// Redis glob-style matching (`*`, `?`, `[a-z]`, `[^a]`, `\x`), as `stringmatchlen` in util.c.
/// https://redis.io/docs/latest/commands/keys/
enum Glob {
    static func matches(_ pattern: [UInt8], _ string: UnsafeRawBufferPointer, noCase: Bool = false) -> Bool {
        pattern.withUnsafeBufferPointer { p in
            match(p, 0, string, 0, noCase, depth: 0)
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

    private static func match(
        _ p: UnsafeBufferPointer<UInt8>, _ pStart: Int, _ s: UnsafeRawBufferPointer, _ sStart: Int,
        _ noCase: Bool, depth: Int
    ) -> Bool {
        // Redis caps recursion the same way to avoid pathological patterns.
        if depth > 1000 { return false }
        var pi = pStart
        var si = sStart
        while pi < p.count && si < s.count {
            switch p[pi] {
            case UInt8(ascii: "*"):
                while pi + 1 < p.count && p[pi + 1] == UInt8(ascii: "*") { pi += 1 }
                if pi + 1 == p.count { return true }
                while si < s.count {
                    if match(p, pi + 1, s, si, noCase, depth: depth + 1) { return true }
                    si += 1
                }
                return false
            case UInt8(ascii: "?"):
                si += 1
            case UInt8(ascii: "["):
                pi += 1
                let not = pi < p.count && p[pi] == UInt8(ascii: "^")
                if not { pi += 1 }
                var matched = false
                while true {
                    if pi >= p.count { pi -= 1; break }
                    if p[pi] == UInt8(ascii: "\\") && pi + 2 < p.count {
                        pi += 1
                        if p[pi] == s[si] { matched = true }
                    } else if p[pi] == UInt8(ascii: "]") {
                        break
                    } else if pi + 2 < p.count && p[pi + 1] == UInt8(ascii: "-") {
                        var start = lower(p[pi], noCase)
                        var end = lower(p[pi + 2], noCase)
                        let c = lower(s[si], noCase)
                        if start > end { swap(&start, &end) }
                        pi += 2
                        if c >= start && c <= end { matched = true }
                    } else if lower(p[pi], noCase) == lower(s[si], noCase) {
                        matched = true
                    }
                    pi += 1
                }
                if not { matched = !matched }
                if !matched { return false }
                si += 1
            case UInt8(ascii: "\\") where pi + 1 < p.count:
                pi += 1
                if lower(p[pi], noCase) != lower(s[si], noCase) { return false }
                si += 1
            default:
                if lower(p[pi], noCase) != lower(s[si], noCase) { return false }
                si += 1
            }
            pi += 1
        }
        while pi < p.count && p[pi] == UInt8(ascii: "*") { pi += 1 }
        return pi == p.count && si == s.count
    }
}
