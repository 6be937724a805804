// Server and admin commands: https://redis.io/docs/latest/commands/?group=server
extension KeyValueWriter {
    /// `PING`: `PONG`.
    public func ping() async throws -> String {
        try await call("PING").expectString()
    }

    /// `ECHO message`.
    public func echo(_ message: some RESPArgument) async throws -> [UInt8] {
        try await call("ECHO", message).expectBytes() ?? []
    }

    /// `INFO [section]`, parsed. Cairn adds a `rocksdb` section (open_snapshots, open_iterators...).
    public func info(_ section: String? = nil) async throws -> ServerInfo {
        let reply = try await send(section.map { ["INFO", $0] } ?? ["INFO"])
        return ServerInfo(parsing: try reply.expectString())
    }

    /// `CONFIG GET pattern`: matching option names and their values.
    public func configGet(_ pattern: String) async throws -> [String: String] {
        Dictionary(try await call("CONFIG", "GET", pattern).expectTextPairs(), uniquingKeysWith: { a, _ in a })
    }

    /// `CONFIG SET name value`.
    public func configSet(_ name: String, _ value: some RESPArgument) async throws {
        try await call("CONFIG", "SET", name, value).expectOK()
    }

    /// `CONFIG REWRITE`: writes the running configuration back to the config file.
    public func configRewrite() async throws {
        try await call("CONFIG", "REWRITE").expectOK()
    }

    /// `CONFIG RESETSTAT`.
    public func configResetStat() async throws {
        try await call("CONFIG", "RESETSTAT").expectOK()
    }

    /// `TIME`: the server's clock as Unix seconds and microseconds.
    public func time() async throws -> (seconds: Int64, microseconds: Int64) {
        let parts = try await call("TIME").expectArray()
        guard parts.count == 2 else { throw CairnClientError.unexpected(.array(parts), expected: "[seconds, microseconds]") }
        return (try parts[0].expectInt(), try parts[1].expectInt())
    }

    /// `COMPACT [start end]` (Cairn): compacts the current column family now, or the keys from
    /// `start` to `end`.
    public func compact(from start: (any RESPArgument)? = nil, to end: (any RESPArgument)? = nil) async throws {
        if let start, let end {
            try await call("COMPACT", start, end).expectOK()
        } else {
            try await call("COMPACT").expectOK()
        }
    }
}
