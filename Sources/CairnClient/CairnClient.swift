public import RESP

/// An async/await client for Cairn (and, for the commands both have, Redis), with a connection
/// pool, pipelining, reconnects with backoff and typed methods for every command family.
///
/// ```swift
/// let client = CairnClient(host: "127.0.0.1", port: 7379)
/// defer { client.close() }
/// try await client.set("greeting", "hello")
/// let text = try await client.getString("greeting")   // "hello"
/// ```
///
/// A client is `Sendable`: share one among many tasks. Each request borrows a connection from
/// the pool (at most ``CairnClientConfiguration/maximumConnections``) for one round trip. Commands
/// whose effect belongs to a connection (snapshots, iterators, WATCH) run through scoped APIs that
/// pin one: ``withSnapshot(_:)``, ``iterate(from:reverse:batchSize:)``, ``transaction(watching:attempts:_:)``,
/// ``withConnection(_:)``.
///
/// The client speaks RESP2 (no `HELLO 3`), so replies have the same shape on every server.
public final class CairnClient: KeyValueWriter {
    /// The configuration this client was made with.
    public let configuration: CairnClientConfiguration
    let route: Route

    /// A client; no connection is opened until the first request.
    public init(configuration: CairnClientConfiguration) {
        self.configuration = configuration
        route = Route(pool: Pool(configuration: configuration), family: "default", pinned: nil)
    }

    /// A client for `host:port`, authenticating with `password` (and `username`) when given.
    public convenience init(host: String = "127.0.0.1", port: Int = 7379, password: String? = nil, username: String? = nil) {
        self.init(configuration: CairnClientConfiguration(host: host, port: port, password: password, username: username))
    }

    @discardableResult
    public func send(_ argv: [any RESPArgument]) async throws -> RESPValue {
        try await route.send(argv)
    }

    public func pipeline(_ commands: [[any RESPArgument]]) async throws -> [RESPValue] {
        try await route.pipeline(commands)
    }

    /// Closes idle connections and makes later requests fail with ``CairnClientError/Code/closed``.
    /// Requests in flight finish; their connections are closed as they come back. Server-side
    /// snapshots and iterators of those connections are released by the server when they close.
    public func close() {
        route.pool.close()
    }

    /// Runs `body` with one connection of the pool to itself, for sequences of commands whose
    /// state belongs to a connection (`SNAPSHOT.USE`, `CF.USE`, `ITER.*`, `CLIENT SETNAME`).
    ///
    /// Leave the connection as you found it (current family, snapshot) or state leaks to the next
    /// borrower; the typed family and snapshot methods of the client reset the family themselves.
    public func withConnection<T: Sendable>(_ body: (CairnConnection) async throws -> T) async throws -> T {
        try await route.withPinned { try await body(CairnConnection(route: Route(pool: $0.pool, family: nil, pinned: $0.pinned))) }
    }
}

/// One connection of the pool, lent to a ``CairnClient/withConnection(_:)`` body: every command
/// runs on the same server connection, in order.
public struct CairnConnection: KeyValueWriter {
    let route: Route

    @discardableResult
    public func send(_ argv: [any RESPArgument]) async throws -> RESPValue {
        try await route.send(argv)
    }

    public func pipeline(_ commands: [[any RESPArgument]]) async throws -> [RESPValue] {
        try await route.pipeline(commands)
    }
}
