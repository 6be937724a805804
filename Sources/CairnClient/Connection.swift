#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Logging
import NIOCore
import NIOPosix
import RESP
import Synchronization

/// One connection to the server on a SwiftNIO channel: RESP requests pipelined through a
/// ``RESPClientHandler``, any number in flight, no thread held while a reply is awaited.
///
/// Opening it connects (TCP or a Unix socket), then says `HELLO 3` (with `AUTH` when the
/// configuration has a password) and falls back to RESP2 (`AUTH` alone) when the server refuses
/// HELLO or protocol 3.
final class Connection: Sendable {
    let channel: any Channel
    /// The protocol the server agreed to: RESP3 after a successful `HELLO 3`, else RESP2.
    let protocolVersion: RESPVersion
    /// Requests sent and not yet answered (or failed): the pool's measure of load.
    private let inFlightCount = Atomic<Int>(0)
    private let nextID = Atomic<Int>(1)
    private let tainted = Atomic<Bool>(false)

    private init(channel: any Channel, protocolVersion: RESPVersion) {
        self.channel = channel
        self.protocolVersion = protocolVersion
    }

    var inFlight: Int { inFlightCount.load(ordering: .relaxed) }
    var isActive: Bool { channel.isActive }
    /// A request on it timed out or was cancelled: its reply is still due, and whatever state
    /// the request set on the connection is unknown, so a lease does not hand it on.
    var isTainted: Bool { tainted.load(ordering: .relaxed) }

    /// Connects, says HELLO (or AUTH) and returns the connection ready for requests.
    ///
    /// - Parameters:
    ///   - pushSink: receives RESP3 push messages (and, when `subscriber`, every value read).
    ///   - onIdle: called on the event loop when nothing was sent for the idle timeout.
    /// - Throws: `.connection` or `.timeout` when connecting fails, `.tls` when the TLS handshake
    ///   fails (untrusted certificate, wrong name), `.server` when the server refuses the credentials.
    static func open(
        _ configuration: CairnClientConfiguration, group: any EventLoopGroup, deadline: NIODeadline,
        pushSink: (@Sendable (RESPValue) -> Void)? = nil, subscriber: Bool = false, onIdle: @escaping @Sendable (any Channel) -> Void = { _ in }
    ) async throws(CairnClientError) -> Connection {
        let connectTimeout = min(TimeAmount(configuration.connectTimeout), deadline - .now())
        let healthCheck = TimeAmount(configuration.healthCheckInterval)
        let idle = TimeAmount(configuration.idleTimeout)
        #if TLS
            let tls = try configuration.tlsSetup()
        #endif
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(max(connectTimeout, .milliseconds(1)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    #if TLS
                        if let tls { try addTLSHandler(tls, to: sync) }
                    #endif
                    try sync.addHandler(IdleStateHandler(allTimeout: healthCheck))
                    try sync.addHandler(
                        RESPClientHandler(
                            pushSink: pushSink, healthCheckTimeout: connectTimeout, idleTimeout: idle,
                            onIdle: onIdle))
                }
            }
        let name = configuration.unixSocketPath ?? "\(configuration.host):\(configuration.port)"
        let channel: any Channel
        do {
            if let path = configuration.unixSocketPath {
                channel = try await bootstrap.connect(unixDomainSocketPath: path).get()
            } else {
                channel = try await bootstrap.connect(host: configuration.host, port: configuration.port).get()
            }
        } catch {
            if case ChannelError.connectTimeout = error {
                throw CairnClientError(.timeout, message: "connecting to \(name) took longer than \(configuration.connectTimeout)")
            }
            throw CairnClientError(.connection, message: "connect to \(name) failed: \(connectFailure(error))")
        }
        // With nothing listening on a local port in the ephemeral range, TCP's simultaneous open
        // can join the socket to itself; it would echo every request back.
        if configuration.unixSocketPath == nil, let local = channel.localAddress, local == channel.remoteAddress {
            channel.close(promise: nil)
            throw CairnClientError(.connection, message: "connect to \(name) failed: nothing listens there (the socket connected to itself)")
        }
        let version: RESPVersion
        do {
            version = try await handshake(channel: channel, configuration: configuration, deadline: deadline)
        } catch {
            channel.close(promise: nil)
            throw error
        }
        if subscriber {
            do {
                try await channel.triggerUserOutboundEvent(EnterSubscriberMode()).get()
            } catch {
                channel.close(promise: nil)
                throw CairnClientError(.connection, message: "the connection closed while it was set up")
            }
        }
        return Connection(channel: channel, protocolVersion: version)
    }

