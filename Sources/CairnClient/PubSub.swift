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


/// Messages of channels and patterns as an `AsyncSequence`, received on a connection of the
/// subscription's own (not one of the pool's).
///
/// ``CairnClient/subscribe(to:)`` returns it once the server has confirmed every channel, so a
/// message published after that call returns is delivered. While it lives, ``subscribe(to:)``,
/// ``unsubscribe(from:)``, ``psubscribe(to:)`` and ``punsubscribe(from:)`` change what it
/// listens to; each returns once the server confirmed the change. Messages wait in the
/// subscription until they are read: iterate it (once) from a task of its own.
///
/// When the connection breaks, the subscription reconnects with the client's backoff and
/// subscribes again to what the server had confirmed, then sends the changes still
/// unconfirmed; messages published while it was away are lost (pub/sub delivers at most once).
/// The sequence ends with ``CairnClientError/Code/connection`` when reconnecting fails for
/// longer than ``CairnClientConfiguration/reconnectDeadline``. The connection closes when the
/// loop over the messages ends (`break`, cancellation), at ``close()``, or when the
/// subscription is released without being iterated.
///
/// ```swift
/// let news = try await client.subscribe(to: ["news"])
/// try await news.psubscribe(to: ["sport.*"])
/// for try await message in news {
///     print(message.channelString, message.payloadString)
/// }
/// ```
public final class Subscription: AsyncSequence, Sendable {
    public typealias Element = PubSubMessage
    let link: SubscriberLink

    private init(link: SubscriberLink) {
        self.link = link
    }

    deinit {
        link.released()
    }

    /// Opens the subscription's connection and subscribes to `channels` and `patterns`; returns
    /// once the server confirmed them all (with none, once the connection is open).
    static func open(
        configuration: CairnClientConfiguration, group: any EventLoopGroup, channels: [[UInt8]], patterns: [[UInt8]]
    ) async throws(CairnClientError) -> Subscription {
        let link = SubscriberLink(configuration: configuration, group: group)
        let subscription = Subscription(link: link)
        link.start()
        do {
            try await link.change(.subscribe, channels)
            if !patterns.isEmpty { try await link.change(.psubscribe, patterns) }
        } catch {
            link.stop()
            throw error
        }
        return subscription
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: link.iterate(), end: IterationEnd(link: link))
    }

    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<PubSubMessage, any Error>.Iterator
        /// Closes the subscription when the loop is done with the iterator (`break`).
        let end: IterationEnd

        public mutating func next() async throws -> PubSubMessage? {
            try await base.next()
        }
    }

    /// Adds `channels` (`SUBSCRIBE`); returns once the server confirmed every one, so a message
    /// published to them from now on is delivered.
    ///
    /// - Throws: `.server` when the server refuses (e.g. `NOPERM` for an ACL), `.timeout` after
    ///   the request deadline (the change may still take effect), `.closed` when the subscription
    ///   ended, or why it ended.
    public func subscribe(to channels: [String]) async throws(CairnClientError) {
        try await link.change(.subscribe, channels.map { Array($0.utf8) })
    }

    /// Removes `channels` (`UNSUBSCRIBE`); returns once the server confirmed it: no message of
    /// theirs published from now on arrives (those already received still do).
    public func unsubscribe(from channels: [String]) async throws(CairnClientError) {
        try await link.change(.unsubscribe, channels.map { Array($0.utf8) })
    }

    /// Adds `patterns` (`PSUBSCRIBE`, glob-style: `news.*`); returns once the server confirmed
    /// every one.
    public func psubscribe(to patterns: [String]) async throws(CairnClientError) {
        try await link.change(.psubscribe, patterns.map { Array($0.utf8) })
    }

    /// Removes `patterns` (`PUNSUBSCRIBE`); returns once the server confirmed it.
    public func punsubscribe(from patterns: [String]) async throws(CairnClientError) {
        try await link.change(.punsubscribe, patterns.map { Array($0.utf8) })
    }

    /// The channels the server confirmed, in byte order.
    public var channels: [String] { link.confirmed(patterns: false) }

    /// The patterns the server confirmed, in byte order.
    public var patterns: [String] { link.confirmed(patterns: true) }

    /// Ends the subscription: the sequence finishes after the messages already received, and
    /// the connection closes.
    public func close() {
        link.stop()
    }
}

/// Held by a subscription's iterator: when the loop ends and drops it, the subscription ends.
final class IterationEnd: Sendable {
    let link: SubscriberLink
    init(link: SubscriberLink) { self.link = link }
    deinit { link.stop() }
}

