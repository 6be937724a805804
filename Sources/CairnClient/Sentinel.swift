import Logging
import NIOCore
import RESP
import Synchronization

/// A server's address: host name or IP, and TCP port.
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(_ host: String, _ port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { "\(host):\(port)" }
}

/// Where a Sentinel-managed client finds its primary: the sentinels to ask and the name they
/// monitor it under.
///
/// See [High availability with Redis Sentinel](https://redis.io/docs/latest/operate/oss_and_stack/management/sentinel/)
/// and the [Sentinel client guidelines](https://redis.io/docs/latest/develop/reference/sentinel-clients/).
public struct SentinelConfiguration: Sendable {
    /// The sentinels, asked in order; one that answers moves to the front.
    public var sentinels: [ServerAddress]
    /// The name the sentinels monitor the primary under (`sentinel monitor NAME ...`).
    public var primaryName: String
    /// Sentinel's own `requirepass`, when set. Default nil. (The data servers' password is
    /// ``CairnClientConfiguration/password``.)
    public var password: String?
    /// ACL user for the sentinels; nil authenticates as `default`. Default nil.
    public var username: String?

    public init(sentinels: [ServerAddress], primaryName: String, password: String? = nil, username: String? = nil) {
        self.sentinels = sentinels
        self.primaryName = primaryName
        self.password = password
        self.username = username
    }
}

extension CairnClient {
    /// A client for the primary that `sentinels` monitor as `primaryName`.
    ///
    /// The client asks the sentinels for the primary (`SENTINEL get-master-addr-by-name`),
    /// checks with `ROLE` that the server it reached is the primary, and follows a failover:
    /// a sentinel's `+switch-master` message, a `-READONLY` reply or a lost connection make it
    /// ask again, and requests wait for the new primary within their deadline (set
    /// ``CairnClientConfiguration/requestDeadline`` and ``CairnClientConfiguration/reconnectDeadline``
    /// longer than a failover takes). Reads can go to replicas through ``replicas``.
    ///
    /// ```swift
    /// let client = CairnClient(
    ///     sentinels: [ServerAddress("127.0.0.1", 26379), ServerAddress("127.0.0.1", 26380)],
    ///     primaryName: "mymaster")
    /// try await client.set("k", "v")
    /// ```
    ///
    /// `configuration`'s host and port are not used; its password, protocol, timeouts and pool
    /// settings apply to the data servers.
    public convenience init(
        sentinels: [ServerAddress], primaryName: String, sentinelPassword: String? = nil,
        configuration: CairnClientConfiguration = CairnClientConfiguration()
    ) {
        var configuration = configuration
        configuration.sentinel = SentinelConfiguration(sentinels: sentinels, primaryName: primaryName, password: sentinelPassword)
        self.init(configuration: configuration)
    }

    /// Reads served by a replica of the Sentinel-managed primary (`SENTINEL replicas`), on a
    /// pool of their own; the primary serves them while no replica is healthy. Replication is
    /// asynchronous, so a read may not see a write just acknowledged by the primary.
    ///
    /// `try await client.replicas.get("k")`
    ///
    /// Without Sentinel (``CairnClientConfiguration/sentinel`` nil) the reads go to the server the
    /// client talks to.
    public var replicas: ReplicaReader { ReplicaReader(route: replicaRoute ?? route) }
}

/// The read commands of a client, sent to replicas. Get it with ``CairnClient/replicas``.
public struct ReplicaReader: KeyValueReader, RoutedSender {
    let route: Route

    public var _route: CommandRoute { CommandRoute(route) }
}

/// Which server of a Sentinel-managed group a pool connects to.
enum ServerRole: Sendable {
    case primary
    case replica

    /// The first element of a `ROLE` reply from a server in this role.
    var roleName: String { self == .primary ? "master" : "slave" }
}

