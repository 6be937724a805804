public import RESP
import Rocks

/// The one door every request passes, whichever executor then runs it: `execute` (one request,
/// its handler), the grouped read (`executePlainGets`, one MultiGet for a run of GETs) or the
/// batched round (`executeBatched`, the writes of many clients by their own handlers in one
/// transaction and one batch), EXEC's queue and the long-command queue.
///
/// `screen` holds the rules (lookup and arity, authentication, the user's permissions, the
/// key and value size limits) and changes nothing; `admitted` records what passing means (the
/// client's `cmd` and `idle` in CLIENT LIST, the command count). A fast executor is chosen by
/// the command table (`Command.grouping`), never by comparing names, and asks `screen` first,
/// so no executor has rules of its own.
extension Engine {
    /// What the door says of a request.
    enum Screening {
        /// No such command, or a wrong number of arguments.
        case unknown(CommandError)
        /// The command exists but may not run now for this session.
        case refused(Command, CommandError)
        case admitted(Command)
    }

    /// The rules, without side effects.
    func screen(_ argv: [[UInt8]], session: Session) -> Screening {
        guard let first = argv.first else { return .unknown(CommandError("ERR", "empty command")) }
        return screen(argv, session: session, looked: lookup(argv, first: first))
    }

    /// `screen` of a request whose command `looked` already is (`lookup`).
    func screen(_ argv: [[UInt8]], session: Session, looked: Result<Command, CommandError>) -> Screening {
        let command: Command
        switch looked {
        case .failure(let error): return .unknown(error)
        case .success(let c): command = c
        }
        if !session.authenticated && !command.flags.contains(.noAuth) { return .refused(command, .noAuth) }
        if session.authenticated, let refusal = guardrails.check(command, argv, session: session) {
            return .refused(command, refusal)
        }
        if let busy = scripting.busyRefusal(command, session: session, engine: self) { return .refused(command, busy) }
        if let readOnly = replication.refusal(command) { return .refused(command, readOnly) }
        // Disk-full mode refuses every write whichever executor would run it (inside MULTI at
        // queueing time, as Redis refuses writes when out of memory); the free-space accounting
        // of writes that pass is `run`'s (`diskRefusal`), whichever executor calls it.
        if command.flags.contains(.write) && diskGuard.refusesWrites { return .refused(command, .diskFull) }
        if session.subscriptionCount > 0 && session.protocolVersion == .v2 && !Engine.allowedWhileSubscribed.contains(command.name) {
            return .refused(command, CommandError(
                "ERR", "Can't execute '\(command.name)': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"))
        }
        if session.inTransaction && command.flags.contains(.noTransaction) {
            return .refused(command, CommandError("ERR", "Command not allowed inside a transaction"))
        }
        return .admitted(command)
    }

    /// What a RESP2 client may run while subscribed to a channel or pattern.
    static let allowedWhileSubscribed: Set<String> = ["subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
                                                      "ping", "quit", "reset"]

    /// Records that `count` requests of `command` from `session` passed the door (or reached
    /// it, when refused): CLIENT LIST's `cmd` and `idle`, the count of commands processed.
    func admitted(_ command: String, session: Session, count: Int = 1) {
        stats.commandsProcessed.increment(by: count)
        let now = Clock.milliseconds()
        session.record.state.withLock {
            $0.lastCommand = command
            $0.lastInteraction = now
        }
    }

