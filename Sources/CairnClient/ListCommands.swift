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
    /// `LPUSH key element...`: the length after the push (the last element given ends first).
    @discardableResult
    public func lpush(_ key: some RESPArgument, _ elements: any RESPArgument...) async throws -> Int {
        Int(try await send(["LPUSH", key] + elements).expectInt())
    }

    /// `RPUSH key element...`: the length after the push.
    @discardableResult
    public func rpush(_ key: some RESPArgument, _ elements: any RESPArgument...) async throws -> Int {
        Int(try await send(["RPUSH", key] + elements).expectInt())
    }

    /// `LPOP key` / `RPOP key`: the element taken from `end`, or nil when the list is empty.
    public func pop(_ key: some RESPArgument, from end: ListEnd = .left) async throws -> [UInt8]? {
        try await call(end == .left ? "LPOP" : "RPOP", key).expectBytes()
    }

    /// `LPOP key count` / `RPOP key count`: up to `count` elements, in pop order (empty when missing).
    public func pop(_ key: some RESPArgument, count: Int, from end: ListEnd = .left) async throws -> [[UInt8]] {
        let reply = try await call(end == .left ? "LPOP" : "RPOP", key, count)
        return reply.isNull ? [] : try reply.expectByteArrays()
    }

    /// `LSET key index element`.
    public func lset(_ key: some RESPArgument, _ index: Int, _ element: some RESPArgument) async throws {
        try await call("LSET", key, index, element).expectOK()
    }

    /// `LTRIM key start stop`: keeps only that range.
    public func ltrim(_ key: some RESPArgument, _ start: Int, _ stop: Int) async throws {
        try await call("LTRIM", key, start, stop).expectOK()
    }

    /// `LREM key count element`: how many were removed (`count` < 0 from the tail, 0 all).
    @discardableResult
    public func lrem(_ key: some RESPArgument, count: Int, _ element: some RESPArgument) async throws -> Int {
        Int(try await call("LREM", key, count, element).expectInt())
    }

    /// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 without the pivot, 0 without the key.
    @discardableResult
    public func linsert(_ key: some RESPArgument, before: Bool, pivot: some RESPArgument, _ element: some RESPArgument) async throws -> Int {
        Int(try await call("LINSERT", key, before ? "BEFORE" : "AFTER", pivot, element).expectInt())
    }

    /// `LMOVE source destination from to`: the element moved, or nil when the source is empty.
    public func lmove(_ source: some RESPArgument, _ destination: some RESPArgument, from: ListEnd, to: ListEnd) async throws -> [UInt8]? {
        try await call("LMOVE", source, destination, from, to).expectBytes()
    }

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
