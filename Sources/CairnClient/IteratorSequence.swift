import RESP
import Synchronization

/// Entries read through a server-side iterator (`ITER.OPEN`, then `ITER.NEXT` or `ITER.PREV`
/// `batchSize` at a time as the loop asks), one consistent view for the whole loop.
///
/// The iterator lives on one connection, borrowed from the pool (or the snapshot's) when the
/// loop starts. It is closed (`ITER.CLOSE`) and the connection returned when the entries run
/// out, when a request fails, or, if the loop ends early (`break`, `return`, a throw), when the
/// async iterator is dropped: then the close runs in a background task a moment later.
///
/// ```swift
/// for try await entry in client.iterate(from: "user:") {
///     if !entry.keyString.hasPrefix("user:") { break }
/// }
/// ```
public struct IteratorSequence: AsyncSequence, Sendable {
    public typealias Element = KeyValue
    let route: Route
    let snapshot: Int64?
    let start: [UInt8]?
    let reverse: Bool
    let batchSize: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(cursor: ServerCursor(sequence: self))
    }

    public struct Iterator: AsyncIteratorProtocol {
        let cursor: ServerCursor
        var page: [KeyValue] = []
        var index = 0

        public mutating func next() async throws -> KeyValue? {
            if index == page.count {
                page = try await cursor.nextBatch()
                index = 0
                if page.isEmpty { return nil }
            }
            defer { index += 1 }
            return page[index]
        }
    }
}

/// The server iterator behind one loop, and the connection it lives on. Closes both in `deinit`
/// if the loop was left before the end.
final class ServerCursor: Sendable {
    private let sequence: IteratorSequence
    private let state = Mutex(State())

    private struct State: Sendable {
        var connection: Connection?
        /// The connection came from the pool and must go back.
        var leased = false
        var id: Int64?
        var finished = false
    }

    init(sequence: IteratorSequence) { self.sequence = sequence }

    /// The next batch; empty once the iterator is exhausted (and then closed).
    func nextBatch() async throws -> [KeyValue] {
        if state.withLock({ $0.finished }) { return [] }
        do {
            let (connection, id) = try await opened()
            let step = sequence.reverse ? "ITER.PREV" : "ITER.NEXT"
            let batch = try await connection.execute([command(step, id, sequence.batchSize)], family: nil, deadline: sequence.route.deadline())[0]
                .throwingServerError().expectEntries()
            if batch.count < sequence.batchSize { await finish() }
            return batch
        } catch {
            await finish()
            throw error
        }
    }

    /// The connection and iterator id, opening both on first use.
    private func opened() async throws -> (Connection, Int64) {
        if let (c, id) = state.withLock({ s in s.connection.flatMap { c in s.id.map { (c, $0) } } }) { return (c, id) }
        let route = sequence.route
        let connection: Connection
        if let pinned = route.pinned {
            connection = pinned
        } else {
            connection = try await route.pool.lease(deadline: route.deadline())
            state.withLock {
                $0.connection = connection
                $0.leased = true
            }
        }
        state.withLock { $0.connection = connection }
        var open: [any RESPArgument] = ["ITER.OPEN"]
        if let snapshot = sequence.snapshot { open += ["SNAPSHOT", snapshot] }
        if sequence.reverse { open.append("REV") }
        if let start = sequence.start { open += ["START", start] }
        let id = try await connection.execute([command(open)], family: route.family, deadline: route.deadline())[0].throwingServerError().expectInt()
        state.withLock { $0.id = id }
        return (connection, id)
    }

    /// Closes the server iterator and gives the connection back. Idempotent.
    private func finish() async {
        let (connection, leased, id) = state.withLock { s in
            defer {
                s.finished = true
                s.connection = nil
                s.id = nil
                s.leased = false
            }
            return (s.connection, s.leased, s.id)
        }
        // In a task of its own: when the loop's task was cancelled, the close must still run.
        let pool = sequence.route.pool
        await Task { await ServerCursor.close(connection: connection, leased: leased, id: id, pool: pool) }.value
    }

    private static func close(connection: Connection?, leased: Bool, id: Int64?, pool: Pool) async {
        guard let connection else { return }
        if let id {
            // A transport failure leaves the reply stream unknown: drop the connection. A server
            // error (the snapshot under it was released, closing it) needs nothing.
            let reply = try? await connection.execute([command("ITER.CLOSE", id)], family: nil, deadline: .after(pool.configuration.requestDeadline))
            if reply == nil { connection.close() }
        }
        if leased { pool.giveBack(connection) }
    }

    deinit {
        let (connection, leased, id) = state.withLock { ($0.connection, $0.leased, $0.id) }
        guard connection != nil else { return }
        let pool = sequence.route.pool
        Task { await ServerCursor.close(connection: connection, leased: leased, id: id, pool: pool) }
    }
}

extension CairnClient {
    /// The entries from `start` on (or, with `reverse`, from `start` back), in the default column
    /// family, through a server-side iterator. See ``IteratorSequence``.
    public func iterate(from start: (any RESPArgument)? = nil, reverse: Bool = false, batchSize: Int = 100) -> IteratorSequence {
        IteratorSequence(route: route, snapshot: nil, start: start?.respBytes, reverse: reverse, batchSize: batchSize)
    }
}

extension ColumnFamily {
    /// As ``CairnClient/iterate(from:reverse:batchSize:)``, in this family.
    public func iterate(from start: (any RESPArgument)? = nil, reverse: Bool = false, batchSize: Int = 100) -> IteratorSequence {
        IteratorSequence(route: route, snapshot: nil, start: start?.respBytes, reverse: reverse, batchSize: batchSize)
    }
}

// The iterator commands themselves, for a connection of your own (docs/commands.md, "Server-side iterators").
extension CairnConnection {
    /// `ITER.OPEN [SNAPSHOT id] [REV] [START key]`: a new iterator's id, owned by this connection.
    public func openIterator(snapshot: Int64? = nil, reverse: Bool = false, start: (any RESPArgument)? = nil) async throws -> Int64 {
        var argv: [any RESPArgument] = ["ITER.OPEN"]
        if let snapshot { argv += ["SNAPSHOT", snapshot] }
        if reverse { argv.append("REV") }
        if let start { argv += ["START", start] }
        return try await send(argv).expectInt()
    }

    /// `ITER.NEXT id count`: up to `count` entries ascending; empty at the end.
    public func iteratorNext(_ id: Int64, count: Int = 10) async throws -> [KeyValue] {
        try await call("ITER.NEXT", id, count).expectEntries()
    }

    /// `ITER.PREV id count`: up to `count` entries descending; empty at the start.
    public func iteratorPrevious(_ id: Int64, count: Int = 10) async throws -> [KeyValue] {
        try await call("ITER.PREV", id, count).expectEntries()
    }

    /// `ITER.SEEK id key`: moves to the first key >= `key`.
    public func iteratorSeek(_ id: Int64, to key: some RESPArgument) async throws {
        try await call("ITER.SEEK", id, key).expectOK()
    }

    /// `ITER.CLOSE id`.
    public func closeIterator(_ id: Int64) async throws {
        try await call("ITER.CLOSE", id).expectOK()
    }
}