    /// `HELLO 3 [AUTH user pass]`, or RESP2 with `AUTH` when the server does not know HELLO or
    /// refuses protocol 3.
    private static func handshake(
        channel: any Channel, configuration: CairnClientConfiguration, deadline: NIODeadline
    ) async throws(CairnClientError) -> RESPVersion {
        let probe = Connection(channel: channel, protocolVersion: .v2)
        var credentials: Command = []
        if let password = configuration.password {
            credentials = [Array("AUTH".utf8), Array((configuration.username ?? "default").utf8), Array(password.utf8)]
        }
        if configuration.protocolVersion == .v3 {
            let hello = try await probe.execute([command("HELLO", "3") + credentials], family: nil, deadline: deadline)[0]
            guard case .error(let text) = hello else { return .v3 }
            let refusesHello = text.hasPrefix("NOPROTO") || text.hasPrefix("ERR unknown command")
            guard refusesHello else { throw CairnClientError(serverReply: text) }
        }
        if let password = configuration.password {
            var auth: Command = [Array("AUTH".utf8)]
            if let user = configuration.username { auth.append(Array(user.utf8)) }
            auth.append(Array(password.utf8))
            let reply = try await probe.execute([auth], family: nil, deadline: deadline)[0]
            if case .error(let text) = reply { throw CairnClientError(serverReply: text) }
        }
        return .v2
    }

    /// Sends `commands` in one write and returns their replies in order (server errors as
    /// `.error` values), after a `CF.USE` when `family` differs from the connection's current one
    /// (its error is thrown).
    ///
    /// - Throws: `.timeout` at `deadline`, `.cancelled` when the task is cancelled (the replies
    ///   are dropped when they come; the connection stays usable), `.connection` when it broke,
    ///   ``RequestNotSent`` when nothing of the request was written.
    func execute(_ commands: [Command], family: String?, deadline: NIODeadline) async throws(CairnClientError) -> [RESPValue] {
        do {
            return try await executeOrNotSent(commands, family: family, deadline: deadline)
        } catch let error as RequestNotSent {
            throw error.error
        } catch let error as RequestNotAnswered {
            throw error.error
        } catch {
            throw error as? CairnClientError ?? CairnClientError(.connection, message: "\(error)")
        }
    }

    /// Marks the connection when `error` left a reply due on it.
    func note(_ error: any Error) {
        if let e = error as? CairnClientError, e.code == .timeout || e.code == .cancelled {
            tainted.store(true, ordering: .relaxed)
        }
    }

    /// As ``execute(_:family:deadline:)``, but throws ``RequestNotSent`` for a request that never
    /// reached the wire, and ``RequestNotAnswered`` for one the server closed the connection on
    /// without answering, so the pool can send it on another connection.
    func executeOrNotSent(_ commands: [Command], family: String?, deadline: NIODeadline) async throws -> [RESPValue] {
        let promise = channel.eventLoop.makePromise(of: [RESPValue].self)
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        inFlightCount.wrappingAdd(1, ordering: .relaxed)
        defer { inFlightCount.wrappingSubtract(1, ordering: .relaxed) }
        let request = ClientRequest(id: id, commands: commands, family: family, deadline: deadline, promise: promise)
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in
            promise.fail(RequestNotSent(error: CairnClientError(.connection, message: "the connection is closed")))
        }
        channel.writeAndFlush(request, promise: written)
        return try await withTaskCancellationHandler {
            do {
                return try await promise.futureResult.get()
            } catch {
                note(error)
                throw error
            }
        } onCancel: {
            channel.triggerUserOutboundEvent(AbandonRequest(id: id), promise: nil)
        }
    }

    /// Writes commands to a subscriber connection (no replies are matched to them).
    func sendToSubscriber(_ commands: [Command]) async throws(CairnClientError) {
        do {
            try await channel.triggerUserOutboundEvent(SubscriberCommands(commands: commands)).get()
        } catch {
            throw CairnClientError(.connection, message: "the subscriber connection is closed")
        }
    }

    /// Closes the channel; requests in flight fail with `.connection`. Idempotent.
    func close() {
        channel.close(promise: nil)
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

extension NIODeadline {
    /// Now plus `duration`.
    static func after(_ duration: Duration) -> NIODeadline { .now() + TimeAmount(duration) }
}

/// The system's text for a failed connect ("Connection refused"), as the earlier client and
/// redis-cli print it, rather than NIO's nested description.
func connectFailure(_ error: any Error) -> String {
    var underlying = error
    if let many = error as? NIOConnectionError {
        if let first = many.connectionErrors.first {
            underlying = first.error
        } else if let dns = many.dnsAAAAError ?? many.dnsAError {
            underlying = dns
        }
    }
    if let io = underlying as? IOError {
        #if canImport(Glibc) || canImport(Darwin)
            return String(cString: strerror(io.errnoCode))
        #else
            return "\(io)"
        #endif
    }
    return "\(underlying)"
}
