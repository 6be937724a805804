public import RESP

/// Consecutive collection writes of one connection (HSET, HDEL, HINCRBY...: `Grouping.batched`)
/// run as EXEC runs its commands: each by its own handler, reading the ones before it through
/// a transaction overlay, all committed as one write batch under the locks of all their keys.
/// A client pipelining 16 HSETs costs one RocksDB write instead of 16, and no rule exists twice:
/// the handlers are the ones a request run alone uses.
extension Engine {
    /// Requests of one connection batched together at most (the server's group limit).
    public static let maxBatched = 256

    /// Runs `requests` (each `grouping` said `.batched`) and appends their replies, in order.
    @discardableResult
    public func executeBatched(_ requests: [[[UInt8]]], session: Session, out: inout RESPWriter) -> Outcome {
        runBatched(requests, session: session, out: &out)
        return session.takeOutcome()
    }

    private func runBatched(_ requests: [[[UInt8]]], session: Session, out: inout RESPWriter) {
        guard requests.count > 1 else {
            executeOne(requests[0], session: session, out: &out)
            return
        }
        var commands: [(Command, [[UInt8]])] = []
        var keys: [[UInt8]] = []
        for argv in requests {
            // Each passed the door when the server grouped it (`route`); its lookup is that one.
            guard case .success(let command) = lookup(argv, first: argv[0]) else { continue }
            commands.append((command, argv))
            keys += command.keys(in: argv)
        }
        guard commands.count == requests.count else {
            for argv in requests { executeOne(argv, session: session, out: &out) }
            return
        }
        for (command, _) in commands { admitted(command.name, session: session) }
        var replies = RESPWriter(version: out.version)
        do {
            try locks.withLocks(keys, in: session.family) { () throws(CommandError) in
                let tx = Transaction()
                session.transaction = tx
                defer { session.transaction = nil }
                for (command, argv) in commands { run(command, argv, session: session, out: &replies) }
                try commit(tx)
            }
            out.bytes.append(contentsOf: replies.bytes)
        } catch {
            for _ in commands { reply(error, to: &out) }
        }
    }

    /// Commits what a transaction staged (EXEC, a script, a batched run) as one write batch and
    /// fires the WATCHes of what it changed. The caller holds the stripes of every key written
    /// (or every stripe, when the transaction may change unknown keys).
    func commit(_ tx: Transaction) throws(CommandError) {
        guard tx.batch.count > 0 else { return }
        let options = writeOptions
        try storage("commit") { try database.write(tx.batch, options: options) }
        if tx.changedUnknownKeys {
            locks.changedEveryStripe()
        } else {
            for stripe in tx.changedStripes { locks.changed(stripe: stripe) }
        }
        // Clients blocked on a list this transaction pushed to.
        wakeBlocked(after: tx)
    }
}
