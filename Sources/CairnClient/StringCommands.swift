/// When a key set with ``KeyValueWriter/set(_:_:expiration:condition:)`` or read with
/// ``KeyValueWriter/getEx(_:expiration:)`` expires.
public enum Expiration: Sendable, Hashable {
    /// `EX seconds`
    case seconds(Int)
    /// `PX milliseconds`
    case milliseconds(Int)
    /// `EXAT unix-time-seconds`
    case atUnixSeconds(Int)
    /// `PXAT unix-time-milliseconds`
    case atUnixMilliseconds(Int)
    /// `KEEPTTL` (SET only): keep the key's current time to live.
    case keepTTL
    /// `PERSIST` (GETEX only): remove the time to live.
    case persist

    var arguments: [any RESPArgument] {
        switch self {
        case .seconds(let n): ["EX", n]
        case .milliseconds(let n): ["PX", n]
        case .atUnixSeconds(let n): ["EXAT", n]
        case .atUnixMilliseconds(let n): ["PXAT", n]
        case .keepTTL: ["KEEPTTL"]
        case .persist: ["PERSIST"]
        }
    }
}

/// Whether SET writes only when the key is missing (`NX`) or present (`XX`).
public enum SetCondition: Sendable, Hashable {
    case always
    /// `NX`
    case ifNotExists
    /// `XX`
    case ifExists

    var arguments: [any RESPArgument] {
        switch self {
        case .always: []
        case .ifNotExists: ["NX"]
        case .ifExists: ["XX"]
        }
    }
}

// Strings: https://redis.io/docs/latest/commands/?group=string
extension KeyValueReader {
    /// `GET key`: the value, or nil when the key does not exist.
    /// - Throws: `.server` with prefix `WRONGTYPE` on Redis when the key holds another type.
    public func get(_ key: some RESPArgument) async throws -> [UInt8]? {
        try await call("GET", key).expectBytes()
    }

    /// `GET key` decoded as UTF-8 (invalid bytes replaced); nil when the key does not exist.
    public func getString(_ key: some RESPArgument) async throws -> String? {
        try await get(key).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `MGET key...`: one value (or nil) per key, in order. On Cairn all are read at one point in time.
    public func mget(_ keys: [any RESPArgument]) async throws -> [[UInt8]?] {
        try await send(["MGET"] + keys).expectArray().map { value throws(CairnClientError) in try value.expectBytes() }
    }

    /// `STRLEN key`: the value's length in bytes, 0 when missing.
    public func strlen(_ key: some RESPArgument) async throws -> Int {
        Int(try await call("STRLEN", key).expectInt())
    }

    /// `GETRANGE key start end`: the bytes from `start` to `end` inclusive (negative counts from the end).
    public func getRange(_ key: some RESPArgument, _ start: Int, _ end: Int) async throws -> [UInt8] {
        try await call("GETRANGE", key, start, end).expectBytes() ?? []
    }
}

extension KeyValueWriter {
    /// `SET key value [NX|XX] [EX|PX|EXAT|PXAT n|KEEPTTL]`.
    /// - Returns: false when `condition` was not met (nothing written), true otherwise.
    @discardableResult
    public func set(
        _ key: some RESPArgument, _ value: some RESPArgument, expiration: Expiration? = nil, condition: SetCondition = .always
    ) async throws -> Bool {
        let reply = try await send(["SET", key, value] + condition.arguments + (expiration?.arguments ?? []))
        return !reply.isNull
    }

    /// `SET key value GET ...`: writes and returns the previous value (nil when there was none).
    public func setAndGet(
        _ key: some RESPArgument, _ value: some RESPArgument, expiration: Expiration? = nil, condition: SetCondition = .always
    ) async throws -> [UInt8]? {
        try await send(["SET", key, value] + condition.arguments + ["GET"] + (expiration?.arguments ?? [])).expectBytes()
    }

    /// `SETNX key value`: true when the key was missing and is now set.
    @discardableResult
    public func setNX(_ key: some RESPArgument, _ value: some RESPArgument) async throws -> Bool {
        try await call("SETNX", key, value).expectBool()
    }

    /// `SETEX key seconds value`.
    public func setEX(_ key: some RESPArgument, seconds: Int, _ value: some RESPArgument) async throws {
        try await call("SETEX", key, seconds, value).expectOK()
    }

    /// `PSETEX key milliseconds value`.
    public func pSetEX(_ key: some RESPArgument, milliseconds: Int, _ value: some RESPArgument) async throws {
        try await call("PSETEX", key, milliseconds, value).expectOK()
    }

    /// `GETSET key value`: the previous value, nil when there was none.
    public func getSet(_ key: some RESPArgument, _ value: some RESPArgument) async throws -> [UInt8]? {
        try await call("GETSET", key, value).expectBytes()
    }

    /// `GETDEL key`: the value, then deletes the key.
    public func getDel(_ key: some RESPArgument) async throws -> [UInt8]? {
        try await call("GETDEL", key).expectBytes()
    }

    /// `GETEX key [EX|PX|EXAT|PXAT n|PERSIST]`: the value, changing its expiry.
    public func getEx(_ key: some RESPArgument, expiration: Expiration? = nil) async throws -> [UInt8]? {
        try await send(["GETEX", key] + (expiration?.arguments ?? [])).expectBytes()
    }

    /// `MSET key value ...`: sets all pairs at once.
    public func mset(_ pairs: [(key: any RESPArgument, value: any RESPArgument)]) async throws {
        try await send(["MSET"] + pairs.flatMap { [$0.key, $0.value] }).expectOK()
    }

    /// `MSETNX key value ...`: sets all pairs only if none of the keys exists; true when set.
    @discardableResult
    public func msetNX(_ pairs: [(key: any RESPArgument, value: any RESPArgument)]) async throws -> Bool {
        try await send(["MSETNX"] + pairs.flatMap { [$0.key, $0.value] }).expectBool()
    }

    /// `APPEND key value`: the length after appending.
    @discardableResult
    public func append(_ key: some RESPArgument, _ value: some RESPArgument) async throws -> Int {
        Int(try await call("APPEND", key, value).expectInt())
    }

    /// `SETRANGE key offset value`: overwrites from `offset` (zero-padding); the new length.
    @discardableResult
    public func setRange(_ key: some RESPArgument, offset: Int, _ value: some RESPArgument) async throws -> Int {
        Int(try await call("SETRANGE", key, offset, value).expectInt())
    }

    /// `INCR key`: the value after adding 1.
    /// - Throws: `.server` `ERR value is not an integer or out of range` when the value is not an integer.
    @discardableResult
    public func incr(_ key: some RESPArgument) async throws -> Int64 {
        try await call("INCR", key).expectInt()
    }

    /// `INCRBY key n`.
    @discardableResult
    public func incrBy(_ key: some RESPArgument, _ amount: Int64) async throws -> Int64 {
        try await call("INCRBY", key, amount).expectInt()
    }

    /// `DECR key`.
    @discardableResult
    public func decr(_ key: some RESPArgument) async throws -> Int64 {
        try await call("DECR", key).expectInt()
    }

    /// `DECRBY key n`.
    @discardableResult
    public func decrBy(_ key: some RESPArgument, _ amount: Int64) async throws -> Int64 {
        try await call("DECRBY", key, amount).expectInt()
    }

    /// `INCRBYFLOAT key x`: the value after adding `x`.
    @discardableResult
    public func incrByFloat(_ key: some RESPArgument, _ amount: Double) async throws -> Double {
        try await call("INCRBYFLOAT", key, amount).expectDouble()
    }
}
