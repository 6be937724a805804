/// One end of a key range in Redis's lex syntax: `[key` (inclusive), `(key` (exclusive), or
/// unbounded (`-` as the low end, `+` as the high end).
public struct RangeBound: Sendable, Hashable {
    enum Kind: Sendable, Hashable { case inclusive, exclusive, unbounded }
    let kind: Kind
    let key: [UInt8]

    /// The range includes `key`.
    public static func inclusive(_ key: some RESPArgument) -> RangeBound { RangeBound(kind: .inclusive, key: key.respBytes) }
    /// The range stops short of `key`.
    public static func exclusive(_ key: some RESPArgument) -> RangeBound { RangeBound(kind: .exclusive, key: key.respBytes) }
    /// No bound: the start or end of the key space.
    public static let unbounded = RangeBound(kind: .unbounded, key: [])

    func argument(low: Bool) -> [UInt8] {
        switch kind {
        case .inclusive: [UInt8(ascii: "[")] + key
        case .exclusive: [UInt8(ascii: "(")] + key
        case .unbounded: low ? [UInt8(ascii: "-")] : [UInt8(ascii: "+")]
        }
    }
}

// Cairn's ordered ranges (docs/commands.md, "Ordered ranges"). Not in Redis.
extension KeyValueReader {
    /// `RANGE low high [REV] [LIMIT n]`: the entries between the bounds in key order (descending
    /// with `reverse`; `low` stays the low bound). Stateless: nothing is kept on the server.
    public func range(_ low: RangeBound = .unbounded, _ high: RangeBound = .unbounded, reverse: Bool = false, limit: Int? = nil)
        async throws -> [KeyValue]
    {
        try await send(rangeArguments(low, high, reverse: reverse, limit: limit, keysOnly: false)).expectEntries()
    }

    /// `RANGE low high ... KEYSONLY`: the keys only.
    public func rangeKeys(_ low: RangeBound = .unbounded, _ high: RangeBound = .unbounded, reverse: Bool = false, limit: Int? = nil)
        async throws -> [[UInt8]]
    {
        try await send(rangeArguments(low, high, reverse: reverse, limit: limit, keysOnly: true)).expectByteArrays()
    }

    /// The entries between the bounds as an `AsyncSequence` that fetches `pageSize` entries per
    /// `RANGE` as the loop asks for them, passing the last key back as `(key` for the next page.
    /// Nothing stays open on the server, so leaving the loop early needs no cleanup.
    ///
    /// ```swift
    /// for try await entry in client.entries(from: .inclusive("user:"), to: .exclusive("user;")) {
    ///     print(entry.keyString, entry.valueString)
    /// }
    /// ```
    public func entries(from low: RangeBound = .unbounded, to high: RangeBound = .unbounded, reverse: Bool = false, pageSize: Int = 100)
        -> RangeSequence
    {
        RangeSequence(source: self, low: low, high: high, reverse: reverse, pageSize: pageSize)
    }

    func rangeArguments(_ low: RangeBound, _ high: RangeBound, reverse: Bool, limit: Int?, keysOnly: Bool) -> [any RESPArgument] {
        var argv: [any RESPArgument] = ["RANGE", low.argument(low: true), high.argument(low: false)]
        if reverse { argv.append("REV") }
        if let limit { argv += ["LIMIT", limit] }
        if keysOnly { argv.append("KEYSONLY") }
        return argv
    }
}

/// A key range read page by page with `RANGE` as it is iterated. See ``KeyValueReader/entries(from:to:reverse:pageSize:)``.
public struct RangeSequence: AsyncSequence, Sendable {
    public typealias Element = KeyValue
    let source: any KeyValueReader
    let low: RangeBound
    let high: RangeBound
    let reverse: Bool
    let pageSize: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(sequence: self, low: low, high: high)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let sequence: RangeSequence
        var low: RangeBound
        var high: RangeBound
        var page: [KeyValue] = []
        var index = 0
        var exhausted = false

        init(sequence: RangeSequence, low: RangeBound, high: RangeBound) {
            self.sequence = sequence
            self.low = low
            self.high = high
        }

        public mutating func next() async throws -> KeyValue? {
            if index == page.count {
                guard !exhausted else { return nil }
                page = try await sequence.source.range(low, high, reverse: sequence.reverse, limit: sequence.pageSize)
                index = 0
                exhausted = page.count < sequence.pageSize
                guard let last = page.last else { return nil }
                if sequence.reverse { high = .exclusive(last.key) } else { low = .exclusive(last.key) }
            }
            defer { index += 1 }
            return page[index]
        }
    }
}