    /// Records what requests of `command` cost once they ran, whichever executor ran them:
    /// `run` (alone, long, and each command of EXEC), the grouped read and the grouped write
    /// report here, so INFO commandstats and latencystats, LATENCY, the slow log and MONITOR
    /// see every request the same way. A grouped batch reports its requests at their average
    /// time (`nanoseconds` is the batch's); `failed` of them answered an error.
    ///
    /// Cheap when nothing watches: a few relaxed atomic adds, and three relaxed loads to learn
    /// that no request is slow enough for the slow log or the latency monitor and no MONITOR
    /// is connected.
    func completed(_ command: Command, _ requests: some Collection<[[UInt8]]>, session: Session, nanoseconds: Int, failed: Int) {
        let count = requests.count
        guard count > 0 else { return }
        stats.commands[command].record(count: count, totalNanoseconds: nanoseconds, failed: failed)
        let microseconds = nanoseconds / count / 1000
        let slow = stats.slowLog.wants(microseconds) && !command.flags.contains(.skipSlowlog)
        let spike = stats.latency.thresholdMilliseconds.load(ordering: .relaxed) > 0
        let watched = !monitors.isEmpty && !command.flags.contains(.admin)
        guard slow || spike || watched else { return }
        let now = Clock.microseconds()
        if slow { for r in requests { stats.slowLog.add(r, microseconds: microseconds, session: session, now: now / 1000) } }
        if spike {
            stats.latency.note(command.flags.contains(.fast) ? "fast-command" : "command", milliseconds: microseconds / 1000, now: now / 1000)
        }
        if watched {
            let byScript = scripting.isRunning(for: session)
            for r in requests { monitors.feed(r, session: session, at: now - Int64(microseconds), byScript: byScript) }
        }
    }

    /// Counts a request refused before it ran in its command's `rejected_calls`.
    func rejected(_ command: Command) {
        stats.commands[command].rejectedCalls.increment()
    }

    /// Runs one request through the door and its handler, and appends its reply to `out`;
    /// returns what else it asks of the server. `admitted`: the door already admitted it
    /// (`admit`), so it is neither looked up nor screened again.
    @discardableResult
    public func execute(_ argv: [[UInt8]], session: Session, out: inout RESPWriter, admitted: Admitted? = nil) -> Outcome {
        executeOne(argv, session: session, out: &out, admitted: admitted)
        return session.takeOutcome()
    }

    /// `execute`, leaving the outcome in the session for the caller to take with others.
    func executeOne(_ argv: [[UInt8]], session: Session, out: inout RESPWriter, admitted passed: Admitted? = nil) {
        if let passed, !session.inTransaction {
            admitted(passed.command.name, session: session)
            run(passed.command, argv, session: session, out: &out)
            return
        }
        switch screen(argv, session: session) {
        case .unknown(let error):
            stats.commandsProcessed.increment()
            if session.inTransaction { session.transactionFailed = true }
            // A known command (or subcommand) with the wrong number of arguments: Redis counts
            // it as rejected. An unknown command or subcommand has no statistics.
            if let first = argv.first, let top = table.command(named: first) {
                if top.subcommands.isEmpty || argv.count < 2 {
                    rejected(top)
                } else if let sub = top.subcommands[Bytes.lowercased(argv[1])] {
                    rejected(sub)
                }
            }
            reply(error, to: &out)
        case .refused(let command, let error):
            admitted(command.name, session: session)
            rejected(command)
            if session.inTransaction { session.transactionFailed = true }
            if error.prefix == "NOPERM" {
                guardrails.noteRefusal(command, argv, session: session, context: session.inTransaction ? "multi" : "toplevel")
                logger.info("refused '\(command.name)' to user \(session.user) (client \(session.id), \(session.record.address))")
            }
            reply(error, to: &out)
        case .admitted(let command):
            admitted(command.name, session: session)
            if session.inTransaction && !command.flags.contains(.noMulti) {
                session.queued?.append(argv)
                out.simpleString("QUEUED")
                return
            }
            run(command, argv, session: session, out: &out)
        }
    }

    /// A request the door admitted, with its command: what `admit` hands the executor, so
    /// that nothing after it looks the command up or screens the request again.
    public struct Admitted: Sendable, Equatable {
        let command: Command
        public static func == (a: Admitted, b: Admitted) -> Bool { a.command.index == b.command.index }

        init(command: Command) { self.command = command }

        /// A command of the standard table by name (`set`, `client|setname`), as the door would
        /// admit it: for code that plays the server's part without a door (the connection's
        /// rules, tested alone).
        public init?(named name: String) {
            guard let command = CommandTable.standard.find(name) else { return nil }
            self.command = command
        }
    }

    /// What the door says of a request, and how the server runs it: `route`, and the admitted
    /// command when it passed (nil when it did not, it is only queued in MULTI, or it is so
    /// big that the screening itself runs off the worker: `execute` screens it then).
    public struct Admission: Sendable {
        public let route: Route
        public let admitted: Admitted?
    }

