import RESP

/// Which end of a list: `LEFT` (the head) or `RIGHT` (the tail).
public enum ListEnd: String, Sendable, RESPArgument {
    case left = "LEFT"
    case right = "RIGHT"

    public var respBytes: [UInt8] { Array(rawValue.utf8) }
}

// Lists: https://redis.io/docs/latest/commands/?group=list
extension KeyValueReader {
    /// `LLEN key`: the number of elements (0 when missing).
    public func llen(_ key: some RESPArgument) async throws -> Int {
        Int(try await call("LLEN", key).expectInt())
    }

    /// `LRANGE key start stop`: elements from `start` to `stop` inclusive (negative: from the end).
    public func lrange(_ key: some RESPArgument, _ start: Int, _ stop: Int) async throws -> [[UInt8]] {
        try await call("LRANGE", key, start, stop).expectByteArrays()
    }

    /// `LINDEX key index`: the element at `index`, or nil.
    public func lindex(_ key: some RESPArgument, _ index: Int) async throws -> [UInt8]? {
        try await call("LINDEX", key, index).expectBytes()
    }

    /// `LPOS key element`: the index of the first match, or nil.
    public func lpos(_ key: some RESPArgument, _ element: some RESPArgument) async throws -> Int? {
        let reply = try await call("LPOS", key, element)
        return reply.isNull ? nil : Int(try reply.expectInt())
    }
}

extension KeyValueWriter {
    /// `BLPOP key... timeout` / `BRPOP`: the key and element, or nil after `timeout` seconds
    /// (0 waits forever). The client's request timeout must be longer than `timeout`.
    public func blockingPop(_ keys: [any RESPArgument], from end: ListEnd = .left, timeout: Double) async throws -> (key: [UInt8], element: [UInt8])? {
        let reply = try await send([end == .left ? "BLPOP" : "BRPOP"] + keys + [timeout])
        if reply.isNull { return nil }
        let pair = try reply.expectByteArrays()
        guard pair.count == 2 else { throw CairnClientError.unexpected(reply, expected: "[key, element]") }
        return (pair[0], pair[1])
    }

    /// `BLMOVE source destination from to timeout`: the element moved, or nil after `timeout`.
    public func blockingMove(_ source: some RESPArgument, _ destination: some RESPArgument, from: ListEnd, to: ListEnd,
                             timeout: Double) async throws -> [UInt8]? {
        try await call("BLMOVE", source, destination, from, to, timeout).expectBytes()
    }
}
