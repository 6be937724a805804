public import RESP

/// Consecutive collection writes of a connection (HSET, HDEL, HINCRBY...: `Grouping.batched`),
/// and those of every connection the server serves in one poller round, run as EXEC runs its
/// commands: each by its own handler, reading the ones before it through a transaction overlay,
/// all committed as one write batch under the locks of all their keys. A client pipelining 16
/// HSETs costs one RocksDB write instead of 16, fifty clients each sending one cost one too, and
/// no rule exists twice: the handlers are the ones a request run alone uses.
extension Command {
    /// `commands` with their writes batched (`Grouping.batched`), except those whose work
    /// grows with their collections (`Command.work`): those run alone, so that a big one can
    /// run off the worker (LongWork.swift) rather than inside a poller round's batch.
    static func batchingWrites(_ commands: [Command]) -> [Command] {
        commands.map { $0.flags.contains(.write) && $0.work == nil ? $0.grouped { _, _ in .batched } : $0 }
    }
}

extension Engine {
    /// Requests of one connection batched together at most (the server's group limit).
    public static let maxBatched = 256

    /// Runs `requests` (each `grouping` said `.batched`) and appends their replies, in order.
    @discardableResult
    public func executeBatched(_ requests: [[[UInt8]]], session: Session, out: inout RESPWriter) -> Outcome {
        let done = executeBatched([BatchedRun(session: session, requests: requests, version: out.version)])[0]
        out.bytes.append(contentsOf: done.reply)
        return done.outcome
    }

    /// Consecutive `.batched` requests of one connection, for `executeBatched(_:)`.
    public struct BatchedRun {
        public let session: Session
        public let requests: [[[UInt8]]]
        /// The protocol its replies are written in.
        public let version: RESPVersion

        public init(session: Session, requests: [[[UInt8]]], version: RESPVersion) {
            self.session = session
            self.requests = requests
            self.version = version
        }
    }

    /// Runs the batched requests of several connections (one run each, in the order given) as
    /// one transaction and one write batch, under the stripes of all their keys: a poller round
    /// of clients each sending HSETs to the same hash takes that key's lock once and writes
    /// once, instead of once per client. Returns each run's replies and outcome.
    public func executeBatched(_ runs: [BatchedRun]) -> [(reply: [UInt8], outcome: Outcome)] {
        var results = runs.map { _ in (reply: [UInt8](), outcome: Outcome()) }
        var together: [(index: Int, commands: [(Command, [[UInt8]])])] = []
        var keys: [(key: [UInt8], family: Family)] = []
        for (i, r) in runs.enumerated() {
            var commands: [(Command, [[UInt8]])] = []
            for argv in r.requests {
                // Each passed the door when the server grouped it (`route`); its lookup is that one.
                guard case .success(let command) = lookup(argv, first: argv[0]) else { break }
                commands.append((command, argv))
            }
            guard r.requests.count > 1 || runs.count > 1, commands.count == r.requests.count else {
                // Alone, or one of them did not look up after all: each through the door.
                var out = RESPWriter(version: r.version)
                for argv in r.requests { executeOne(argv, session: r.session, out: &out) }
                results[i] = (out.bytes, r.session.takeOutcome())
                continue
            }
            for (command, argv) in commands {
                admitted(command.name, session: r.session)
                for key in command.keys(in: argv) { keys.append((key, r.session.family)) }
            }
            together.append((i, commands))
        }
        guard !together.isEmpty else { return results }
        var replies = together.map { runs[$0.index].version }.map { RESPWriter(version: $0) }
        do {
            try locks.withLocks(keys) { () throws(CommandError) in
                let tx = Transaction(expectedCommands: together.reduce(0) { $0 + $1.commands.count })
                for (n, t) in together.enumerated() {
                    let session = runs[t.index].session
                    session.transaction = tx
                    defer { session.transaction = nil }
                    for (command, argv) in t.commands { run(command, argv, session: session, out: &replies[n]) }
                }
                try commit(tx)
            }
            for (n, t) in together.enumerated() {
                results[t.index] = (replies[n].bytes, runs[t.index].session.takeOutcome())
            }
        } catch {
            for t in together {
                var out = RESPWriter(version: runs[t.index].version)
                for _ in t.commands { reply(error, to: &out) }
                _ = runs[t.index].session.takeOutcome()  // nothing was written
                results[t.index] = (out.bytes, Outcome())
            }
        }
        return results
    }

    /// Commits what a transaction staged (EXEC, a script, a batched run) as one write batch and
    /// fires the WATCHes of what it changed. The caller holds the stripes of every key written
    /// (or every stripe, when the transaction may change unknown keys).
    func commit(_ tx: Transaction) throws(CommandError) {
        guard !tx.isEmpty else { return }
        let options = writeOptions
        try storage("commit") { try tx.withBatch { batch in try writeClaimed(batch, options: options) } }
        PoppedFronts.shared.publish(tx, database: database)
        if tx.changedUnknownKeys {
            locks.changedEveryStripe()
        } else {
            for stripe in tx.changedStripes { locks.changed(stripe: stripe) }
        }
        // Clients blocked on a list this transaction pushed to.
        wakeBlocked(after: tx)
    }
}
