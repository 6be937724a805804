/// The `NX`/`XX`/`GT`/`LT` option of EXPIRE and its relatives.
public enum ExpireCondition: String, Sendable, Hashable {
    /// Only when the key has no expiry.
    case nx = "NX"
    /// Only when the key has an expiry.
    case xx = "XX"
    /// Only when the new expiry is later.
    case gt = "GT"
    /// Only when the new expiry is sooner.
    case lt = "LT"
}

extension Optional<ExpireCondition> {
    /// The option as EXPIRE's last argument, or none.
    var arguments: [any RESPArgument] { map { [$0.rawValue] } ?? [] }
}

// Expiry: https://redis.io/docs/latest/commands/expire/
extension KeyValueReader {
    /// `TTL key`: seconds left; -1 when the key has no expiry, -2 when it does not exist.
    public func ttl(_ key: some RESPArgument) async throws -> Int64 {
        try await call("TTL", key).expectInt()
    }

    /// `PTTL key`: milliseconds left; -1 no expiry, -2 missing.
    public func pttl(_ key: some RESPArgument) async throws -> Int64 {
        try await call("PTTL", key).expectInt()
    }

    /// `EXPIRETIME key`: the expiry as Unix seconds; -1 no expiry, -2 missing.
    public func expireTime(_ key: some RESPArgument) async throws -> Int64 {
        try await call("EXPIRETIME", key).expectInt()
    }

    /// `PEXPIRETIME key`: the expiry as Unix milliseconds; -1 no expiry, -2 missing.
    public func pExpireTime(_ key: some RESPArgument) async throws -> Int64 {
        try await call("PEXPIRETIME", key).expectInt()
    }
}

