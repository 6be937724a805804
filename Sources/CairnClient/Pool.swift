import Synchronization

/// A bounded set of connections shared by one client.
///
/// `acquire()` hands out an idle connection (checking that the server did not close it while it
/// sat idle), opens a new one while fewer than `maximumConnections` exist, or waits for a
/// `release`. Opening retries with exponential backoff, which is how the client reconnects
/// after a server restart.
final class Pool: Sendable {
    let configuration: CairnClientConfiguration
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var idle: [Connection] = []
        /// Connections handed out or idle, plus slots reserved for connections being opened.
        var count = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<Connection?, any Error>)] = []
        var nextWaiter = 0
        var closed = false
    }

    init(configuration: CairnClientConfiguration) {
        precondition(configuration.maximumConnections > 0, "maximumConnections must be at least 1")
        self.configuration = configuration
    }

    /// Runs `body` with a connection of its own, then returns the connection to the pool (or
    /// drops it if it broke).
    func withConnection<T: Sendable>(_ body: (Connection) async throws -> T) async throws -> T {
        let connection = try await acquire()
        do {
            let result = try await body(connection)
            release(connection)
            return result
        } catch {
            release(connection)
            throw error
        }
    }

    /// A connection for the caller's exclusive use until `release`. Waiting for a free one ends
    /// with ``CairnClientError/Code/cancelled`` when the task is cancelled.
    func acquire() async throws -> Connection {
        while true {
            let slot = try await nextSlot()
            guard let connection = slot else {
                // A reserved slot: open a new connection in it.
                do {
                    return try await openWithBackoff()
                } catch {
                    freeSlot()
                    throw error
                }
            }
            if connection.isUsable { return connection }
            connection.close()
            freeSlot()
        }
    }

    /// An idle connection, or nil for a reserved slot to open one in; waits when neither is free.
    private func nextSlot() async throws -> Connection? {
        let id = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<Connection?, any Error>? = state.withLock { s in
                    if s.closed { return .failure(CairnClientError(.closed, message: "the client is closed")) }
                    if Task.isCancelled {
                        return .failure(CairnClientError(.cancelled, message: "cancelled while waiting for a connection"))
                    }
                    if let c = s.idle.popLast() { return .success(c) }
                    if s.count < configuration.maximumConnections {
                        s.count += 1
                        return .success(nil)
                    }
                    s.waiters.append((id, continuation))
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { s in
                s.waiters.firstIndex { $0.id == id }.map { s.waiters.remove(at: $0).continuation }
            }
            waiter?.resume(throwing: CairnClientError(.cancelled, message: "cancelled while waiting for a connection"))
        }
    }

    /// Gives a connection back: to a waiter, to the idle list, or (if it broke or the client is
    /// closed) closes it and frees its slot.
    func release(_ connection: Connection) {
        guard connection.isUsable else {
            connection.close()
            freeSlot()
            return
        }
        let waiter: CheckedContinuation<Connection?, any Error>? = state.withLock { s in
            if s.closed { return nil }
            if !s.waiters.isEmpty { return s.waiters.removeFirst().continuation }
            s.idle.append(connection)
            return nil
        }
        if let waiter {
            waiter.resume(returning: connection)
        } else if state.withLock({ $0.closed }) {
            connection.close()
        }
    }

    /// Closes idle connections and fails waiting requests; connections in use are closed when
    /// they come back.
    func close() {
        var idle: [Connection] = []
        var waiters: [(id: Int, continuation: CheckedContinuation<Connection?, any Error>)] = []
        state.withLock { s in
            s.closed = true
            swap(&idle, &s.idle)
            swap(&waiters, &s.waiters)
        }
        for c in idle { c.close() }
        for w in waiters { w.continuation.resume(throwing: CairnClientError(.closed, message: "the client is closed")) }
    }

    /// A slot was given up: hand it to a waiter (who opens a connection in it) or free it.
    private func freeSlot() {
        let waiter: CheckedContinuation<Connection?, any Error>? = state.withLock { s in
            if !s.closed, !s.waiters.isEmpty { return s.waiters.removeFirst().continuation }
            s.count -= 1
            return nil
        }
        waiter?.resume(returning: nil)
    }

    private func openWithBackoff() async throws -> Connection {
        var delay = configuration.initialBackoff
        var attempt = 1
        while true {
            let connection = Connection(configuration: configuration)
            let failure: CairnClientError
            do {
                try await connection.open()
                return connection
            } catch {
                failure = error
            }
            // Wrong password and the like will not get better by retrying.
            let retryable = failure.code == .connection || failure.code == .timeout
            guard retryable, attempt < configuration.connectAttempts, !Task.isCancelled else { throw failure }
            try? await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
            delay = min(delay * 2, configuration.maximumBackoff)
            attempt += 1
        }
    }
}
