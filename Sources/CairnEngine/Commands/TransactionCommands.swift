import RESP
import Rocks

/// MULTI / EXEC / DISCARD / WATCH / UNWATCH: https://redis.io/docs/latest/develop/interact/transactions/
///
/// The writes of one EXEC commit as one RocksDB write batch (atomic across column families);
/// commands of the transaction read the writes queued before them through an overlay. EXEC
/// holds the write locks of every key its commands name, so no other client's write lands in
/// the middle. Commands that act outside the batch (CF.CREATE, CF.DROP, backups, COMPACT) are
/// refused when queued (`Command.Flags.noTransaction`), which aborts the EXEC, as Redis does.
///
/// WATCH remembers the version of each key's lock stripe, which moves only when a write really
/// changed a key of that stripe (`KeyLocks`), and the key's expiry: EXEC aborts when a watched
/// key was changed, deleted, flushed or expired since, as in Redis. Reads, no-op writes and
/// empty, read-only or aborted transactions leave watchers alone. Keys sharing a stripe (1 in
/// 4096) can abort each other: a rare false conflict, never a missed one.
enum TransactionCommands {
    static let all: [Command] = [
        Command("multi") { call, out throws(CommandError) in
            guard !call.session.inTransaction else { throw CommandError("ERR", "MULTI calls can not be nested") }
            call.session.queued = []
            call.session.transactionFailed = false
            out.simpleString("OK")
        },
        Command("discard") { call, out throws(CommandError) in
            guard call.session.inTransaction else { throw CommandError("ERR", "DISCARD without MULTI") }
            call.session.queued = nil
            call.session.watched = []
            out.simpleString("OK")
        },
        Command("watch") {
            call, out throws(CommandError) in
            guard !call.session.inTransaction else { throw CommandError("ERR", "WATCH inside MULTI is not allowed") }
            let locks = call.engine.locks
            for i in 1..<call.count {
                let stripe = locks.stripe(for: call[i], in: call.family)
                // The version first: a write landing after this read moves it, so reading the
                // expiry second cannot miss a change.
                let version = locks.version(ofStripe: stripe)
                let expiresAt = try liveExpiry(call, call[i])
                call.session.watched.append(WatchedKey(stripe: stripe, version: version, expiresAt: expiresAt))
            }
            out.simpleString("OK")
        },
        Command("unwatch") { call, out throws(CommandError) in
            call.session.watched = []
            out.simpleString("OK")
        },
        Command("exec", handler: exec),
    ]

    static func exec(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let session = call.session
        guard let queued = session.queued else { throw CommandError("ERR", "EXEC without MULTI") }
        let watched = session.watched
        session.queued = nil
        session.watched = []
        if session.transactionFailed {
            session.transactionFailed = false
            throw CommandError("EXECABORT", "Transaction discarded because of previous errors.")
        }
        let engine = call.engine
        var commands: [(Command, [[UInt8]])] = []
        var keys: [[UInt8]] = []
        var needsAll = false
        for argv in queued {
            guard case .success(let command) = engine.lookup(argv, first: argv[0]) else { continue }
            commands.append((command, argv))
            let k = command.keys(in: argv)
            keys += k
            // A write naming no key (FLUSHDB) or a family switch could touch anything.
            if k.isEmpty && (command.flags.contains(.write) || command.name.hasPrefix("cf.")) { needsAll = true }
        }
        let family = session.family
        let run = { () throws(CommandError) -> [UInt8]? in
            let now = Clock.milliseconds()
            for w in watched where engine.locks.heldVersion(w.stripe) != w.version || w.expiresAt.map({ $0 <= now }) == true {
                return nil
            }
            let tx = Transaction()
            session.transaction = tx
            // Like SELECT in Redis, a CF.USE inside the transaction stays in effect after EXEC.
            defer { session.transaction = nil }
            var replies = RESPWriter(version: out.version)
            replies.arrayHeader(commands.count)
            for (command, argv) in commands {
                engine.run(command, argv, session: session, out: &replies)
            }
            // Every stripe written is held (its key is named by a queued command, or the EXEC
            // holds every stripe).
            try engine.commit(tx)
            return replies.bytes
        }
        // Key locks are taken in the family current at EXEC; a transaction that switches
        // family (CF.USE) holds every stripe instead (needsAll above).
        let result = try engine.locks.withLocks(keys, in: family, plus: watched.map(\.stripe), all: needsAll, run)
        guard let result else {
            out.nullArray()
            return
        }
        out.bytes.append(contentsOf: result)
    }

    /// The expiry of `key` when it is live and expiring, read from the latest data (not the
    /// connection's snapshot): EXEC aborts once that instant passes, as Redis aborts a
    /// transaction whose watched key expired. A key already expired when watched is absent, so
    /// its later deletion changes nothing.
    static func liveExpiry(_ call: Call, _ key: [UInt8]) throws(CommandError) -> Int64? {
        let handle = call.family.handle
        let now = call.now
        return try call.engine.storage("WATCH") {
            try call.database.withValue(forKey: key, in: handle) { raw in
                guard let raw, let h = ValueFormat.header(of: raw), !h.isExpired(now: now) else { return nil }
                return h.expiresAt
            }
        }
    }
}
