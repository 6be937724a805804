import Dispatch
import RESP
import Rocks

/// REPLICAOF, SLAVEOF, ROLE, WAIT, REPLCONF, PSYNC, SYNC: https://redis.io/docs/latest/operate/oss_and_stack/management/replication/
enum ReplicationCommands {
    static let all: [Command] = [
        Command("replicaof", handler: replicaOf).reaching(ReplicationCommands.replacesEverything),
        Command("slaveof", handler: replicaOf).reaching(ReplicationCommands.replacesEverything),
        Command("role", handler: role),
        Command("wait", handler: wait),
        Command("replconf") { call, out throws(CommandError) in
            var i = 1
            while i + 1 < call.count {
                if call[i].isKeyword("LISTENING-PORT") {
                    let port = try call.integer(i + 1)
                    guard (0...65535).contains(port) else { throw .notInteger }
                    call.session.replicaListeningPort = Int(port)
                } else if call[i].isKeyword("IP-ADDRESS") {
                    call.session.replicaAnnouncedIP = call.text(i + 1)
                } else if call[i].isKeyword("ACK") || call[i].isKeyword("GETACK") {
                    return  // only meaningful on a replication stream; no reply, as Redis
                } else if !call[i].isKeyword("CAPA") && !call[i].isKeyword("RDB-ONLY") && !call[i].isKeyword("RDB-FILTER-ONLY") {
                    throw CommandError("ERR", "Unrecognized REPLCONF option: \(call.text(i))")
                }
                i += 2
            }
            guard i == call.count else { throw .syntax }
            out.simpleString("OK")
        },
        Command("psync", handler: psync).reachingEverything(write: false),
        Command("sync") { _, _ throws(CommandError) in
            throw CommandError("ERR", "SYNC (an RDB stream) is not supported: Cairn replicates between Cairn servers with PSYNC")
        },
        FailoverCommand.command,
    ]

    // MARK: REPLICAOF

    /// REPLICAOF host port replaces every key with the primary's (NO ONE changes none).
    @Sendable static func replacesEverything(_ argv: [[UInt8]], _ session: Session) -> [KeyRange] {
        argv.count == 3 && argv[1].isKeyword("NO") && argv[2].isKeyword("ONE") ? [] : [.everything(write: true)]
    }

    static func replicaOf(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let engine = call.engine
        if call[1].isKeyword("NO") && call[2].isKeyword("ONE") {
            if engine.replication.isReplica {
                try engine.persistReplicaof("")
                engine.replication.promote(engine, recorded: true)
                engine.logger.notice("MASTER MODE enabled (user request from 'id=\(call.session.id) addr=\(call.session.record.address)')")
            }
            out.simpleString("OK")
            return
        }
        guard let port = Int(call.text(2)), (0...65535).contains(port) else { throw CommandError("ERR", "Invalid master port") }
        let host = call.text(1)
        if engine.replication.role == .replica(host: host, port: port) {
            out.simpleString("OK Already connected to specified master")
            return
        }
        try engine.persistReplicaof("\(host) \(port)")
        engine.replication.follow(engine, host: host, port: port, recorded: true)
        engine.logger.notice("REPLICAOF \(host):\(port) enabled (user request from 'id=\(call.session.id) addr=\(call.session.record.address)')")
        out.simpleString("OK")
    }

    // MARK: ROLE

    static func role(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let engine = call.engine
        let offset = Int64(bitPattern: engine.database.latestSequenceNumber)
        let s = engine.replication.state.withLock { $0 }
        switch s.role {
        case .primary:
            out.arrayHeader(3)
            out.bulk("master")
            out.integer(offset)
            let replicas = s.replicas.values.filter { $0.state == "online" }.sorted { $0.clientID < $1.clientID }
            out.arrayHeader(replicas.count)
            for r in replicas {
                out.arrayHeader(3)
                out.bulk(r.address)
                out.bulk(String(r.listeningPort))
                out.bulk(String(r.acked))
            }
        case .replica(let host, let port):
            out.arrayHeader(5)
            out.bulk("slave")
            out.bulk(host)
            out.integer(port)
            out.bulk(s.syncInProgress ? "sync" : s.linkUp ? "connected" : "connecting")
            out.integer(s.linkUp ? offset : -1)
        }
    }

    // MARK: WAIT

