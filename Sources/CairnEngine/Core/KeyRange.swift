/// Keys a command reaches without naming them one by one: an ordered range (RANGE, DELRANGE,
/// ITER.*, COMPACT with bounds) or the whole keyspace (FLUSHDB, BACKUP.RESTORE, MONITOR...).
/// The command table declares them (`Command.keyRanges`) beside the key positions, so the
/// admission step checks a user's key patterns against them as against named keys: a range
/// must lie wholly inside one pattern the user holds (docs/security.md, "Key patterns").
struct KeyRange: Equatable, Sendable {
    /// The first key of the range.
    var lower: [UInt8]
    /// One past the last key; nil: no end.
    var upper: [UInt8]?
    /// Whether the command changes keys of the range (else it only reads them).
    var write: Bool

    /// Every key there is.
    static func everything(write: Bool) -> KeyRange { KeyRange(lower: [], upper: nil, write: write) }

    /// Whether the range holds no key at all.
    var isEmpty: Bool {
        guard let upper else { return false }
        return !lower.lexicographicallyPrecedes(upper)
    }

    /// Whether every key of this range matches `pattern`: the pattern must be a literal prefix
    /// with one `*` at its end (`app:*`, `*`), which matches exactly the keys of one range, or a
    /// literal key and the range that one key. Other patterns (`a?c`, `*:cache`) match keys
    /// scattered through any range, so they cover only single keys (checked by the caller).
    func isInside(_ pattern: [UInt8]) -> Bool {
        guard let (low, high) = KeyRange.span(of: pattern) else { return false }
        if lower.lexicographicallyPrecedes(low) { return false }
        guard let high else { return true }
        guard let upper else { return false }
        return !high.lexicographicallyPrecedes(upper)
    }

    /// The one range `pattern` matches, if it is that simple: a literal prefix (with `\`
    /// escapes) followed by a single final `*`, or a literal key.
    static func span(of pattern: [UInt8]) -> (lower: [UInt8], upper: [UInt8]?)? {
        var literal: [UInt8] = []
        var i = 0
        while i < pattern.count {
            switch pattern[i] {
            case UInt8(ascii: "*"):
                guard i == pattern.count - 1 else { return nil }
                return (literal, Call.prefixEnd(literal))
            case UInt8(ascii: "?"), UInt8(ascii: "["):
                return nil
            case UInt8(ascii: "\\") where i + 1 < pattern.count:
                literal.append(pattern[i + 1])
                i += 2
                continue
            default:
                literal.append(pattern[i])
            }
            i += 1
        }
        return (literal, literal + [0])
    }
}
