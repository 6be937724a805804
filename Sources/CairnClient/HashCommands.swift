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

