/// One page of `SSCAN`: the cursor to pass next (`"0"` when complete) and the members.
public struct SetScanPage: Sendable, Hashable {
    public var cursor: String
    public var members: [[UInt8]]
    /// True when this was the last page.
    public var isComplete: Bool { cursor == "0" }
}

// Sets: https://redis.io/docs/latest/commands/?group=set
extension KeyValueReader {
    /// `SCARD key`: the number of members, 0 when missing.
    public func scard(_ key: some RESPArgument) async throws -> Int {
        Int(try await call("SCARD", key).expectInt())
    }

    /// `SISMEMBER key member`.
    public func sismember(_ key: some RESPArgument, _ member: some RESPArgument) async throws -> Bool {
        try await call("SISMEMBER", key, member).expectBool()
    }

    /// `SMISMEMBER key member...`: one answer per member, in order.
    public func smismember(_ key: some RESPArgument, _ members: [any RESPArgument]) async throws -> [Bool] {
        try await send(["SMISMEMBER", key] + members).expectArray().map { value throws(CairnClientError) in try value.expectBool() }
    }

    /// `SMEMBERS key`: every member (Cairn: in byte order).
    public func smembers(_ key: some RESPArgument) async throws -> [[UInt8]] {
        try await call("SMEMBERS", key).expectByteArrays()
    }

    /// `SRANDMEMBER key count`: up to `count` distinct members, or `-count` possibly repeated.
    public func srandmember(_ key: some RESPArgument, count: Int) async throws -> [[UInt8]] {
        try await call("SRANDMEMBER", key, count).expectByteArrays()
    }

    /// `SINTER key...`.
    public func sinter(_ keys: [any RESPArgument]) async throws -> [[UInt8]] {
        try await send(["SINTER"] + keys).expectByteArrays()
    }

    /// `SUNION key...`.
    public func sunion(_ keys: [any RESPArgument]) async throws -> [[UInt8]] {
        try await send(["SUNION"] + keys).expectByteArrays()
    }

    /// `SDIFF key...`: the members of the first set in none of the others.
    public func sdiff(_ keys: [any RESPArgument]) async throws -> [[UInt8]] {
        try await send(["SDIFF"] + keys).expectByteArrays()
    }

    /// `SINTERCARD numkeys key... [LIMIT limit]`: the intersection's size (at most `limit` when > 0).
    public func sintercard(_ keys: [any RESPArgument], limit: Int? = nil) async throws -> Int {
        var argv: [any RESPArgument] = ["SINTERCARD", keys.count] + keys
        if let limit { argv += ["LIMIT", limit] }
        return Int(try await send(argv).expectInt())
    }

    /// `SSCAN key cursor [MATCH pattern] [COUNT n]`: one page. Start with `"0"`.
    public func sscan(_ key: some RESPArgument, cursor: String = "0", match: String? = nil, count: Int? = nil) async throws -> SetScanPage {
        var argv: [any RESPArgument] = ["SSCAN", key, cursor]
        if let match { argv += ["MATCH", match] }
        if let count { argv += ["COUNT", count] }
        let reply = try await send(argv).expectArray()
        guard reply.count == 2, let next = reply[0].string else {
            throw CairnClientError.unexpected(.array(reply), expected: "[cursor, members]")
        }
        return SetScanPage(cursor: next, members: try reply[1].expectByteArrays())
    }
}