/// Finds the primary (and replicas) through the sentinels, and follows `+switch-master`.
///
/// The primary's address is cached until a failover is noticed: a `+switch-master` message
/// replaces it; a failed connect, a lost connection, a `ROLE` that is not `master` or a
/// `-READONLY` reply drop it, so the next connect asks the sentinels again.
final class SentinelDiscovery: Sendable {
    let settings: SentinelConfiguration
    private let base: CairnClientConfiguration
    private let group: any EventLoopGroup
    private let logger: Logger

    private struct State {
        var sentinels: [ServerAddress]
        var primary: ServerAddress?
        var watcher: Task<Void, Never>?
        var stopped = false
        /// Called when the primary changed (the pools close their connections to the old one).
        var onSwitch: [@Sendable () -> Void] = []
    }

    private let state: Mutex<State>

    init(settings: SentinelConfiguration, base: CairnClientConfiguration, group: any EventLoopGroup) {
        self.settings = settings
        self.base = base
        self.group = group
        self.logger = base.logger
        state = Mutex(State(sentinels: settings.sentinels))
    }

    /// Registers `body` to run when a `+switch-master` for this primary arrives.
    func onSwitch(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.onSwitch.append(body) }
    }

    /// The address to connect to for `role`; starts following `+switch-master` on first use.
    func address(for role: ServerRole) async throws(CairnClientError) -> ServerAddress {
        startWatching()
        switch role {
        case .primary:
            if let known = state.withLock({ $0.primary }) { return known }
            let found = try await askPrimary()
            state.withLock { $0.primary = found }
            return found
        case .replica:
            if let replica = try await askReplica() { return replica }
            logger.debug("cairn client: no healthy replica; reads go to the primary")
            return try await address(for: .primary)
        }
    }

    /// Forgets the primary's address: the next connect asks the sentinels.
    func forgetPrimary() {
        state.withLock { $0.primary = nil }
    }

    /// Stops following `+switch-master`.
    func stop() {
        let watcher = state.withLock { s in
            s.stopped = true
            defer { s.watcher = nil }
            return s.watcher
        }
        watcher?.cancel()
    }

    // MARK: Asking the sentinels

    private func askPrimary() async throws(CairnClientError) -> ServerAddress {
        try await askSentinels("SENTINEL get-master-addr-by-name") { connection, deadline throws(CairnClientError) in
            let reply = try await connection.execute(
                [command("SENTINEL", "get-master-addr-by-name", settings.primaryName)], family: nil, deadline: deadline)[0]
                .throwingServerError()
            if reply.isNull { return nil }
            let items = try reply.expectArray()
            guard items.count == 2, let host = items[0].string, let port = Int(items[1].text) else {
                throw .unexpected(reply, expected: "[ip, port]")
            }
            return ServerAddress(host, port)
        }
    }

    /// A replica at random that the sentinels hold up and connected, or nil when they know none.
    private func askReplica() async throws(CairnClientError) -> ServerAddress? {
        let healthy: [ServerAddress] = try await askSentinels("SENTINEL replicas") { connection, deadline throws(CairnClientError) in
            let reply = try await connection.execute(
                [command("SENTINEL", "replicas", settings.primaryName)], family: nil, deadline: deadline)[0]
                .throwingServerError()
            var out: [ServerAddress] = []
            for item in try reply.expectArray() {
                let fields = Dictionary(try item.expectTextPairs(), uniquingKeysWith: { a, _ in a })
                let flags = (fields["flags"] ?? "").split(separator: ",")
                let down = flags.contains { $0 == "s_down" || $0 == "o_down" || $0 == "disconnected" }
                // Not also `master-link-status`: sentinels refresh it from INFO every 10 s, so a
                // replica that just synced reads "err" for a while.
                guard !down, let ip = fields["ip"], let port = fields["port"].flatMap(Int.init)
                else { continue }
                out.append(ServerAddress(ip, port))
            }
            return out
        }
        return healthy.randomElement()
    }

    /// Asks each sentinel in turn until one answers (nil counts as no answer); the one that
    /// answered moves to the front of the list, as the Sentinel client guidelines ask.
    private func askSentinels<T: Sendable>(
        _ what: String, _ question: (Connection, NIODeadline) async throws(CairnClientError) -> T?
    ) async throws(CairnClientError) -> T {
        let sentinels = state.withLock { $0.sentinels }
        var lastError = CairnClientError(.connection, message: "no sentinel knows the primary \(settings.primaryName)")
        for sentinel in sentinels {
            let deadline = NIODeadline.after(base.connectTimeout)
            do {
                let connection = try await Connection.open(sentinelConfiguration(sentinel), group: group, deadline: deadline)
                defer { connection.close() }
                guard let answer = try await question(connection, deadline) else { continue }
                state.withLock { s in
                    if let i = s.sentinels.firstIndex(of: sentinel), i > 0 {
                        s.sentinels.remove(at: i)
                        s.sentinels.insert(sentinel, at: 0)
                    }
                }
                return answer
            } catch {
                logger.debug("cairn client: sentinel did not answer", metadata: ["sentinel": "\(sentinel)", "question": "\(what)", "error": "\(error)"])
                // A sentinel that refuses the question (unknown name, auth) is as good as absent;
                // the error says why when none answers.
                lastError =
                    error.code == .server || error.code == .tls
                    ? error : CairnClientError(.connection, message: "\(what) at \(sentinel): \(error.message)")
            }
        }
        throw lastError
    }

    /// The client's settings aimed at one sentinel: its own credentials, RESP2, no database state.
    private func sentinelConfiguration(_ sentinel: ServerAddress) -> CairnClientConfiguration {
        var c = base
        c.host = sentinel.host
        c.port = sentinel.port
        c.unixSocketPath = nil
        c.password = settings.password
        c.username = settings.username
        c.protocolVersion = .v2
        c.sentinel = nil
        return c
    }

    // MARK: Following failovers

    private func startWatching() {
        let start = state.withLock { s in
            guard s.watcher == nil, !s.stopped else { return false }
            s.watcher = Task { [weak self] in await self?.watch() }
            return true
        }
        if start { logger.debug("cairn client follows +switch-master", metadata: ["primary": "\(settings.primaryName)"]) }
    }

    /// Subscribes to `+switch-master` on one sentinel after another (each subscription
    /// reconnects by itself until the reconnect deadline passes) until stopped.
    private func watch() async {
        var delay = base.initialBackoff
        while !Task.isCancelled {
            for sentinel in state.withLock({ $0.sentinels }) {
                do {
                    let messages = try await Subscription.open(
                        configuration: sentinelConfiguration(sentinel), group: group, channels: [Array("+switch-master".utf8)],
                        patterns: [])
                    for try await message in messages {
                        switched(message.payloadString)
                        delay = base.initialBackoff
                    }
                } catch {
                    logger.debug("cairn client: +switch-master subscription ended", metadata: ["sentinel": "\(sentinel)", "error": "\(error)"])
                }
                if Task.isCancelled { return }
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, base.maximumBackoff)
        }
    }

    /// `+switch-master`'s payload: `<name> <old ip> <old port> <new ip> <new port>`.
    private func switched(_ payload: String) {
        let parts = payload.split(separator: " ")
        guard parts.count == 5, parts[0] == settings.primaryName, let port = Int(parts[4]) else { return }
        let primary = ServerAddress(String(parts[3]), port)
        let callbacks = state.withLock { s in
            s.primary = primary
            return s.onSwitch
        }
        logger.info("cairn client: primary switched", metadata: ["primary": "\(primary)", "name": "\(settings.primaryName)"])
        for body in callbacks { body() }
    }
}

/// A pool's Sentinel target: which role it connects to, found through which discovery.
struct SentinelTarget: Sendable {
    let discovery: SentinelDiscovery
    let role: ServerRole
}
