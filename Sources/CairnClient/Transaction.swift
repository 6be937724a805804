public import RESP
import Synchronization

/// The commands of one MULTI/EXEC, collected by a ``CairnClient/transaction(watching:attempts:_:)``
/// body, plus reads that run at once on the transaction's connection (after WATCH, before MULTI).
///
/// Writes are queued (`tx.set`, `tx.incrBy`, ``queue(_:)`` for anything else) and sent as
/// `MULTI`, the commands, `EXEC` in one round trip when the body returns; on Cairn they commit
/// as one RocksDB write batch. Their replies are what the transaction call returns.
public final class Transaction: KeyValueReader, RoutedSender {
    let route: Route
    private let queued = Mutex<[Command]>([])

    init(route: Route) { self.route = route }

    /// `send` runs a read now on the transaction's connection (e.g. `GET` of a watched key).
    public var _route: CommandRoute { CommandRoute(route) }

    /// Queues any command for the EXEC.
    public func queue(_ argv: [any RESPArgument]) {
        let c = command(argv)
        queued.withLock { $0.append(c) }
    }

    /// The commands queued so far.
    var commands: [Command] { queued.withLock { $0 } }

    /// Queues `SET key value [NX|XX] [EX ...]`.
    public func set(_ key: some RESPArgument, _ value: some RESPArgument, expiration: Expiration? = nil, condition: SetCondition = .always)
    {
        queue(WriteSyntax.set(key, value, expiration, condition))
    }

    /// Queues `DEL key...`.
    public func delete(_ keys: any RESPArgument...) { queue(WriteSyntax.delete(keys)) }

    /// Queues `INCRBY key amount`.
    public func incrBy(_ key: some RESPArgument, _ amount: Int64) { queue(WriteSyntax.incrBy(key, amount)) }

    /// Queues `APPEND key value`.
    public func append(_ key: some RESPArgument, _ value: some RESPArgument) { queue(WriteSyntax.append(key, value)) }

    /// Queues `MERGE key operand`.
    public func merge(_ key: some RESPArgument, _ operand: some RESPArgument) { queue(WriteSyntax.merge(key, operand)) }

    /// Queues `EXPIRE key seconds [NX|XX|GT|LT]`.
    public func expire(_ key: some RESPArgument, seconds: Int, _ condition: ExpireCondition? = nil) {
        queue(WriteSyntax.expire("EXPIRE", key, seconds, condition))
    }

    /// Queues `DELRANGE low high`.
    public func deleteRange(_ low: RangeBound, _ high: RangeBound) {
        queue(WriteSyntax.deleteRange(low, high))
    }
}

extension Route {
    func transaction(watching keys: [any RESPArgument], attempts: Int, _ body: (Transaction) async throws -> Void) async throws
        -> [RESPValue]
    {
        precondition(attempts > 0, "attempts must be at least 1")
        return try await withPinned { pinned in
            for attempt in 1...attempts {
                if !keys.isEmpty { try await pinned.send(["WATCH"] + keys).expectOK() }
                let tx = Transaction(route: pinned)
                do {
                    try await body(tx)
                } catch {
                    if !keys.isEmpty { _ = try? await pinned.send(["UNWATCH"]) }
                    throw error
                }
                let queued = tx.commands
                let replies = try await pinned.execute([[Array("MULTI".utf8)]] + queued + [[Array("EXEC".utf8)]])
                let exec = replies[replies.count - 1]
                if exec.isNull {
                    if attempt < attempts { continue }
                    throw CairnClientError(
                        .transactionAborted, message: "a watched key changed; the transaction did not run (\(attempts) attempts)")
                }
                // EXECABORT when a command was refused while queueing; the queueing error says why.
                if case .error(let text) = exec {
                    let cause = replies.dropFirst().dropLast().first { if case .error = $0 { true } else { false } }
                    var error = CairnClientError(serverReply: text)
                    if case .error(let detail)? = cause { error.message += " (\(detail))" }
                    throw error
                }
                return try exec.expectArray()
            }
            preconditionFailure("unreachable")
        }
    }
}

extension CairnClient {
    /// Runs `body` to collect commands, then executes them atomically with MULTI/EXEC in one
    /// round trip and returns their replies (a command's own error appears in place as `.error`).
    ///
    /// With `watching`, the keys are WATCHed first; reads in `body` (`try await tx.get(key)`)
    /// run on the same connection, so an optimistic read-modify-write is:
    /// ```swift
    /// try await client.transaction(watching: ["balance"], attempts: 10) { tx in
    ///     let balance = Int(try await tx.getString("balance") ?? "0")!
    ///     tx.set("balance", balance + 10)
    /// }
    /// ```
    /// When a watched key changes before EXEC, the body runs again, up to `attempts` times.
    ///
    /// - Throws: ``CairnClientError/Code/transactionAborted`` when the last attempt also
    ///   conflicted; `.server` with prefix `EXECABORT` when the server refused a queued command;
    ///   whatever `body` throws (the transaction is then not sent, and the keys are unwatched).
    @discardableResult
    public func transaction(watching keys: [any RESPArgument] = [], attempts: Int = 1, _ body: (Transaction) async throws -> Void)
        async throws -> [RESPValue]
    {
        try await route.transaction(watching: keys, attempts: attempts, body)
    }
}

extension ColumnFamily {
    /// As ``CairnClient/transaction(watching:attempts:_:)``, with the commands in this family.
    @discardableResult
    public func transaction(watching keys: [any RESPArgument] = [], attempts: Int = 1, _ body: (Transaction) async throws -> Void)
        async throws -> [RESPValue]
    {
        try await route.transaction(watching: keys, attempts: attempts, body)
    }
}

extension CairnConnection {
    /// `WATCH key...` on this connection.
    public func watch(_ keys: any RESPArgument...) async throws {
        try await send(["WATCH"] + keys).expectOK()
    }

    /// `UNWATCH`.
    public func unwatch() async throws {
        try await call("UNWATCH").expectOK()
    }
}
