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

