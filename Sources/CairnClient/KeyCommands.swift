/// One page of `SCAN`: the cursor to pass next (`"0"` when the scan is complete) and the keys.
public struct ScanPage: Sendable, Hashable {
    public var cursor: String
    public var keys: [[UInt8]]
    /// True when this was the last page.
    public var isComplete: Bool { cursor == "0" }
}

// Keys: https://redis.io/docs/latest/commands/?group=generic
extension KeyValueReader {
    /// `EXISTS key...`: how many of the keys exist (a key named twice counts twice).
    public func exists(_ keys: any RESPArgument...) async throws -> Int {
        Int(try await send(["EXISTS"] + keys).expectInt())
    }

    /// `TYPE key`: `string`, or `none` when missing (Redis has more types).
    public func type(_ key: some RESPArgument) async throws -> String {
        try await call("TYPE", key).expectString()
    }

    /// `KEYS pattern`: every matching key (Cairn: in byte order). Prefer ``scan(cursor:match:count:type:)``
    /// or ``range(_:_:reverse:limit:)`` on large databases.
    public func keys(_ pattern: some RESPArgument) async throws -> [[UInt8]] {
        try await call("KEYS", pattern).expectByteArrays()
    }

    /// `SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]`: one page. Start with `"0"`.
    public func scan(cursor: String = "0", match: String? = nil, count: Int? = nil, type: String? = nil) async throws -> ScanPage {
        var argv: [any RESPArgument] = ["SCAN", cursor]
        if let match { argv += ["MATCH", match] }
        if let count { argv += ["COUNT", count] }
        if let type { argv += ["TYPE", type] }
        let reply = try await send(argv).expectArray()
        guard reply.count == 2, let next = reply[0].string else {
            throw CairnClientError.unexpected(.array(reply), expected: "[cursor, keys]")
        }
        return ScanPage(cursor: next, keys: try reply[1].expectByteArrays())
    }

    /// `DBSIZE`: the number of keys (Cairn: exact, in the current column family).
    public func dbsize() async throws -> Int {
        Int(try await call("DBSIZE").expectInt())
    }

    /// `RANDOMKEY`: some key, or nil when there is none.
    public func randomKey() async throws -> [UInt8]? {
        try await call("RANDOMKEY").expectBytes()
    }
}