/// The subscription's connection: opens it, sends the subscription's changes and matches the
/// server's confirmations to them, and after a break opens another and restores what the
/// server had confirmed.
///
/// Confirmations come in the order the commands were sent (one per channel or pattern named),
/// so the changes wait in a queue in that order and each confirmation counts down the oldest
/// change that still expects one. The server's state is tracked from the confirmations
/// themselves, so a refused change leaves no trace in what a reconnect restores.
final class SubscriberLink: Sendable {
    enum Verb: Sendable {
        case subscribe, unsubscribe, psubscribe, punsubscribe

        var command: [UInt8] {
            switch self {
            case .subscribe: Array("SUBSCRIBE".utf8)
            case .unsubscribe: Array("UNSUBSCRIBE".utf8)
            case .psubscribe: Array("PSUBSCRIBE".utf8)
            case .punsubscribe: Array("PUNSUBSCRIBE".utf8)
            }
        }

        /// The verb a confirmation push (`subscribe`, `punsubscribe`...) reports.
        init?(confirmation kind: String) {
            switch kind.lowercased() {
            case "subscribe": self = .subscribe
            case "unsubscribe": self = .unsubscribe
            case "psubscribe": self = .psubscribe
            case "punsubscribe": self = .punsubscribe
            default: return nil
            }
        }
    }

    /// One command of the subscription and who waits for its confirmations.
    private struct Change {
        let id: Int
        let verb: Verb
        let names: [[UInt8]]
        /// A restore after a reconnect (nobody waits for it).
        let restore: Bool
        /// Written on the current connection; confirmations count down `due` only then.
        var sent = false
        var due = 0
        var waiter: CheckedContinuation<Void, any Error>?
        var timeout: Scheduled<Void>?
    }

    private struct State {
        var connection: Connection?
        /// Which connection is current: values of an earlier one are not matched to changes.
        var generation = 0
        var stopped = false
        var iterated = false
        /// What the server confirmed, restored after a reconnect.
        var channels: Set<[UInt8]> = []
        var patterns: Set<[UInt8]> = []
        /// In the order they were (or will be) written.
        var changes: [Change] = []
        var nextID = 0
        var task: Task<Void, Never>?
        /// Why the subscription ended, when it did not end by `stop()`.
        var failure: CairnClientError?
    }

    private let configuration: CairnClientConfiguration
    private let group: any EventLoopGroup
    private let stream: AsyncThrowingStream<PubSubMessage, any Error>
    private let continuation: AsyncThrowingStream<PubSubMessage, any Error>.Continuation
    private let state = Mutex(State())

    init(configuration: CairnClientConfiguration, group: any EventLoopGroup) {
        self.configuration = configuration
        self.group = group
        (stream, continuation) = AsyncThrowingStream.makeStream(of: PubSubMessage.self)
        // The consuming task was cancelled: the subscription ends.
        continuation.onTermination = { [weak self] _ in self?.stop() }
    }

    /// Starts connecting (and reconnecting after breaks) until stopped.
    func start() {
        let task = Task { await self.run() }
        let stopped = state.withLock { s in
            s.task = task
            return s.stopped
        }
        if stopped { task.cancel() }
    }

    func iterate() -> AsyncThrowingStream<PubSubMessage, any Error>.Iterator {
        state.withLock { $0.iterated = true }
        return stream.makeAsyncIterator()
    }

    /// The ``Subscription`` was released: nothing will iterate it unless something already does.
    func released() {
        if !state.withLock({ $0.iterated }) { stop() }
    }

    func confirmed(patterns: Bool) -> [String] {
        state.withLock { patterns ? $0.patterns : $0.channels }.sorted { $0.lexicographicallyPrecedes($1) }
            .map { String(decoding: $0, as: UTF8.self) }
    }

    // MARK: Changes

