// Hashes: https://redis.io/docs/latest/commands/?group=hash
extension KeyValueReader {
    /// `HGET key field`: the field's value, nil when the field or the hash is missing.
    public func hget(_ key: some RESPArgument, _ field: some RESPArgument) async throws -> [UInt8]? {
        try await call("HGET", key, field).expectBytes()
    }

    /// `HMGET key field...`: one value (or nil) per field, in order.
    public func hmget(_ key: some RESPArgument, _ fields: [any RESPArgument]) async throws -> [[UInt8]?] {
        try await send(["HMGET", key] + fields).expectArray().map { value throws(CairnClientError) in try value.expectBytes() }
    }

    /// `HGETALL key`: every field and value (on Cairn in field byte order); empty when missing.
    public func hgetAll(_ key: some RESPArgument) async throws -> [KeyValue] {
        let reply = try await call("HGETALL", key)
        if case .map(let pairs) = reply {
            return try pairs.map { (pair) throws(CairnClientError) -> KeyValue in
                guard let k = pair.key.bytes, let v = pair.value.bytes else { throw .unexpected(reply, expected: "field-value pairs") }
                return KeyValue(key: k, value: v)
            }
        }
        return try reply.expectEntries()
    }

    /// `HKEYS key`: every field.
    public func hkeys(_ key: some RESPArgument) async throws -> [[UInt8]] {
        try await call("HKEYS", key).expectByteArrays()
    }

    /// `HVALS key`: every value, in field order.
    public func hvals(_ key: some RESPArgument) async throws -> [[UInt8]] {
        try await call("HVALS", key).expectByteArrays()
    }

    /// `HLEN key`: the number of fields, 0 when missing.
    public func hlen(_ key: some RESPArgument) async throws -> Int {
        Int(try await call("HLEN", key).expectInt())
    }

    /// `HEXISTS key field`.
    public func hexists(_ key: some RESPArgument, _ field: some RESPArgument) async throws -> Bool {
        try await call("HEXISTS", key, field).expectBool()
    }

    /// `HSTRLEN key field`: the value's length, 0 when missing.
    public func hstrlen(_ key: some RESPArgument, _ field: some RESPArgument) async throws -> Int {
        Int(try await call("HSTRLEN", key, field).expectInt())
    }
}

extension KeyValueWriter {
    /// `HSET key field value [field value ...]`: the number of fields created (not updated).
    @discardableResult
    public func hset(_ key: some RESPArgument, _ fields: [(any RESPArgument, any RESPArgument)]) async throws -> Int {
        Int(try await send(["HSET", key] + fields.flatMap { [$0.0, $0.1] }).expectInt())
    }

    /// `HSET key field value`: true when the field was created.
    @discardableResult
    public func hset(_ key: some RESPArgument, _ field: some RESPArgument, _ value: some RESPArgument) async throws -> Bool {
        try await call("HSET", key, field, value).expectInt() == 1
    }

    /// `HSETNX key field value`: true when the field was missing and is now set.
    @discardableResult
    public func hsetNX(_ key: some RESPArgument, _ field: some RESPArgument, _ value: some RESPArgument) async throws -> Bool {
        try await call("HSETNX", key, field, value).expectBool()
    }

    /// `HDEL key field...`: the number of fields removed; the hash goes with its last field.
    @discardableResult
    public func hdel(_ key: some RESPArgument, _ fields: [any RESPArgument]) async throws -> Int {
        Int(try await send(["HDEL", key] + fields).expectInt())
    }

    /// `HINCRBY key field increment`: the new value.
    @discardableResult
    public func hincrBy(_ key: some RESPArgument, _ field: some RESPArgument, _ increment: Int) async throws -> Int64 {
        try await call("HINCRBY", key, field, increment).expectInt()
    }

    /// `HINCRBYFLOAT key field increment`: the new value.
    @discardableResult
    public func hincrByFloat(_ key: some RESPArgument, _ field: some RESPArgument, _ increment: Double) async throws -> Double {
        try await call("HINCRBYFLOAT", key, field, increment).expectDouble()
    }
}
