/// The reply of `INFO`, parsed: sections of `name:value` fields.
///
/// ```swift
/// let info = try await client.info("rocksdb")
/// let open = info.integer("open_iterators", in: "rocksdb")
/// ```
public struct ServerInfo: Sendable, Hashable {
    /// Section names (lowercased, as in `INFO section`) to their fields, in no particular order.
    public var sections: [String: [String: String]]
    /// The text as the server sent it.
    public var text: String

    /// Parses INFO's text: `# Section` headers, `name:value` lines, blank lines between sections.
    public init(parsing text: String) {
        self.text = text
        var sections: [String: [String: String]] = [:]
        var current = ""
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw[...]
            if line.hasPrefix("#") {
                current = line.dropFirst().trimmingSpaces().lowercased()
                sections[current, default: [:]] = sections[current] ?? [:]
            } else if let colon = line.firstIndex(of: ":") {
                sections[current, default: [:]][String(line[..<colon])] = String(line[line.index(after: colon)...])
            }
        }
        self.sections = sections
    }

    /// The fields of a section (`"server"`, `"rocksdb"`...); empty when absent.
    public subscript(section: String) -> [String: String] {
        sections[section.lowercased()] ?? [:]
    }

    /// A field's value, from `section` or, when nil, from whichever section has it.
    public func value(_ field: String, in section: String? = nil) -> String? {
        if let section { return self[section][field] }
        return sections.values.lazy.compactMap { $0[field] }.first
    }

    /// A field's value as an integer; nil when absent or not an integer.
    public func integer(_ field: String, in section: String? = nil) -> Int? {
        value(field, in: section).flatMap { Int($0) }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