    /// Sends `verb names` (on the connection, or on the next one while reconnecting) and
    /// returns once the server confirmed every name; with no names, once a connection is open.
    func change(_ verb: Verb, _ names: [[UInt8]]) async throws(CairnClientError) {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        let deadline = NIODeadline.after(configuration.requestDeadline)
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                    enum Outcome {
                        case done
                        case failed(CairnClientError)
                        case waiting
                    }
                    let outcome: Outcome = state.withLock { s in
                        if let failure = s.failure { return .failed(failure) }
                        if s.stopped { return .failed(CairnClientError(.closed, message: "the subscription is closed")) }
                        if Task.isCancelled { return .failed(CairnClientError(.cancelled, message: "the request was cancelled")) }
                        if names.isEmpty && s.connection != nil { return .done }
                        var change = Change(id: id, verb: verb, names: names, restore: false, waiter: waiter)
                        if !names.isEmpty, let connection = s.connection {
                            change.sent = true
                            change.due = names.count
                            // Written under the lock, so the order on the wire is the order of `changes`.
                            connection.channel.triggerUserOutboundEvent(SubscriberCommands(commands: [[verb.command] + names]), promise: nil)
                        }
                        s.changes.append(change)
                        return .waiting
                    }
                    switch outcome {
                    case .done: waiter.resume()
                    case .failed(let error): waiter.resume(throwing: error)
                    case .waiting:
                        let timeout = group.next().scheduleTask(deadline: deadline) { [weak self] () -> Void in
                            self?.abandon(id, CairnClientError(.timeout, message: "the server did not confirm within the request deadline"))
                        }
                        let keep = state.withLock { s in
                            guard let i = s.changes.firstIndex(where: { $0.id == id }) else { return false }
                            s.changes[i].timeout = timeout
                            return true
                        }
                        if !keep { timeout.cancel() }
                    }
                }
            } onCancel: {
                abandon(id, CairnClientError(.cancelled, message: "the request was cancelled"))
            }
        } catch {
            throw error as? CairnClientError ?? CairnClientError(.connection, message: "\(error)")
        }
    }

    /// Fails change `id`'s waiter (timeout, cancellation). A change already written stays in
    /// the queue, so the confirmations after it stay matched; one not written is dropped.
    private func abandon(_ id: Int, _ error: CairnClientError) {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { s in
            guard let i = s.changes.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = s.changes[i].waiter
            s.changes[i].timeout?.cancel()
            if s.changes[i].sent {
                s.changes[i].waiter = nil
                s.changes[i].timeout = nil
            } else {
                s.changes.remove(at: i)
            }
            return waiter
        }
        waiter?.resume(throwing: error)
    }

    // MARK: What the connection receives

    /// A value read on connection `generation`, on its event loop: a message, a confirmation,
    /// or the server's refusal of the oldest change.
    private func received(_ value: RESPValue, generation: Int) {
        if let message = PubSubMessage(value) {
            continuation.yield(message)
            return
        }
        if case .error(let text) = value {
            refused(CairnClientError(serverReply: text), generation: generation)
            return
        }
        guard let items = value.array, items.count >= 2, let kind = items[0].string, let verb = Verb(confirmation: kind) else { return }
        let name = items[1].bytes
        let confirmed: Change? = state.withLock { s in
            guard s.generation == generation, !s.stopped else { return nil }
            if let name {
                switch verb {
                case .subscribe: s.channels.insert(name)
                case .unsubscribe: s.channels.remove(name)
                case .psubscribe: s.patterns.insert(name)
                case .punsubscribe: s.patterns.remove(name)
                }
            }
            guard let i = s.changes.firstIndex(where: { $0.sent && $0.due > 0 }), s.changes[i].verb == verb else { return nil }
            s.changes[i].due -= 1
            guard s.changes[i].due == 0 else { return nil }
            return s.changes.remove(at: i)
        }
        if let confirmed {
            confirmed.timeout?.cancel()
            confirmed.waiter?.resume()
        }
    }

    /// The server answered the oldest written change with an error (ACL `NOPERM`, a server
    /// without pub/sub): that change fails; a restore that fails ends the subscription.
    private func refused(_ error: CairnClientError, generation: Int) {
        let change: Change? = state.withLock { s in
            guard s.generation == generation, !s.stopped, let i = s.changes.firstIndex(where: { $0.sent && $0.due > 0 }) else { return nil }
            return s.changes.remove(at: i)
        }
        guard let change else { return }
        change.timeout?.cancel()
        if change.restore {
            finish(error)
        } else {
            change.waiter?.resume(throwing: error)
        }
    }

    // MARK: Connecting

    private func run() async {
        var delay = configuration.initialBackoff
        var failingSince: ContinuousClock.Instant?
        while true {
            let generation: Int? = state.withLock { s in
                guard !s.stopped else { return nil }
                s.generation += 1
                return s.generation
            }
            guard let generation else { return }
            do {
                let connection = try await Connection.open(
                    configuration, group: group, deadline: .after(configuration.connectTimeout),
                    pushSink: { [weak self] value in self?.received(value, generation: generation) }, subscriber: true)
                guard connected(connection, generation: generation) else {
                    connection.close()
                    return
                }
                configuration.logger.debug("cairn client subscription connected")
                failingSince = nil
                delay = configuration.initialBackoff
                // Until the connection breaks (or stop() closes it).
                try? await connection.channel.closeFuture.get()
                state.withLock { s in
                    guard s.generation == generation else { return }
                    s.connection = nil
                    for i in s.changes.indices { s.changes[i].sent = false }
                }
            } catch {
                let since = failingSince ?? .now
                failingSince = since
                let retryable = error.code == .connection || error.code == .timeout
                if !retryable || ContinuousClock.now - since >= configuration.reconnectDeadline {
                    finish(error)
                    return
                }
            }
            if state.withLock({ $0.stopped }) { return }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, configuration.maximumBackoff)
        }
    }

    /// Makes `connection` current and writes, in one go: a restore of what the server had
    /// confirmed, then every change still unconfirmed, in order. Changes that need only a
    /// connection are done. False when the subscription was stopped meanwhile.
    private func connected(_ connection: Connection, generation: Int) -> Bool {
        let (ok, ready): (Bool, [CheckedContinuation<Void, any Error>]) = state.withLock { s in
            guard !s.stopped, s.generation == generation else { return (false, []) }
            s.connection = connection
            var changes: [Change] = []
            for (verb, names) in [(Verb.subscribe, s.channels), (.psubscribe, s.patterns)] where !names.isEmpty {
                s.nextID += 1
                changes.append(Change(id: s.nextID, verb: verb, names: names.sorted { $0.lexicographicallyPrecedes($1) }, restore: true))
            }
            var ready: [CheckedContinuation<Void, any Error>] = []
            for change in s.changes {
                // An earlier restore is redone above; a change whose caller gave up is dropped.
                guard !change.restore, let waiter = change.waiter else {
                    change.timeout?.cancel()
                    continue
                }
                if change.names.isEmpty {
                    change.timeout?.cancel()
                    ready.append(waiter)
                } else {
                    changes.append(change)
                }
            }
            for i in changes.indices {
                changes[i].sent = true
                changes[i].due = changes[i].names.count
            }
            s.changes = changes
            if !changes.isEmpty {
                let commands = changes.map { [$0.verb.command] + $0.names }
                connection.channel.triggerUserOutboundEvent(SubscriberCommands(commands: commands), promise: nil)
            }
            return (true, ready)
        }
        for waiter in ready { waiter.resume() }
        return ok
    }

    /// Ends the subscription with `error`: waiting changes fail with it and so does the sequence.
    private func finish(_ error: CairnClientError) {
        end(error)
    }

    /// Ends the subscription (the loop over it ends, `close()`, released): the sequence
    /// finishes after the messages received so far, and waiting changes fail as closed.
    func stop() {
        end(nil)
    }

    private func end(_ error: CairnClientError?) {
        let taken: (changes: [Change], connection: Connection?, task: Task<Void, Never>?)? = state.withLock { s in
            guard !s.stopped else { return nil }
            s.stopped = true
            s.failure = error
            defer {
                s.changes = []
                s.connection = nil
            }
            return (s.changes, s.connection, s.task)
        }
        guard let taken else { return }
        let failure = error ?? CairnClientError(.closed, message: "the subscription is closed")
        for change in taken.changes {
            change.timeout?.cancel()
            change.waiter?.resume(throwing: failure)
        }
        if let error {
            configuration.logger.debug("cairn client subscription ended", metadata: ["error": "\(error)"])
            continuation.finish(throwing: error)
        } else {
            continuation.finish()
        }
        taken.connection?.close()
        taken.task?.cancel()
    }
}

extension CairnClient {
    /// Subscribes to `channels` (`SUBSCRIBE`) on a connection of the subscription's own, and
    /// returns once the server confirmed every one: a message published after this returns
    /// is delivered. See ``Subscription``.
    ///
    /// - Throws: `.server` when the server refuses, `.connection`/`.tls`/`.timeout` when no
    ///   connection opens (reconnecting for up to the reconnect deadline), `.timeout` when the
    ///   confirmations do not come within the request deadline.
    public func subscribe(to channels: [String]) async throws(CairnClientError) -> Subscription {
        try await Subscription.open(
            configuration: configuration, group: route.pool.group, channels: channels.map { Array($0.utf8) }, patterns: [])
    }

    /// Subscribes to channels matching `patterns` (`PSUBSCRIBE`); returns once the server
    /// confirmed every one. See ``Subscription``.
    public func psubscribe(to patterns: [String]) async throws(CairnClientError) -> Subscription {
        try await Subscription.open(
            configuration: configuration, group: route.pool.group, channels: [], patterns: patterns.map { Array($0.utf8) })
    }
}
