public import Logging
public import NIOCore
public import RESP
#if TLS
    public import NIOSSL
#endif

/// How a ``CairnClient`` connects: address, credentials, protocol, timeouts, pool size and
/// reconnect policy.
///
/// ```swift
/// var config = CairnClientConfiguration(host: "127.0.0.1", port: 7379)
/// config.password = "secret"
/// config.requestDeadline = .seconds(2)
/// let client = CairnClient(configuration: config)
/// ```
public struct CairnClientConfiguration: Sendable {
    /// Host name or IP address. Default `127.0.0.1`.
    public var host: String
    /// TCP port. Default 7379 (Cairn's default; Redis uses 6379).
    public var port: Int
    /// A Unix domain socket to connect to instead of `host:port`. Default nil (TCP).
    public var unixSocketPath: String?
    #if TLS
        /// TLS for every connection (NIOSSL's settings: trust roots, client certificate, minimum
        /// version), e.g. to `redis-server --tls-port` or a TLS-terminating proxy in front of cairnd.
        /// Default nil: plain TCP. Only with the package's `TLS` trait (BoringSSL is built for it);
        /// `import CairnClient` brings NIOSSL's types.
        ///
        /// A certificate the trust roots do not vouch for, or one that names another host, fails
        /// the request at once with ``CairnClientError/Code/tls`` and the reason: reconnecting
        /// would not change the answer.
        ///
        /// ```swift
        /// var config = CairnClientConfiguration(host: "db.internal", port: 6380)
        /// var tls = TLSConfiguration.makeClientConfiguration()
        /// tls.trustRoots = .file("/etc/cairn/ca.pem")
        /// config.tls = tls
        /// ```
        public var tls: TLSConfiguration?
        /// The name the server's certificate must carry (and sent as SNI). Default nil: ``host``
        /// when it is a name; an IP address is checked against the certificate's IP entries.
        public var tlsServerName: String?
    #endif
    /// Sent with `HELLO 3 AUTH` (or `AUTH` on RESP2) on every new connection when set. Default nil.
    public var password: String?
    /// ACL user name; nil authenticates as `default`. Default nil.
    public var username: String?
    /// The protocol asked for with `HELLO`. Default `.v3`; a server that refuses it gets RESP2.
    /// `.v2` sends no HELLO (replies then have RESP2 shapes: maps as flat arrays).
    public var protocolVersion: RESPVersion = .v3
    /// Longest wait for one connection attempt (TCP or Unix socket). Default 5 s.
    public var connectTimeout: Duration = .seconds(5)
    /// How long a request may take in all: waiting for a connection of the pool (also while it
    /// reconnects) and for the reply. When it passes the request fails with
    /// ``CairnClientError/Code/timeout``; its reply, if it still comes, is dropped. Default 30 s.
    public var requestDeadline: Duration = .seconds(30)
    /// A connection with nothing sent for this long is closed (a new one opens when needed).
    /// Default 60 s.
    public var idleTimeout: Duration = .seconds(60)
    /// A connection with nothing in flight for this long is sent a `PING`; one not answered
    /// within ``connectTimeout`` closes the connection. Default 10 s.
    public var healthCheckInterval: Duration = .seconds(10)
    /// Most connections the pool keeps open. Requests are pipelined, so a few connections carry
    /// many concurrent requests; scoped APIs (snapshots, transactions, iterators,
    /// ``CairnClient/withConnection(_:)``) each hold one to themselves. Default 8.
    public var maximumConnections: Int = 8
    /// How long the pool keeps trying to connect, with exponential backoff, before requests
    /// waiting for a connection fail with ``CairnClientError/Code/connection``: a server restart
    /// shorter than this loses no request (as long as each request's deadline allows). Default 10 s.
    public var reconnectDeadline: Duration = .seconds(10)
    /// Whether a request that was written but not answered when its connection broke is sent
    /// again on a new connection (within its deadline). Default true: cairnd answers every
    /// request it ran before a shutdown closes the connection, so the resent request runs once
    /// and a restart loses nothing. Turn it off for at-most-once delivery against a server that
    /// may crash between running a write and answering it (the request then fails with
    /// ``CairnClientError/Code/connection``). Requests on a pinned connection (snapshots,
    /// transactions, ``CairnClient/withConnection(_:)``) are never resent.
    public var resendUnanswered = true
    /// Most connection attempts in one reconnect, whichever of this and ``reconnectDeadline`` ends
    /// first. Default unlimited.
    public var connectAttempts: Int = .max
    /// First backoff delay; doubled after each failed attempt. Default 50 ms.
    public var initialBackoff: Duration = .milliseconds(50)
    /// Longest backoff delay. Default 1 s.
    public var maximumBackoff: Duration = .seconds(1)
    /// Where the client logs connects, reconnects and failures. Default: a logger that drops
    /// everything (a library does not write to the application's stderr unasked).
    public var logger = Logger(label: "cairn.client", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Receives the RESP3 push messages that arrive on the pool's connections between replies
    /// (`CLIENT TRACKING` invalidations, pub/sub messages of a connection that subscribed
    /// through ``CairnClient/send(_:)``), called on the connection's event loop: keep it short
    /// and non-blocking. Default nil: pushes are dropped. Either way they never stand in for a
    /// reply, so the replies stay matched to their requests. (Subscribe with
    /// ``CairnClient/subscribe(to:)``: a `SUBSCRIBE` sent as a plain request over RESP3 is
    /// answered by pushes only, so the request waits until its deadline.)
    public var pushHandler: (@Sendable (RESPValue) -> Void)?
    /// Sentinel discovery: when set, the client connects to the primary the sentinels name
    /// instead of ``host``:``port``, and follows failovers. Default nil. See
    /// ``CairnClient/init(sentinels:primaryName:sentinelPassword:configuration:)``.
    public var sentinel: SentinelConfiguration?
    /// The event loops connections run on. Default nil: NIO's shared singleton group (one
    /// thread per core).
    public var eventLoopGroup: (any EventLoopGroup)?

    public init(host: String = "127.0.0.1", port: Int = 7379, password: String? = nil, username: String? = nil) {
        self.host = host
        self.port = port
        self.password = password
        self.username = username
    }
}
