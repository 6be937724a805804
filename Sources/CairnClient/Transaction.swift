public import RESP
import Synchronization

/// The commands of one MULTI/EXEC, collected by a ``CairnClient/transaction(watching:attempts:_:)``
/// body, plus reads that run at once on the transaction's connection (after WATCH, before MULTI).
///
/// Writes are queued: every typed write command of the catalogue has a queued form
/// (``CommandQueue``: `tx.set`, `tx.incrBy`, `tx.hset`, `tx.zadd` ...), and ``queue(_:)`` takes
/// anything else. They are sent as `MULTI`, the commands, `EXEC` in one round trip when the body
/// returns; on Cairn they commit as one RocksDB write batch. Their replies are what the
/// transaction call returns.
///
/// A transaction runs in a column family (``CairnClient/transaction(in:watching:attempts:_:)``,
/// `default` otherwise); ``family(_:)`` gives a view of the same transaction in another family,
/// so one EXEC can write to several families atomically. The `CF.USE`s this takes are the
/// client's business: they are not among the replies.
public final class Transaction: KeyValueReader, RoutedSender, CommandQueue {
    let route: Route
    /// Shared by every family view of the transaction.
    private let state: TransactionState

    init(route: Route) {
        self.route = route
        state = TransactionState()
    }

    private init(route: Route, sharing other: Transaction) {
        self.route = route
        state = other.state
    }

    /// `send` runs a read now on the transaction's connection (e.g. `GET` of a watched key),
    /// in this view's family.
    public var _route: CommandRoute { CommandRoute(route) }

    /// The family this view's reads and queued commands run in.
    public var familyName: String { route.family ?? "default" }

    /// The same transaction, with reads and queued commands in column family `name`:
    /// `tx.family("orders").set("o:1", body)`. Commands queued through any view commit in the
    /// one EXEC, in the order they were queued.
    public func family(_ name: String) -> Transaction {
        Transaction(route: Route(pool: route.pool, family: name, pinned: route.pinned), sharing: self)
    }

    /// Queues any command for the EXEC.
    public func queue(_ argv: [any RESPArgument]) {
        let c = QueuedCommand(family: route.family, command: command(argv))
        state.queued.withLock { $0.append(c) }
    }

    /// The commands queued so far.
    var commands: [QueuedCommand] { state.queued.withLock { $0 } }

    /// Sets what runs after the queued commands were sent and before EXEC is: for tests that
    /// change a watched key or stop the server at that moment.
    package func runBeforeExec(_ hook: (@Sendable () async throws -> Void)?) {
        state.beforeExec.withLock { $0 = hook }
    }

    var beforeExec: (@Sendable () async throws -> Void)? { state.beforeExec.withLock { $0 } }
}

/// What the views of one transaction share.
final class TransactionState: Sendable {
    let queued = Mutex<[QueuedCommand]>([])
    let beforeExec = Mutex<(@Sendable () async throws -> Void)?>(nil)
}

/// A command queued for EXEC and the family it runs in (nil: the transaction's own).
struct QueuedCommand {
    let family: String?
    let command: Command
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
                    // Whatever the body watched, in whichever family: the connection goes back clean.
                    _ = try? await pinned.send(["UNWATCH"])
                    throw error
                }
                let exec = try await pinned.execute(tx)
                if exec.isNull {
                    if attempt < attempts { continue }
                    throw CairnClientError(
                        .transactionAborted, message: "a watched key changed; the transaction did not run (\(attempts) attempts)")
                }
                return try exec.expectArray()
            }
            preconditionFailure("unreachable")
        }
    }

    /// Sends `MULTI`, the queued commands with a `CF.USE` wherever the family changes, `EXEC`,
    /// and a `CF.USE` back to this route's family when the last command ran elsewhere; returns
    /// EXEC's reply with the `CF.USE` replies taken out.
    ///
    /// - Throws: `.server` with prefix `EXECABORT` (and the queueing error) when the server
    ///   refused a queued command.
    private func execute(_ tx: Transaction) async throws -> RESPValue {
        let home = family
        var current = home
        var multi: [Command] = [[Array("MULTI".utf8)]]
        var switches = Set<Int>()  // positions (in EXEC's reply) of the queued CF.USEs
        for queued in tx.commands {
            if let wanted = queued.family, wanted != current {
                switches.insert(multi.count - 1)
                multi.append(command("CF.USE", wanted))
                current = wanted
            }
            multi.append(queued.command)
        }
        var tail: [Command] = [[Array("EXEC".utf8)]]
        if let home, current != home { tail.append(command("CF.USE", home)) }
        let replies: [RESPValue]
        if let hook = tx.beforeExec {
            let queuedReplies = try await execute(multi)
            try await hook()
            replies = try await queuedReplies + execute(tail)
        } else {
            replies = try await execute(multi + tail)
        }
        let exec = replies[multi.count]
        // EXECABORT when a command was refused while queueing; the queueing error says why.
        if case .error(let text) = exec {
            let cause = replies[1..<multi.count].first { if case .error = $0 { true } else { false } }
            var error = CairnClientError(serverReply: text)
            if case .error(let detail)? = cause { error.message += " (\(detail))" }
            throw error
        }
        guard !switches.isEmpty, case .array(let results) = exec else { return exec }
        return .array(results.enumerated().filter { !switches.contains($0.offset) }.map(\.element))
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

extension CairnClient {
    /// As ``transaction(watching:attempts:_:)``, in column family `family`: the watched keys,
    /// the reads and the queued commands are that family's (``Transaction/family(_:)`` reaches
    /// others within the same EXEC).
    ///
    /// ```swift
    /// try await client.transaction(in: "orders") { tx in
    ///     tx.set("order:7", "paid")
    ///     tx.family("stock").incrBy("widget", -1)
    /// }
    /// ```
    @discardableResult
    public func transaction(
        in family: String, watching keys: [any RESPArgument] = [], attempts: Int = 1, _ body: (Transaction) async throws -> Void
    ) async throws -> [RESPValue] {
        try await Route(pool: route.pool, family: family, pinned: nil).transaction(watching: keys, attempts: attempts, body)
    }

    /// As ``transaction(in:watching:attempts:_:)`` with the family's name.
    @discardableResult
    public func transaction(
        in family: ColumnFamily, watching keys: [any RESPArgument] = [], attempts: Int = 1, _ body: (Transaction) async throws -> Void
    ) async throws -> [RESPValue] {
        try await transaction(in: family.name, watching: keys, attempts: attempts, body)
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
