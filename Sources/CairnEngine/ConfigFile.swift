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
            out += "\(option.name) \(quote(option.value(in: config)))\n"
        }
        for user in config.users { out += user.rule + "\n" }
        return out
    }

    static func quote(_ value: String) -> String {
        if !value.isEmpty && !value.contains(where: { $0 == " " || $0 == "\"" || $0 == "'" }) { return value }
        return "\"" + value.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"") + "\""
    }

    /// Splits a line into words, honouring double quotes (with backslash escapes) and single quotes.
    static func split(_ line: Substring) -> [String]? {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character? = nil
        var escaped = false
        for ch in line {
            if let q = quote {
                if escaped {
                    switch ch {
                    case "n": current.append("\n")
                    case "t": current.append("\t")
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
