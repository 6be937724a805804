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
        /// Each request's command as the door admitted it (`admit`), so none is looked up
        /// again; nil when the caller has no door of its own (tests, `executePipeline`).
        public let admitted: [Admitted]?
        /// The protocol its replies are written in.
        public let version: RESPVersion

        public init(session: Session, requests: [[[UInt8]]], admitted: [Admitted]? = nil, version: RESPVersion) {
            self.session = session
            self.requests = requests
            self.admitted = admitted
            self.version = version
        }
    }

    /// Runs the batched requests of several connections (one run each, in the order given) as
    /// one transaction and one write batch, under the stripes of all their keys: a poller round
    /// of clients each sending HSETs to the same hash takes that key's lock once and writes
    /// once, instead of once per client. Returns each run's replies and outcome.
    public func executeBatched(_ runs: [BatchedRun]) -> [(reply: [UInt8], outcome: Outcome)] {
        var results = runs.map { _ in (reply: [UInt8](), outcome: Outcome()) }
        // Every run's commands in one array; each run that runs together has its range of it.
        var commands: [(Command, [[UInt8]])] = []
        commands.reserveCapacity(runs.reduce(0) { $0 + $1.requests.count })
        var together: [Together] = []
        var keys: [(key: [UInt8], family: Family)] = []
        for (i, r) in runs.enumerated() {
            let start = commands.count
            if let admitted = r.admitted, admitted.count == r.requests.count {
                for (a, argv) in zip(admitted, r.requests) { commands.append((a.command, argv)) }
            } else {
                for argv in r.requests {
                    // Each passed the door when it was grouped (`route`); its lookup is that one.
                    guard case .success(let command) = lookup(argv, first: argv[0]) else { break }
                    commands.append((command, argv))
                }
            }
            guard r.requests.count > 1 || runs.count > 1, commands.count - start == r.requests.count else {
                // Alone, or one of them did not look up after all: each through the door.
                commands.removeSubrange(start...)
                var out = RESPWriter(version: r.version)
                for argv in r.requests { executeOne(argv, session: r.session, out: &out) }
                results[i] = (out.bytes, r.session.takeOutcome())
                continue
            }
            // The client's record once per run: what it last ran, and every request counted.
            admitted(commands[commands.count - 1].0.name, session: r.session, count: r.requests.count)
            let family = r.session.family, keysStart = keys.count
            for (command, argv) in commands[start...] { command.appendKeys(in: argv, in: family, to: &keys) }
            together.append(Together(run: i, commands: start..<commands.count, keys: keysStart..<keys.count))
        }
        guard !together.isEmpty else { return results }
        switch runTogether(together, runs, commands, keys) {
        case .success(let done):
            for (t, d) in zip(together, done) { results[t.run] = d }
        case .failure(let error):
            for t in together {
                // When the batch fails, each run is tried alone, so one connection's failure
                // (say, its family was dropped) is not every connection's.
                let alone = together.count == 1 ? .failure(error) : runTogether([t], runs, commands, Array(keys[t.keys]))
                switch alone {
                case .success(let done): results[t.run] = done[0]
                case .failure(let error):
                    var out = RESPWriter(version: runs[t.run].version)
                    for _ in t.commands { reply(error, to: &out) }
                    _ = runs[t.run].session.takeOutcome()  // nothing was written
                    results[t.run] = (out.bytes, Outcome())
                }
            }
        }
        return results
    }

    /// A run of `runs` that runs in the round's transaction: its ranges of the round's commands
    /// and of the keys they lock.
    private struct Together {
        let run: Int
        let commands: Range<Int>
        let keys: Range<Int>
    }

    /// Runs `together` (runs of `runs`, their commands ranges of `commands`) as one transaction
    /// under the locks of `keys`, and commits it: each run's replies and outcome, or why the
    /// commit failed.
    private func runTogether(
        _ together: [Together], _ runs: [BatchedRun], _ commands: [(Command, [[UInt8]])], _ keys: [(key: [UInt8], family: Family)]
    ) -> Result<[(reply: [UInt8], outcome: Outcome)], CommandError> {
        var replies = together.map { RESPWriter(version: runs[$0.run].version) }
        do {
            try locks.withLocks(keys) { () throws(CommandError) in
                let tx = Transaction(expectedCommands: together.reduce(0) { $0 + $1.commands.count })
                for (n, t) in together.enumerated() {
                    let session = runs[t.run].session
                    session.transaction = tx
                    defer { session.transaction = nil }
                    for (command, argv) in commands[t.commands] { run(command, argv, session: session, out: &replies[n]) }
                }
                try commit(tx)
            }
            return .success(together.enumerated().map { n, t in (replies[n].bytes, runs[t.run].session.takeOutcome()) })
        } catch {
            return .failure(error)
        }
    }

    /// Commits what a transaction staged (EXEC, a script, a batched run) as one write batch and
    /// fires the WATCHes of what it changed. The caller holds the stripes of every key written
    /// (or every stripe, when the transaction may change unknown keys).
    func commit(_ tx: Transaction) throws(CommandError) {
        guard !tx.isEmpty else {
            // Nothing written: only key misses can have been recorded.
            if !tx.events.isEmpty { publish(tx.events) }
            return
        }
        let options = writeOptions
        if !tx.events.isEmpty && feedsReplicas { tx.writeEvents() }
        try storage("commit") { try tx.withBatch { batch in try writeClaimed(batch, options: options) } }
        // Durable: its events go out, in the order its commands recorded them.
        if !tx.events.isEmpty { publish(tx.events) }
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
