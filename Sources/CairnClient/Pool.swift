import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The connections of one client, at most ``CairnClientConfiguration/maximumConnections``.
///
/// A plain request shares a connection with others (pipelining): it goes to the least loaded
/// one, and another connection is opened while every open one is busy and the limit allows. A
/// lease (snapshots, transactions, iterators, `withConnection`) takes a connection with nothing
/// in flight to itself until it gives it back; leases leave at least one connection to shared
/// requests. When no connection fits, the caller waits, at
/// most until its request deadline.
///
/// Connecting retries with exponential backoff for up to ``CairnClientConfiguration/reconnectDeadline``
/// while requests wait: that is how the client rides out a server restart. A connection the
/// server closed leaves the pool at once (NIO reports it); requests that were never written on
/// it are sent on another.
final class Pool: Sendable {
    let configuration: CairnClientConfiguration
    let group: any EventLoopGroup
    private let logger: Logger
    private let state = Mutex(State())

    private struct Waiter {
        let id: Int
        let exclusive: Bool
        let continuation: CheckedContinuation<Connection, any Error>
    }

    private struct State: ~Copyable {
        var connections: [Connection] = []
        var leased: Set<ObjectIdentifier> = []
        /// Shared requests holding each connection, from `pick` to `finished`: counted under
        /// this lock, unlike the connection's own in-flight count (which rises only once the
        /// request is written), so a lease never takes a connection a shared request was just
        /// handed, and a blocking command cannot end up ahead of it.
        var sharers: [ObjectIdentifier: Int] = [:]
        var opening = 0
        var waiters: [Waiter] = []
        var nextWaiter = 0
        var closed = false
        /// Requests and leases between getting their connection and finishing.
        var active = 0
        var drained: [CheckedContinuation<Void, Never>] = []
        var rotation = 0

        /// A connection for a shared request (the least loaded) or a lease (an unleased one with
        /// nothing in flight, which becomes leased); nil when none fits.
        mutating func pick(exclusive: Bool, limit: Int) -> Connection? {
            if exclusive && !mayLease(limit: limit) { return nil }
            var best: Connection?
            let count = connections.count
            guard count > 0 else { return nil }
            rotation &+= 1
            for k in 0..<count {
                let c = connections[(rotation &+ k) % count]
                guard c.isActive, !leased.contains(ObjectIdentifier(c)) else { continue }
                let load = self.load(c)
                if exclusive {
                    if load == 0 && !c.isTainted {
                        leased.insert(ObjectIdentifier(c))
                        return c
                    }
                } else if best == nil || load < self.load(best!) {
                    best = c
                    if load == 0 { break }
                }
            }
            if let best { sharers[ObjectIdentifier(best), default: 0] += 1 }
            return best
        }

        /// Requests on `c`: those handed it and not finished, or in flight on it.
        func load(_ c: Connection) -> Int {
            max(sharers[ObjectIdentifier(c)] ?? 0, c.inFlight)
        }

        mutating func release(shared c: Connection) {
            let id = ObjectIdentifier(c)
            if let n = sharers[id], n > 1 { sharers[id] = n - 1 } else { sharers[id] = nil }
        }

        /// Leases leave one connection to shared requests (unless the pool has only one), so a
        /// scoped body that sends through the client itself cannot starve its own requests.
        func mayLease(limit: Int) -> Bool {
            limit == 1 || leased.count < limit - 1
        }

        /// Whether another connection should be opened for a request of this kind.
        func wantsAnother(exclusive: Bool, limit: Int) -> Bool {
            guard !closed, connections.count + opening < limit, !exclusive || mayLease(limit: limit) else { return false }
            let free = connections.filter { $0.isActive && !leased.contains(ObjectIdentifier($0)) }
            if exclusive { return !free.contains { load($0) == 0 } }
            return opening == 0 && !free.contains { load($0) == 0 }
        }
    }

    /// Under Sentinel: the role this pool connects to and where to find it; nil connects to
    /// the configuration's address.
    let target: SentinelTarget?

    init(configuration: CairnClientConfiguration, group: any EventLoopGroup, target: SentinelTarget?) {
        precondition(configuration.maximumConnections > 0, "maximumConnections must be at least 1")
        self.configuration = configuration
        self.group = group
        self.logger = configuration.logger
        self.target = target
    }

    // MARK: Using connections

    /// Runs `body` on a shared connection.
    func withShared<T>(deadline: NIODeadline, _ body: (Connection) async throws -> T) async throws -> T {
        let connection = try await acquire(exclusive: false, deadline: deadline)
        defer { finished(connection, exclusive: false) }
        return try await body(connection)
    }

