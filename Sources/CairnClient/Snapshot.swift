import RESP

/// A point-in-time view of the database: reads through it see the data as it was when the
/// snapshot was taken. Only reads are offered (it is a ``KeyValueReader``).
///
/// Get one with ``CairnClient/withSnapshot(_:)`` or ``ColumnFamily/withSnapshot(_:)``; it lives
/// on one server connection (`SNAPSHOT.CREATE`, `SNAPSHOT.USE`) for the length of the closure
/// and is released when the closure returns or throws. Do not keep it after that.
public struct Snapshot: KeyValueReader, RoutedSender {
    /// The server's snapshot id.
    public let id: Int64
    let route: Route

    public var _route: CommandRoute { CommandRoute(route) }

    /// The snapshot's entries from `start` on (or back from it with `reverse`) through a server
    /// iterator (`ITER.OPEN SNAPSHOT id`), `batchSize` per `ITER.NEXT`. See ``IteratorSequence``.
    public func iterate(from start: (any RESPArgument)? = nil, reverse: Bool = false, batchSize: Int = 100) -> IteratorSequence {
        IteratorSequence(route: route, snapshot: id, start: start?.respBytes, reverse: reverse, batchSize: batchSize)
    }
}

/// One of a connection's snapshots, as `SNAPSHOT.LIST` reports it.
public struct SnapshotEntry: Sendable, Hashable {
    public var id: Int64
    /// The RocksDB sequence number the snapshot reads at.
    public var sequenceNumber: Int64
    public var ageSeconds: Int64
}

extension Route {
    /// Pins a connection, creates a snapshot and makes it the connection's read view, runs
    /// `body`, then always goes back to live reads and releases the snapshot. If that cleanup
    /// fails the connection is closed, which makes the server release the snapshot.
    func withSnapshot<T: Sendable>(_ body: (Snapshot) async throws -> T) async throws -> T {
        try await withPinned { pinned in
            let connection = CairnConnection(route: pinned)
            let id = try await connection.createSnapshot()
            let result: Result<T, any Error>
            do {
                try await connection.useSnapshot(id)
                result = .success(try await body(Snapshot(id: id, route: pinned)))
            } catch {
                result = .failure(error)
            }
            do {
                let replies = try await pinned.pipeline([["SNAPSHOT.USE", "NONE"], ["SNAPSHOT.RELEASE", id]])
                for reply in replies { try reply.throwingServerError().expectOK() }
            } catch {
                pinned.pinned?.close()
            }
            return try result.get()
        }
    }
}

extension CairnClient {
    /// Runs `body` with a snapshot of the database and releases it afterwards, also when
    /// `body` throws.
    ///
    /// ```swift
    /// let (a, b) = try await client.withSnapshot { snap in
    ///     (try await snap.get("a"), try await snap.get("b"))   // one point in time
    /// }
    /// ```
    public func withSnapshot<T: Sendable>(_ body: (Snapshot) async throws -> T) async throws -> T {
        try await route.withSnapshot(body)
    }
}

extension ColumnFamily {
    /// As ``CairnClient/withSnapshot(_:)``; the snapshot's reads run in this family.
    public func withSnapshot<T: Sendable>(_ body: (Snapshot) async throws -> T) async throws -> T {
        try await route.withSnapshot(body)
    }
}

// The snapshot commands themselves, for a connection of your own (docs/commands.md, "Snapshots").
extension CairnConnection {
    /// `SNAPSHOT.CREATE`: a new snapshot's id. It belongs to this connection.
    public func createSnapshot() async throws -> Int64 {
        try await call("SNAPSHOT.CREATE").expectInt()
    }

    /// `SNAPSHOT.USE id` (or `NONE` for nil): this connection's reads see the snapshot.
    public func useSnapshot(_ id: Int64?) async throws {
        if let id {
            try await call("SNAPSHOT.USE", id).expectOK()
        } else {
            try await call("SNAPSHOT.USE", "NONE").expectOK()
        }
    }

    /// `SNAPSHOT.RELEASE id` (iterators reading through it are closed).
    public func releaseSnapshot(_ id: Int64) async throws {
        try await call("SNAPSHOT.RELEASE", id).expectOK()
    }

    /// `SNAPSHOT.LIST`: this connection's snapshots.
    public func snapshots() async throws -> [SnapshotEntry] {
        try await call("SNAPSHOT.LIST").expectArray().map { item throws(CairnClientError) in
            let fields = try item.expectArray()
            guard fields.count == 3 else { throw .unexpected(item, expected: "[id, sequence, age]") }
            return SnapshotEntry(
                id: try fields[0].expectInt(), sequenceNumber: try fields[1].expectInt(), ageSeconds: try fields[2].expectInt())
        }
    }
}
