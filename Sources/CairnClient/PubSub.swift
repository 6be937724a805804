import NIOCore
import RESP
import Synchronization

/// One message received by a ``Subscription``.
public struct PubSubMessage: Sendable, Hashable {
    /// The channel it was published to.
    public var channel: [UInt8]
    /// For `psubscribe`: the pattern that matched; nil for `subscribe`.
    public var pattern: [UInt8]?
    public var payload: [UInt8]

    public var channelString: String { String(decoding: channel, as: UTF8.self) }
    public var payloadString: String { String(decoding: payload, as: UTF8.self) }

    /// A `message` or `pmessage` push (RESP3) or array (RESP2); nil for anything else
    /// (subscribe confirmations, pongs).
    init?(_ value: RESPValue) {
        guard let items = value.array, let kind = items.first?.string else { return nil }
        switch (kind.lowercased(), items.count) {
        case ("message", 3):
            guard let c = items[1].bytes, let p = items[2].bytes else { return nil }
            self.init(channel: c, pattern: nil, payload: p)
        case ("pmessage", 4):
            guard let pattern = items[1].bytes, let c = items[2].bytes, let p = items[3].bytes else { return nil }
            self.init(channel: c, pattern: pattern, payload: p)
        default:
            return nil
        }
    }

    public init(channel: [UInt8], pattern: [UInt8]?, payload: [UInt8]) {
        self.channel = channel
        self.pattern = pattern
        self.payload = payload
    }
}

/// Messages of channels (or patterns) as an `AsyncSequence`, received on a connection of the
/// subscription's own (not one of the pool's).
///
/// The connection opens when iteration starts. When it breaks, the subscription reconnects with
/// the client's backoff and subscribes again; messages published while it was away are lost
/// (pub/sub delivers at most once). The sequence ends with ``CairnClientError/Code/connection``
/// when reconnecting fails for longer than ``CairnClientConfiguration/reconnectDeadline``, and
/// the connection closes when the loop ends (`break`, cancellation).
///
/// ```swift
/// for try await message in client.subscribe(to: ["news"]) {
///     print(message.channelString, message.payloadString)
/// }
/// ```
public struct Subscription: AsyncSequence, Sendable {
    public typealias Element = PubSubMessage
    let configuration: CairnClientConfiguration
    let group: any EventLoopGroup
    /// `SUBSCRIBE` or `PSUBSCRIBE` with its channels or patterns.
    let command: Command

    public func makeAsyncIterator() -> Iterator {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: PubSubMessage.self)
        let link = SubscriberLink(configuration: configuration, group: group, command: command, continuation: continuation)
        let task = Task { await link.run() }
        continuation.onTermination = { _ in
            task.cancel()
            link.stop()
        }
        return Iterator(base: stream.makeAsyncIterator())
    }

    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<PubSubMessage, any Error>.Iterator

        public mutating func next() async throws -> PubSubMessage? {
            try await base.next()
        }
    }
}

/// The subscription's connection: opens it, subscribes, and does both again after a break.
final class SubscriberLink: Sendable {
    private let configuration: CairnClientConfiguration
    private let group: any EventLoopGroup
    private let command: Command
    private let continuation: AsyncThrowingStream<PubSubMessage, any Error>.Continuation
    private let current = Mutex<(connection: Connection?, stopped: Bool)>((nil, false))

    init(
        configuration: CairnClientConfiguration, group: any EventLoopGroup, command: Command,
        continuation: AsyncThrowingStream<PubSubMessage, any Error>.Continuation
    ) {
        self.configuration = configuration
        self.group = group
        self.command = command
        self.continuation = continuation
    }

    func run() async {
        var delay = configuration.initialBackoff
        var failingSince: ContinuousClock.Instant?
        while !Task.isCancelled {
            do {
                let sink = continuation
                let connection = try await Connection.open(
                    configuration, group: group, deadline: .after(configuration.connectTimeout),
                    pushSink: { value in
                        if let message = PubSubMessage(value) { sink.yield(message) }
                    }, subscriber: true)
                let stopped = current.withLock { state in
                    if !state.stopped { state.connection = connection }
                    return state.stopped
                }
                if stopped {
                    connection.close()
                    return
                }
                try await connection.sendToSubscriber([command])
                configuration.logger.debug("cairn client subscribed", metadata: ["command": "\(String(decoding: command[0], as: UTF8.self))"])
                failingSince = nil
                delay = configuration.initialBackoff
                // Until the connection breaks (or the loop ends and closes it).
                try? await connection.channel.closeFuture.get()
                current.withLock { $0.connection = nil }
            } catch {
                let since = failingSince ?? .now
                failingSince = since
                if ContinuousClock.now - since >= configuration.reconnectDeadline || error.code == .server {
                    continuation.finish(throwing: error)
                    return
                }
            }
            if current.withLock({ $0.stopped }) { return }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, configuration.maximumBackoff)
        }
    }

    /// The loop ended: close the connection and stop reconnecting.
    func stop() {
        let connection = current.withLock { state in
            state.stopped = true
            return state.connection
        }
        connection?.close()
    }
}

extension CairnClient {
    /// Messages published to `channels` (`SUBSCRIBE`), on a connection of the subscription's own.
    /// See ``Subscription``.
    public func subscribe(to channels: [String]) -> Subscription {
        Subscription(configuration: configuration, group: route.pool.group, command: command(["SUBSCRIBE"] + channels))
    }

    /// Messages published to channels matching `patterns` (`PSUBSCRIBE`). See ``Subscription``.
    public func psubscribe(to patterns: [String]) -> Subscription {
        Subscription(configuration: configuration, group: route.pool.group, command: command(["PSUBSCRIBE"] + patterns))
    }
}
