/// Reads and writes redis.conf-style files: one `name value` per line, `#` comments, values
/// with spaces in double or single quotes.
public enum ConfigFile {
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "config line \(line): \(message)" }
    }

    /// Applies every line of `text` to `config`, through the options of `table`.
    public static func apply(_ text: String, to config: inout Configuration, table: ConfigTable = .engine) throws(ParseError) {
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let words = split(line), let name = words.first else {
                throw ParseError(line: index + 1, message: "unbalanced quotes")
            }
            let value = words.dropFirst().joined(separator: " ")
            if ConfigOption.fixed.contains(where: { $0.0 == name.lowercased() }) { continue }
            if name.lowercased() == "user" {
                // One line per user, so not a ConfigOption (AccessControl.swift).
                do { config.users.append(try ACLUser.parse(Array(words.dropFirst()))) } catch {
                    throw ParseError(line: index + 1, message: error.message)
                }
                continue
            }
            guard let option = table.named(name) else {
                throw ParseError(line: index + 1, message: "unknown option '\(name)'")
            }
            do { try option.apply(value, to: &config) } catch {
                throw ParseError(line: index + 1, message: "bad value '\(value)' for '\(name)': \(error.reason)")
            }
        }
    }

    /// The config as file text, one line per option of `table` (what `CONFIG REWRITE` writes).
    public static func render(_ config: Configuration, table: ConfigTable = .engine) -> String {
        var out = "# Written by CONFIG REWRITE. See config/cairn.conf for every option's meaning.\n"
        for option in table.options {
            out += line(option.name, option.value(in: config)) + "\n"
        }
        for user in config.users { out += user.rule + "\n" }
        return out
    }

    /// `text` with every line setting `name` (or one of `aliases`) replaced by one that sets it
    /// to `value`, in place of the first (at the end if there was none); with no line for it
    /// when `value` is empty.
    static func settingOption(_ name: String, aliases: [String] = [], to value: String, in text: String) -> String {
        let names = Set([name] + aliases)
        let line = value.isEmpty ? nil : line(name, value)
        var out: [Substring] = []
        var written = false
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let words = split(raw.trimmingWhitespace()) ?? []
            if let first = words.first, names.contains(first.lowercased()) {
                if let line, !written { out.append(Substring(line)) }
                written = true
                continue
            }
            out.append(raw)
        }
        if let line, !written {
            if let last = out.last, last.isEmpty { out.removeLast() }
            out.append(Substring(line))
            out.append("")
        }
        return out.joined(separator: "\n")
    }

    /// The line setting `name` to `value`. A list of words is written as words, as
    /// redis-server writes them (`replicaof 10.0.0.1 6379`), so redis-server and Sentinel read
    /// the file alike.
    static func line(_ name: String, _ value: String) -> String {
        let text = wordLists.contains(name) && !value.isEmpty
            ? value.split(separator: " ").map { quote(String($0)) }.joined(separator: " ") : quote(value)
        return "\(name) \(text)"
    }

    /// Options whose value is a list of words (`host port`, `class hard soft seconds ...`).
    static let wordLists: Set<String> = ["replicaof", "client-output-buffer-limit"]

    /// A value as one word of the file: quoted when it has a space, a quote or a control
    /// character, which are escaped (`\n`, `\xHH`), so no value can end its line early.
    static func quote(_ value: String) -> String {
        func plain(_ u: Unicode.Scalar) -> Bool { u != " " && u != "\"" && u != "'" && u != "\\" && u.value >= 0x20 && u.value != 0x7F }
        if !value.isEmpty && value.unicodeScalars.allSatisfy(plain) { return value }
        var out = "\""
        for u in value.unicodeScalars {
            switch u {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7F {
                    out += "\\x" + String(u.value, radix: 16).leftPadded(2)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// Splits a line into words, honouring double quotes (with backslash escapes) and single quotes.
    static func split(_ line: Substring) -> [String]? {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character? = nil
        var escaped = false
        // Inside `\xHH`: after the x, and after the first digit.
        var hexStart = false
        var hexHigh: Character? = nil
        for ch in line {
            if let q = quote {
                if let high = hexHigh {
                    // The second digit of `\xHH`.
                    if let h = high.hexDigitValue, let l = ch.hexDigitValue {
                        current.unicodeScalars.append(Unicode.Scalar(UInt8(h * 16 + l)))
                    } else {
                        current += "\\x" + String(high) + String(ch)
                    }
                    hexHigh = nil
                } else if hexStart {
                    hexHigh = ch
                    hexStart = false
                } else if escaped {
                    switch ch {
                    case "n": current.append("\n")
                    case "r": current.append("\r")
                    case "t": current.append("\t")
                    case "x": hexStart = true
                    default: current.append(ch)
                    }
                    escaped = false
                } else if ch == "\\" && q == "\"" {
                    escaped = true
                } else if ch == q {
                    quote = nil
                } else {
                    current.append(ch)
                }
            } else if ch == " " || ch == "\t" {
                if inWord { words.append(current); current = ""; inWord = false }
            } else if ch == "\"" || ch == "'" {
                quote = ch
                inWord = true
            } else {
                current.append(ch)
                inWord = true
            }
        }
        if quote != nil { return nil }
        if inWord { words.append(current) }
        return words
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s.removeLast() }
        return s
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
