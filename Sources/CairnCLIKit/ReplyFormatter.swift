public import RESP

/// How cairn-cli prints replies.
public enum ReplyFormat: Sendable, Equatable {
    /// redis-cli's terminal format: `(integer) 1`, `"quoted"`, `(nil)`, numbered nested arrays.
    case standard
    /// redis-cli's `--raw`: bytes as they are, one element per line, nothing for nil.
    case raw
    /// One JSON value per reply.
    case json
}

/// Turns replies into the bytes cairn-cli prints, each ending in a newline. Pure; byte-exact
/// with redis-cli 7 (`cliFormatReplyTTY`, `cliFormatReplyRaw`, `sdscatrepr` in redis-cli.c).
public enum ReplyFormatter {
    /// `value` in `format`, with a trailing newline.
    public static func format(_ value: RESPValue, as format: ReplyFormat) -> [UInt8] {
        switch format {
        case .standard: standard(value, prefix: "")
        case .raw: raw(value) + [10]
        case .json: Array(json(value).utf8) + [10]
        }
    }

    /// `bytes` between double quotes with redis-cli's escapes: `\\ \" \n \r \t \a \b`, printable
    /// ASCII as is, every other byte as `\xhh`.
    public static func quoted(_ bytes: some Sequence<UInt8>) -> String {
        var s = "\""
        for b in bytes {
            switch b {
            case UInt8(ascii: "\\"): s += "\\\\"
            case UInt8(ascii: "\""): s += "\\\""
            case 10: s += "\\n"
            case 13: s += "\\r"
            case 9: s += "\\t"
            case 7: s += "\\a"
            case 8: s += "\\b"
            case 0x20...0x7e: s.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let digits = Array("0123456789abcdef".utf8)
                s += "\\x"
                s.unicodeScalars.append(Unicode.Scalar(digits[Int(b >> 4)]))
                s.unicodeScalars.append(Unicode.Scalar(digits[Int(b & 15)]))
            }
        }
        return s + "\""
    }

    private static func standard(_ value: RESPValue, prefix: String) -> [UInt8] {
        func line(_ text: String) -> [UInt8] { Array(text.utf8) + [10] }
        switch value {
        case .simpleString(let s): return line(s)
        case .error(let e): return line("(error) " + e)
        case .integer(let n): return line("(integer) \(n)")
        case .double(let d): return line("(double) " + doubleText(d))
        case .bulkString(let b): return line(quoted(b))
        case .null: return line("(nil)")
        case .boolean(let b): return line(b ? "(true)" : "(false)")
        case .bigNumber(let n): return line("(big number) " + n)
        case .verbatimString(_, let text): return text + [10]
        case .array(let items): return aggregate(items, separator: ")", empty: "(empty array)", prefix: prefix)
        case .push(let items): return aggregate(items, separator: ")", empty: "(empty array)", prefix: prefix)
        case .set(let items): return aggregate(items, separator: "~", empty: "(empty set)", prefix: prefix)
        case .map(let pairs):
            guard !pairs.isEmpty else { return line("(empty hash)") }
            let width = String(pairs.count).count
            let inner = prefix + String(repeating: " ", count: width + 2)
            var out: [UInt8] = []
            for (i, pair) in pairs.enumerated() {
                out += Array(((i == 0 ? "" : prefix) + padded(i + 1, width) + "# ").utf8)
                out += standard(pair.key, prefix: inner).dropLast()
                out += Array(" => ".utf8)
                out += standard(pair.value, prefix: inner)
            }
            return out
        }
    }

    /// Numbered elements; nested ones are indented by the width of the numbers plus two.
    private static func aggregate(_ items: [RESPValue], separator: String, empty: String, prefix: String) -> [UInt8] {
        guard !items.isEmpty else { return Array(empty.utf8) + [10] }
        let width = String(items.count).count
        let inner = prefix + String(repeating: " ", count: width + 2)
        var out: [UInt8] = []
        for (i, item) in items.enumerated() {
            // The first element follows the number the parent already printed.
            out += Array(((i == 0 ? "" : prefix) + padded(i + 1, width) + separator + " ").utf8)
            out += standard(item, prefix: inner)
        }
        return out
    }

    private static func padded(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: " ", count: width - s.count) + s
    }

    private static func raw(_ value: RESPValue) -> [UInt8] {
        switch value {
        case .simpleString(let s), .error(let s), .bigNumber(let s): return Array(s.utf8)
        case .integer(let n): return Array(String(n).utf8)
        case .double(let d): return Array(doubleText(d).utf8)
        case .bulkString(let b), .verbatimString(_, let b): return b
        case .null: return []
        case .boolean(let b): return Array((b ? "(true)" : "(false)").utf8)
        case .array(let items), .set(let items), .push(let items): return joined(items.map(raw))
        case .map(let pairs): return joined(pairs.map { raw($0.key) + [32] + raw($0.value) })  // "key value", as redis-cli
        }
    }

    private static func joined(_ parts: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for (i, p) in parts.enumerated() {
            if i > 0 { out.append(10) }
            out += p
        }
        return out
    }

    static func doubleText(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    /// `value` as JSON: strings for simple and bulk strings (bytes that are not UTF-8 as
    /// `\u00hh`), numbers, `null`, arrays (also for sets and pushes), objects for maps (keys as
    /// text), `{"error": "..."}` for an error reply; infinities and NaN as strings.
    public static func json(_ value: RESPValue) -> String {
        switch value {
        case .simpleString(let s): return jsonString(Array(s.utf8))
        case .error(let e): return "{\"error\":" + jsonString(Array(e.utf8)) + "}"
        case .integer(let n): return String(n)
        case .double(let d): return d.isFinite ? doubleText(d) : jsonString(Array(doubleText(d).utf8))
        case .bulkString(let b), .verbatimString(_, let b): return jsonString(b)
        case .null: return "null"
        case .boolean(let b): return b ? "true" : "false"
        case .bigNumber(let n): return n
        case .array(let items), .set(let items), .push(let items): return "[" + items.map(json).joined(separator: ",") + "]"
        case .map(let pairs):
            let members = pairs.map { pair -> String in
                let key = pair.key.bytes.map(jsonString) ?? jsonString(Array(json(pair.key).utf8))
                return key + ":" + json(pair.value)
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal of `bytes`: UTF-8 text kept, control characters escaped, and when
    /// the bytes are not valid UTF-8, each byte above 0x7f as `\u00hh`.
    public static func jsonString(_ bytes: [UInt8]) -> String {
        let valid = String(validating: bytes, as: UTF8.self)
        var s = "\""
        func escape(_ scalar: Unicode.Scalar) {
            switch scalar {
            case "\"": s += "\\\""
            case "\\": s += "\\\\"
            case "\n": s += "\\n"
            case "\r": s += "\\r"
            case "\t": s += "\\t"
            case "\u{08}": s += "\\b"
            case "\u{0C}": s += "\\f"
            default:
                if scalar.value < 0x20 || (valid == nil && scalar.value > 0x7e) {
                    let hex = String(scalar.value, radix: 16)
                    s += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    s.unicodeScalars.append(scalar)
                }
            }
        }
        if let valid {
            for scalar in valid.unicodeScalars { escape(scalar) }
        } else {
            for b in bytes { escape(Unicode.Scalar(b)) }
        }
        return s + "\""
    }
}
