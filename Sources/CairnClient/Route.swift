import NIOCore
import RESP

/// Where a handle's commands go: any pooled connection made current in `family`, or one pinned
/// connection (snapshots, transactions, `withConnection`). A nil `family` leaves the connection's
/// current family alone (raw use through `withConnection`).
struct Route: Sendable {
    let pool: Pool
    let family: String?
    let pinned: Connection?

    /// Sends the commands in one round trip; server errors come back as `.error` values.
    ///
    /// The request deadline starts here and covers the wait for a connection. A request that
    /// was never written (its connection closed first) is sent on another connection, and so is
    /// one the server closed the connection on without answering, unless
    /// ``CairnClientConfiguration/resendUnanswered`` is off.
    func execute(_ commands: [Command]) async throws(CairnClientError) -> [RESPValue] {
        let deadline = NIODeadline.after(pool.configuration.requestDeadline)
        if let pinned {
            let replies = try await pinned.execute(commands, family: family, deadline: deadline)
            if pool.target?.role == .primary, replies.contains(where: \.isReadOnlyError) { pool.primaryMoved() }
            return replies
        }
        if commands.contains(where: isBlocking) {
            // A blocking command holds up every request behind it on its connection: it gets
            // a connection to itself.
            do {
                return try await pool.withLease(deadline: deadline) { connection in
                    try await connection.execute(commands, family: family, deadline: deadline)
                }
            } catch {
                throw error as? CairnClientError ?? CairnClientError(.connection, message: "\(error)")
            }
        }
        while true {
            do {
                let replies = try await pool.withShared(deadline: deadline) { connection in
                    try await connection.executeOrNotSent(commands, family: family, deadline: deadline)
                }
                // Under Sentinel, READONLY means the primary became a replica: the refused
                // writes did not run, so the request goes to the new primary within its deadline.
                guard pool.target?.role == .primary, replies.contains(where: \.isReadOnlyError) else { return replies }
                pool.primaryMoved()
                guard NIODeadline.now() + TimeAmount(pool.configuration.initialBackoff) < deadline else { return replies }
                try? await Task.sleep(for: pool.configuration.initialBackoff)
            } catch let error as RequestNotSent {
                if NIODeadline.now() >= deadline { throw error.error }
                await Task.yield()
            } catch let error as RequestNotAnswered {
                guard pool.configuration.resendUnanswered, NIODeadline.now() < deadline else { throw error.error }
                await Task.yield()
            } catch {
                throw error as? CairnClientError ?? CairnClientError(.connection, message: "\(error)")
            }
        }
    }

    /// The deadline of a request starting now.
    func deadline() -> NIODeadline { .after(pool.configuration.requestDeadline) }

    /// One command; a server error is thrown as ``CairnClientError``.
    func send(_ argv: [any RESPArgument]) async throws(CairnClientError) -> RESPValue {
        try await execute([command(argv)])[0].throwingServerError()
    }

    func pipeline(_ commands: [[any RESPArgument]]) async throws(CairnClientError) -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        return try await execute(commands.map { command($0) })
    }

    /// This route on one connection leased from the pool (or the pinned one), for commands that
    /// need the same connection (iterators, snapshots, WATCH). Waiting for the lease is bounded
    /// by the request deadline.
    func withPinned<T: Sendable>(_ body: (Route) async throws -> T) async throws -> T {
        if pinned != nil { return try await body(self) }
        return try await pool.withLease(deadline: .after(pool.configuration.requestDeadline)) { connection in
            try await body(Route(pool: pool, family: family, pinned: connection))
        }
    }
}

/// Commands that may wait on the server for data (blocking pops and moves, WAIT, XREAD BLOCK...).
private func isBlocking(_ c: Command) -> Bool {
    guard let name = c.first, name.count >= 4, name.count <= 10 else { return false }
    switch String(decoding: name, as: UTF8.self).uppercased() {
    case "BLPOP", "BRPOP", "BLMOVE", "BRPOPLPUSH", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP", "WAIT", "WAITAOF": return true
    case "XREAD", "XREADGROUP": return c.contains { String(decoding: $0, as: UTF8.self).uppercased() == "BLOCK" }
    default: return false
    }
}

extension RESPValue {
    /// `-READONLY You can't write against a read only replica.`
    var isReadOnlyError: Bool {
        if case .error(let text) = self { return text.hasPrefix("READONLY") }
        return false
    }

    /// Self, or the server error it carries thrown as ``CairnClientError``.
    func throwingServerError() throws(CairnClientError) -> RESPValue {
        if case .error(let text) = self { throw CairnClientError(serverReply: text) }
        return self
    }
}
