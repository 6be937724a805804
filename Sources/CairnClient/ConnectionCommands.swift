// Connection commands: https://redis.io/docs/latest/commands/?group=connection
// Their effect belongs to one connection, so they are offered on a connection of your own
// (``CairnClient/withConnection(_:)``), not on the pooled client.
extension CairnConnection {
    /// `CLIENT ID`: this connection's id on the server.
    public func clientID() async throws -> Int64 {
        try await call("CLIENT", "ID").expectInt()
    }

    /// `CLIENT SETNAME name`: the name `CLIENT LIST` shows for this connection.
    public func clientSetName(_ name: String) async throws {
        try await call("CLIENT", "SETNAME", name).expectOK()
    }

    /// `CLIENT GETNAME`: this connection's name, nil when unset.
    public func clientGetName() async throws -> String? {
        try await call("CLIENT", "GETNAME").expectBytes().map { String(decoding: $0, as: UTF8.self) }
    }

    /// `CLIENT INFO`: this connection's line of `CLIENT LIST`.
    public func clientInfo() async throws -> String {
        try await call("CLIENT", "INFO").expectString()
    }

    /// `CLIENT LIST`: one line per connection to the server.
    public func clientList() async throws -> [String] {
        try await call("CLIENT", "LIST").expectString().split(separator: "\n").map { String($0.hasSuffix("\r") ? $0.dropLast() : $0) }
    }

    /// `CLIENT KILL ID id`: closes another connection; how many were closed.
    @discardableResult
    public func clientKill(id: Int64) async throws -> Int {
        Int(try await call("CLIENT", "KILL", "ID", id).expectInt())
    }

    /// `SELECT index` (Cairn has database 0 only; column families take that role).
    public func select(_ index: Int) async throws {
        try await call("SELECT", index).expectOK()
    }

    /// `CF.USE name`: makes `name` this connection's current column family.
    public func useColumnFamily(_ name: String) async throws {
        try await call("CF.USE", name).expectOK()
    }

    /// `RESET`: back to the state of a new connection (family, snapshot view, MULTI, WATCH, name).
    public func reset() async throws {
        try await call("RESET").expectOK()
    }
}

extension KeyValueWriter {
    /// `SHUTDOWN [NOSAVE]`: stops the server. Success is the server closing the connection, so
    /// a connection error after sending it is not thrown.
    public func shutdown(noSave: Bool = false) async throws {
        do {
            _ = try await send(noSave ? ["SHUTDOWN", "NOSAVE"] : ["SHUTDOWN"])
        } catch where error.code == .connection {
            return
        }
    }
}