    /// Runs `body` with a connection to itself; afterwards the connection goes back to the
    /// pool, or is closed if a request on it was abandoned (its state is then unknown).
    func withLease<T>(deadline: NIODeadline, _ body: (Connection) async throws -> T) async throws -> T {
        let connection = try await lease(deadline: deadline)
        defer { giveBack(connection) }
        return try await body(connection)
    }

    /// A connection to the caller alone until ``giveBack(_:)`` (for leases that span calls,
    /// such as an iterator's).
    func lease(deadline: NIODeadline) async throws -> Connection {
        try await acquire(exclusive: true, deadline: deadline)
    }

    /// Ends a lease from ``lease(deadline:)``.
    func giveBack(_ connection: Connection) {
        finished(connection, exclusive: true)
    }

    private func acquire(exclusive: Bool, deadline: NIODeadline) async throws -> Connection {
        let id = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Connection, any Error>) in
                enum Outcome {
                    case ready(Connection)
                    case failed(CairnClientError)
                    case waiting
                }
                // `opened`: a slot was reserved for another connection (all open ones are busy).
                let (outcome, opened): (Outcome, Bool) = state.withLock { s in
                    if s.closed { return (.failed(CairnClientError(.closed, message: "the client is closed")), false) }
                    if Task.isCancelled {
                        return (.failed(CairnClientError(.cancelled, message: "cancelled while waiting for a connection")), false)
                    }
                    let open = s.wantsAnother(exclusive: exclusive, limit: configuration.maximumConnections)
                    if open { s.opening += 1 }
                    if let c = s.pick(exclusive: exclusive, limit: configuration.maximumConnections) {
                        s.active += 1
                        return (.ready(c), open)
                    }
                    s.waiters.append(Waiter(id: id, exclusive: exclusive, continuation: continuation))
                    return (.waiting, open)
                }
                switch outcome {
                case .ready(let c):
                    continuation.resume(returning: c)
                case .failed(let error):
                    continuation.resume(throwing: error)
                case .waiting:
                    group.next().scheduleTask(deadline: deadline) { [self] in
                        fail(waiter: id, CairnClientError(.timeout, message: "no connection within the request deadline"))
                    }
                }
                if opened { startOpening() }
            }
        } onCancel: {
            fail(waiter: id, CairnClientError(.cancelled, message: "cancelled while waiting for a connection"))
        }
    }

    private func fail(waiter id: Int, _ error: CairnClientError) {
        let waiter = state.withLock { s in
            s.waiters.firstIndex { $0.id == id }.map { s.waiters.remove(at: $0) }
        }
        waiter?.continuation.resume(throwing: error)
    }

    private func finished(_ connection: Connection, exclusive: Bool) {
        if exclusive, connection.isTainted { connection.close() }
        let done: [CheckedContinuation<Void, Never>] = state.withLock { s in
            s.active -= 1
            if exclusive { s.leased.remove(ObjectIdentifier(connection)) } else { s.release(shared: connection) }
            guard s.closed, s.active == 0 else { return [] }
            defer { s.drained = [] }
            return s.drained
        }
        if !done.isEmpty || state.withLock({ $0.closed && $0.active == 0 }) {
            closeAll()
            for d in done { d.resume() }
        }
        dispatchWaiters()
    }

    /// Hands connections to waiters that can have one now, and opens another if they need it.
    private func dispatchWaiters() {
        var ready: [(CheckedContinuation<Connection, any Error>, Connection)] = []
        let open = state.withLock { s -> Bool in
            guard !s.waiters.isEmpty else { return false }
            var remaining: [Waiter] = []
            for w in s.waiters {
                if let c = s.pick(exclusive: w.exclusive, limit: configuration.maximumConnections) {
                    s.active += 1
                    ready.append((w.continuation, c))
                } else {
                    remaining.append(w)
                }
            }
            s.waiters = remaining
            guard let first = remaining.first, s.opening == 0 || first.exclusive,
                s.wantsAnother(exclusive: first.exclusive, limit: configuration.maximumConnections)
            else { return false }
            s.opening += 1
            return true
        }
        for (continuation, c) in ready { continuation.resume(returning: c) }
        if open { startOpening() }
    }

    // MARK: Opening and closing

    /// Opens one connection in a slot already counted in `opening`, retrying with backoff.
    private func startOpening() {
        Task { await self.open() }
    }

    private func open() async {
        var delay = configuration.initialBackoff
        var attempt = 1
        let started = ContinuousClock.now
        while true {
            let failure: CairnClientError
            do {
                let connection = try await connect()
                added(connection)
                return
            } catch {
                failure = error
                if target?.role == .primary { target?.discovery.forgetPrimary() }
            }
            let retryable = failure.code == .connection || failure.code == .timeout
            let waiting = state.withLock { !$0.waiters.isEmpty && !$0.closed }
            let withinDeadline = ContinuousClock.now + delay - started < configuration.reconnectDeadline
            guard retryable, waiting, withinDeadline, attempt < configuration.connectAttempts else {
                logger.warning("cairn client cannot connect", metadata: ["error": "\(failure)", "attempts": "\(attempt)"])
                openFailed(failure)
                return
            }
            logger.debug("cairn client connect failed; retrying", metadata: ["error": "\(failure)", "attempt": "\(attempt)"])
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, configuration.maximumBackoff)
            attempt += 1
        }
    }

    /// One connection attempt: to the configured address, or under Sentinel to the server the
    /// sentinels name for this pool's role, checked with `ROLE` (a demoted primary answers
    /// `slave` until the sentinels catch up).
    private func connect() async throws(CairnClientError) -> Connection {
        let deadline = NIODeadline.after(configuration.connectTimeout)
        var settings = configuration
        if let target {
            let address = try await target.discovery.address(for: target.role)
            settings.host = address.host
            settings.port = address.port
            settings.unixSocketPath = nil
        }
        let connection = try await Connection.open(
            settings, group: group, deadline: deadline, pushSink: configuration.pushHandler, onIdle: { [weak self] channel in self?.retireIfIdle(channel) })
        guard let target else { return connection }
        let role: String
        do {
            role = try await connection.execute([command("ROLE")], family: nil, deadline: deadline)[0]
                .throwingServerError().expectArray().first?.string ?? ""
        } catch {
            connection.close()
            throw error
        }
        // A replica pool takes the primary too (the sentinels named it for want of a replica).
        guard role == target.role.roleName || role == "master" else {
            connection.close()
            throw CairnClientError(.connection, message: "\(settings.host):\(settings.port) is a \(role), not the \(target.role.roleName)")
        }
        return connection
    }

    private func added(_ connection: Connection) {
        let keep = state.withLock { s in
            s.opening -= 1
            guard !s.closed else { return false }
            s.connections.append(connection)
            return true
        }
        guard keep else {
            connection.close()
            return
        }
        connection.channel.closeFuture.whenComplete { [weak self] _ in self?.removed(connection) }
        dispatchWaiters()
    }

    /// Gives up connecting: waiters fail unless another connection may still serve them.
    private func openFailed(_ failure: CairnClientError) {
        let failed: [Waiter] = state.withLock { s in
            s.opening -= 1
            guard s.opening == 0, !s.connections.contains(where: \.isActive) else { return [] }
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in failed { w.continuation.resume(throwing: failure) }
        dispatchWaiters()
    }

    private func removed(_ connection: Connection) {
        let closed = state.withLock { s in
            s.connections.removeAll { $0 === connection }
            return s.closed
        }
        // A lost connection may mean a failover: ask the sentinels again on the next connect.
        if !closed, target?.role == .primary { target?.discovery.forgetPrimary() }
        dispatchWaiters()
    }

    /// Closes every open connection but keeps the pool open: the next requests connect anew
    /// (after a failover). Requests in flight on them fail as unanswered and are sent again.
    func closeConnections() {
        let all = state.withLock { s in
            defer { s.connections = [] }
            return s.connections
        }
        for c in all { c.close() }
        dispatchWaiters()
    }

    /// Under Sentinel, after a `-READONLY` reply: the primary moved; forget it and drop its
    /// connections.
    func primaryMoved() {
        guard target?.role == .primary else { return }
        logger.debug("cairn client: READONLY from the primary; asking the sentinels again")
        target?.discovery.forgetPrimary()
        closeConnections()
    }

    /// The idle timeout passed on `channel`: close it unless it is leased or busy.
    private func retireIfIdle(_ channel: any Channel) {
        let victim = state.withLock { s -> Connection? in
            guard let c = s.connections.first(where: { $0.channel === channel }),
                !s.leased.contains(ObjectIdentifier(c)), s.load(c) == 0
            else { return nil }
            s.connections.removeAll { $0 === c }
            return c
        }
        if let victim {
            logger.debug("cairn client closes an idle connection")
            victim.close()
        }
    }

    /// Stops taking requests (they fail with `.closed`) and fails those waiting for a
    /// connection; connections close once the requests and leases in progress are done.
    func close() {
        let (waiters, idle) = state.withLock { s in
            s.closed = true
            defer { s.waiters = [] }
            return (s.waiters, s.active == 0)
        }
        for w in waiters { w.continuation.resume(throwing: CairnClientError(.closed, message: "the client is closed")) }
        if idle { closeAll() }
    }

    /// ``close()``, then waits until the requests and leases in progress are done.
    func drain() async {
        close()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                if s.active == 0 { return true }
                s.drained.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        closeAll()
    }

    private func closeAll() {
        let all = state.withLock { s in
            defer { s.connections = [] }
            return s.connections
        }
        for c in all { c.close() }
    }

    /// Connections open now (for tests and INFO-like reports).
    var openConnections: Int { state.withLock { $0.connections.count } }
}
