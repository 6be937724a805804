/// How a ``CairnClient`` connects: address, credentials, timeouts, pool size and reconnect policy.
///
/// ```swift
/// var config = CairnClient.Configuration(host: "127.0.0.1", port: 7379)
/// config.password = "secret"
/// config.maximumConnections = 16
/// let client = CairnClient(configuration: config)
/// ```
public struct CairnClientConfiguration: Sendable {
    /// Host name or IP address. Default `127.0.0.1`.
    public var host: String
    /// TCP port. Default 7379 (Cairn's default; Redis uses 6379).
    public var port: Int
    /// Sent with `AUTH` on every new connection when set. Default nil (no AUTH).
    public var password: String?
    /// ACL user name for `AUTH username password`; nil sends `AUTH password`. Default nil.
    public var username: String?
    /// Longest wait for a TCP connection to be established, in seconds. Default 5.
    public var connectTimeout: Double = 5
    /// Longest wait for a reply (or for the socket to accept a request), in seconds. Default 30.
    /// When it passes the request fails with ``CairnClientError/Code/timeout`` and its connection is closed.
    public var commandTimeout: Double = 30
    /// Most connections the pool keeps open; further requests wait for a free one. Default 8.
    public var maximumConnections: Int = 8
    /// How often to try to connect before a request fails with ``CairnClientError/Code/connection``,
    /// waiting between attempts with exponential backoff. Default 5 attempts.
    public var connectAttempts: Int = 5
    /// First backoff delay in seconds; doubled after each failed attempt. Default 0.05.
    public var initialBackoff: Double = 0.05
    /// Longest backoff delay in seconds. Default 2.
    public var maximumBackoff: Double = 2

    public init(host: String = "127.0.0.1", port: Int = 7379, password: String? = nil, username: String? = nil) {
        self.host = host
        self.port = port
        self.password = password
        self.username = username
    }
}