    /// Looks the request's command up once, holds it for CLIENT PAUSE, screens it and picks its
    /// executor by the command table (see `route`).
    public func admit(_ argv: [[UInt8]], session: Session) -> Admission {
        guard let first = argv.first else { return Admission(route: .alone, admitted: nil) }
        let looked = lookup(argv, first: first)
        if let wait = pauseDelay(looked, session: session) { return Admission(route: .paused(milliseconds: wait), admitted: nil) }
        guard !session.inTransaction else { return Admission(route: .alone, admitted: nil) }
        if argv.count > Engine.longArgumentCount { return Admission(route: .long, admitted: nil) }
        guard case .admitted(let command) = screen(argv, session: session, looked: looked) else {
            return Admission(route: .alone, admitted: nil)
        }
        let admitted = Admitted(command: command)
        // Its keys are claimed by a big write committing in pieces on the long queue: queued
        // behind it there, the request waits without holding up the worker.
        if locks.hasClaims && locks.isClaimed(command.keys(in: argv), in: session.family) { return Admission(route: .long, admitted: admitted) }
        if let rule = command.grouping, let kind = rule(argv, session) { return Admission(route: .grouped(kind), admitted: admitted) }
        return Admission(route: command.flags.contains(.long) ? .long : .alone, admitted: admitted)
    }

    /// Which executor the server runs a request with; chosen after the door, by the command table.
    public enum Route: Equatable, Sendable {
        /// With its neighbours (`Command.grouping`): one MultiGet, or one write batch.
        case grouped(Command.Grouping)
        /// Off the worker, on the long-command queue, through `execute`.
        case long
        /// Through `execute` on the worker (refused requests too, so their errors come from
        /// one place).
        case alone
        /// Held for CLIENT PAUSE this long before it runs.
        case paused(milliseconds: Int64)
    }

    /// Requests with more arguments than this run off the worker (`Route.long`).
    public static let longArgumentCount = 1024

    /// How the server runs this request, screened once: grouped when it passes the door as it
    /// is and the table allows it; long when it has more than `longArgumentCount` arguments (a
    /// 500,000-key MSET, DEL or MGET) or its command is flagged `long` (DBSIZE, KEYS, COMPACT),
    /// so it would hold up the worker's other clients, or when a big write has claimed one of
    /// its keys; otherwise alone. Inside MULTI a request
    /// is only queued, which is quick: alone.
    public func route(_ argv: [[UInt8]], session: Session) -> Route { admit(argv, session: session).route }

    /// The grouping `route` picks for this request, if any.
    public func grouping(_ argv: [[UInt8]], session: Session) -> Command.Grouping? {
        if case .grouped(let kind) = route(argv, session: session) { kind } else { nil }
    }

    /// Deletes `key`, found expired by a read, unless it was rewritten meanwhile, and counts it
    /// in `expired_keys`: what every read path does with an expired value (Redis's lazy expiry).
    /// The caller holds no key lock and is not inside EXEC.
    func reapExpired(_ key: [UInt8], in family: Family) {
        // In disk-full mode nothing may write; compaction drops the value later. A replica
        // writes only its primary's batches (which delete what expired there).
        guard !diskGuard.refusesWrites, !replication.isReplica else { return }
        let handle = family.handle
        locks.withLock(key, in: family) {
            let stillExpired = (try? database.withValue(forKey: key, in: handle) { raw in
                raw.flatMap { ValueFormat.header(of: $0) }?.isExpired(now: Clock.milliseconds()) ?? false
            }) ?? false
            guard stillExpired else { return }
            let notifying = activeEventClasses != 0
            let deleted: Void?
            if notifying {
                var batch = WriteBatch()
                batch.delete(key, in: handle)
                addExpiryEvents([key], to: &batch)
                deleted = try? database.write(batch, options: writeOptions)
            } else {
                deleted = try? database.delete(key, in: handle, options: writeOptions)
            }
            if deleted != nil {
                // No `changed`: the key ceased to exist when it expired, and a WATCH of it
                // before then fires on its expiry (WatchedKey.expiresAt); this changes nothing.
                stats.expiredKeys.increment()
                if notifying { publishExpired([key]) }
            }
        }
    }
}
