import NIOPosix
import RESP
public import ServiceLifecycle

/// An async/await client for Cairn (and, for the commands both have, Redis) on SwiftNIO, with a
/// connection pool, pipelining, reconnects with backoff and typed methods for every command family.
///
/// ```swift
/// let client = CairnClient(host: "127.0.0.1", port: 7379)
/// defer { client.close() }
/// try await client.set("greeting", "hello")
/// let text = try await client.getString("greeting")   // "hello"
/// ```
///
/// A client is `Sendable`: share one among many tasks. Requests are pipelined over a few
/// connections (at most ``CairnClientConfiguration/maximumConnections``); no thread waits for a
/// reply. Commands whose effect belongs to a connection (snapshots, iterators, WATCH) run through
/// scoped APIs that pin one: ``withSnapshot(_:)``, ``iterate(from:reverse:batchSize:)``,
/// ``transaction(watching:attempts:_:)``, ``withConnection(_:)``.
///
/// The client asks for RESP3 (`HELLO 3`) and falls back to RESP2 when the server refuses; the
/// typed methods accept either shape.
///
/// As a swift-service-lifecycle `Service`, ``run()`` waits for graceful shutdown, then lets the
/// requests in flight finish and closes the connections:
/// ```swift
/// let group = ServiceGroup(services: [client, server], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
public final class CairnClient: KeyValueWriter, RoutedSender, Service {
    /// The configuration this client was made with.
    public let configuration: CairnClientConfiguration
    let route: Route
    /// Reads for ``replicas`` under Sentinel; nil without it.
    let replicaRoute: Route?
    let discovery: SentinelDiscovery?

    /// A client; no connection is opened until the first request.
    public init(configuration: CairnClientConfiguration) {
        self.configuration = configuration
        let group = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        if let sentinel = configuration.sentinel {
            let discovery = SentinelDiscovery(settings: sentinel, base: configuration, group: group)
            let primary = Pool(configuration: configuration, group: group, target: SentinelTarget(discovery: discovery, role: .primary))
            let replicas = Pool(configuration: configuration, group: group, target: SentinelTarget(discovery: discovery, role: .replica))
            // After a failover the old primary's connections are of no use for writes.
            discovery.onSwitch { [weak primary] in primary?.closeConnections() }
            self.discovery = discovery
            route = Route(pool: primary, family: "default", pinned: nil)
            replicaRoute = Route(pool: replicas, family: "default", pinned: nil)
        } else {
            discovery = nil
            route = Route(pool: Pool(configuration: configuration, group: group, target: nil), family: "default", pinned: nil)
            replicaRoute = nil
        }
    }

    /// A client for `host:port`, authenticating with `password` (and `username`) when given.
    public convenience init(host: String = "127.0.0.1", port: Int = 7379, password: String? = nil, username: String? = nil) {
        self.init(configuration: CairnClientConfiguration(host: host, port: port, password: password, username: username))
    }

    public var _route: CommandRoute { CommandRoute(route) }

    /// Makes later requests fail with ``CairnClientError/Code/closed``; the connections close once
    /// the requests and scoped bodies in progress are done. Server-side snapshots and iterators
    /// of those connections are released by the server when they close.
    public func close() {
        discovery?.stop()
        route.pool.close()
        replicaRoute?.pool.close()
    }

    /// As ``close()``, and returns once the requests in progress have finished and the
    /// connections are closing.
    public func closeGracefully() async {
        discovery?.stop()
        async let replicasDrained: Void? = replicaRoute?.pool.drain()
        await route.pool.drain()
        _ = await replicasDrained
    }

    /// The `Service` entry point: returns after graceful shutdown, once the requests in flight
    /// have finished. Cancelling it closes the client at once. A client works without `run()`
    /// too; then call ``close()`` or ``closeGracefully()`` when done.
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            close()
            throw error
        }
        configuration.logger.debug("cairn client shutting down gracefully")
        await closeGracefully()
    }

    /// Connections the pool holds open right now.
    public var openConnections: Int { route.pool.openConnections }

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
public struct CairnConnection: KeyValueWriter, RoutedSender {
    let route: Route

    public var _route: CommandRoute { CommandRoute(route) }
}