    static func wait(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let engine = call.engine
        guard !engine.replication.isReplica else {
            throw CommandError("ERR", "WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
        }
        let needed = try call.integer(1)
        let timeout = try call.timeout(2, .milliseconds)
        // Every write acknowledged before this WAIT has a sequence number at most this.
        let target = engine.database.latestSequenceNumber
        let now = engine.replication.replicasAcknowledging(target)
        guard now < needed, call.session.canDefer, call.session.transaction == nil else {
            out.integer(now)
            return
        }
        let waiter = Replication.Waiter(target: target, needed: Int(needed))
        engine.replication.waiters.withLock { $0.append(waiter) }
        call.deferReply(&out) { out throws(CommandError) in
            let deadline: DispatchTime = timeout == 0 ? .distantFuture : .now() + .milliseconds(Int(timeout))
            _ = waiter.semaphore.wait(timeout: deadline)
            engine.replication.waiters.withLock { list in list.removeAll { $0 === waiter } }
            out.integer(engine.replication.replicasAcknowledging(target))
        }
    }

    // MARK: PSYNC

    /// Decides between a partial and a full sync; the server then hands the connection to a
    /// feeder, which sends `+CONTINUE` or `+FULLRESYNC` and the stream.
    static func psync(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard call.session.canDefer else { throw CommandError("ERR", "PSYNC needs its own connection to the server") }
        let engine = call.engine
        let askedID = call.text(1)
        let asked = UInt64(call.text(2))
        let database = engine.database
        let latest = database.latestSequenceNumber
        let r = engine.replication
        let s = r.state.withLock { $0 }
        var partial = false
        if let asked, askedID != "?" {
            let knownHistory = askedID == s.id || (askedID == s.secondID && s.secondID != Replication.noID && asked <= s.secondOffset + 1)
            partial = knownHistory && asked <= latest + 1 && r.walReaches(back: asked, in: database)
        }
        r.state.withLock { s in
            if partial { s.syncPartialOK += 1 } else { s.syncFull += 1 }
            if !partial && askedID != "?" { s.syncPartialErr += 1 }
        }
        let from = partial ? asked! : latest + 1
        engine.logger.notice("replica \(call.session.record.address) asks to continue \(askedID) from \(call.text(2)): \(partial ? "partial sync from sequence \(from)" : "full sync")")
        call.session.outcome.replicaHandOff = ReplicaHandOff(
            full: !partial, from: from, id: s.id, listeningPort: call.session.replicaListeningPort, announcedIP: call.session.replicaAnnouncedIP)
    }
}

extension Replication {
    /// REPLICAOF host port: follow that primary (the server's link does the work). Unless the
    /// caller `recorded` it already, the config file's `replicaof` line says so (DurableRole.swift).
    func follow(_ engine: Engine, host: String, port: Int, recorded: Bool = false) {
        if !recorded { engine.persistReplicaofLogging("\(host) \(port)") }
        // Under `linkGate`: the link to the previous primary writes nothing after this.
        linkGate.withLock { _ in
            state.withLock { s in
                s.role = .replica(host: host, port: port)
                s.generation += 1
                s.linkUp = false
                s.linkDownSince = Clock.milliseconds()
                s.syncInProgress = false
                s.lastSyncFailure = ""
                // Replicas of this server followed its own history; they resynchronise.
                s.feedGeneration += 1
            }
        }
        readOnly.store(engine.configuration.replicaReadOnly, ordering: .relaxed)
        // Clients blocked in a write (BLPOP, XREADGROUP) end their wait now (`retryBlocked`).
        engine.blocking.wakeAll()
        try? engine.update { (c: inout Configuration) throws(CommandError) in c.replicaof = "\(host) \(port)" }
        // Its first full sync reopens the database keeping the WAL, for its own replicas later.
        walWanted.store(true, ordering: .relaxed)
        save(dir: engine.configuration.dir, cleanAt: nil)
        engine.hooks?.replicationChanged()
    }

    /// REPLICAOF NO ONE: a primary from now on, with a new history id; the old id stays valid
    /// up to the current offset, so the other replicas of the old primary continue partially.
    /// `afterHandOver`: the link already ran the hand-over (the primary's FAILOVER asked).
    /// Unless the caller `recorded` it already, the config file's `replicaof` line goes.
    public func promote(_ engine: Engine, afterHandOver: Bool = false, recorded: Bool = false) {
        if !recorded { engine.persistReplicaofLogging("") }
        if !afterHandOver && state.withLock({ $0.linkUp }) {
            if requestTakeover() {
                engine.logger.notice("the primary handed over: every write it acknowledged is here")
            } else {
                engine.logger.warning("the primary did not hand over within \(Replication.takeoverTimeoutMilliseconds) ms; promoted with the writes received so far")
            }
        }
        // Under `linkGate`: the old link applies no batch after `latest`, the end of the
        // history kept as the second id.
        linkGate.withLock { _ in
            let latest = engine.database.latestSequenceNumber
            state.withLock { s in
                s.role = .primary
                s.generation += 1
                s.linkUp = false
                s.syncInProgress = false
                s.secondID = s.id
                s.secondOffset = latest
                s.id = Replication.newID()
                // Replicas that connected while this server was a replica learn the new id
                // (they continue partially by the old one), as Redis disconnects them.
                s.feedGeneration += 1
            }
        }
        // A big write the old primary was sending in pieces: completed here, as a primary's
        // start would (writes are still refused until the next line).
        _ = engine.locks.withAll { engine.finishPendingWrites() }
        readOnly.store(false, ordering: .relaxed)
        try? engine.update { (c: inout Configuration) throws(CommandError) in c.replicaof = "" }
        save(dir: engine.configuration.dir, cleanAt: nil)
        engine.hooks?.replicationChanged()
    }

    /// After a restore replaced a primary's data: a new history (its replicas sync in full).
    func startNewHistory(_ engine: Engine) {
        guard !isReplica else { return }
        state.withLock { s in
            s.id = Replication.newID()
            s.secondID = Replication.noID
            s.secondOffset = 0
        }
        save(dir: engine.configuration.dir, cleanAt: nil)
    }

    /// The refusal of a write on a read-only replica, or nil.
    @inline(__always)
    func refusal(_ command: Command) -> CommandError? {
        guard readOnly.load(ordering: .relaxed), command.flags.contains(.write) else { return nil }
        return CommandError("READONLY", "You can't write against a read only replica.")
    }
}
