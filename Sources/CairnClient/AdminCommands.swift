// Server and admin commands: https://redis.io/docs/latest/commands/?group=server
extension KeyValueWriter {
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
