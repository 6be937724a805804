import Dispatch
import RESP

/// A promotion that loses no write: when a replica whose primary is still reachable is
/// promoted (REPLICAOF NO ONE, as Sentinel does in a failover, or the primary's FAILOVER), it
/// first asks the primary to hand over (`REPLCONF TAKEOVER` on its link). The primary refuses
/// writes from then on (`-READONLY`, so clients look for the new primary), sends the rest of
/// its WAL and `TAKEOVER-READY sequence`, and follows the replica. The replica applies up to
/// that sequence and only then becomes a primary. Every write the old primary acknowledged is
/// on the new one, and no two primaries take writes at once.
///
/// If the primary does not answer within `takeoverTimeout` (it is gone, as in a crash), the
/// replica is promoted with what it has, as Redis does.
extension Replication {
    static let takeoverTimeoutMilliseconds = 3000

    // MARK: replica side

    /// Whether the link should ask its primary to hand over.
    public var takeoverWanted: Bool { state.withLock { $0.takeoverWanted } }

    /// REPLICAOF NO ONE with the link up: asks the link to run the hand-over and waits for it.
    func requestTakeover() -> Bool {
        let done = DispatchSemaphore(value: 0)
        state.withLock { s in
            s.takeoverWanted = true
            s.takeoverDone = done
        }
        let ok = done.wait(timeout: .now() + .milliseconds(Replication.takeoverTimeoutMilliseconds)) == .success
        state.withLock { s in
            s.takeoverWanted = false
            s.takeoverDone = nil
        }
        return ok
    }

    /// The link applied everything the primary had (`TAKEOVER-READY`).
    public func takeoverApplied() {
        state.withLock { $0.takeoverDone }?.signal()
    }

    // MARK: primary side

    /// A replica asked to take over: refuse client writes from now on. Returns false when a
    /// hand-over is already running.
    public func beginHandOver(to clientID: Int64) -> Bool {
        let started = state.withLock { s -> Bool in
            guard s.role == .primary, s.handingOverTo == nil else { return false }
            s.handingOverTo = clientID
            s.failoverState = "failover-in-progress"
            return true
        }
        if started { readOnly.store(true, ordering: .relaxed) }
        return started
    }

    /// The hand-over ended without the replica taking over (its link broke): take writes again.
    public func abandonHandOver(_ clientID: Int64) {
        let abandoned = state.withLock { s -> Bool in
            guard s.handingOverTo == clientID else { return false }
            s.handingOverTo = nil
            s.failoverState = "no-failover"
            return s.role == .primary
        }
        if abandoned { readOnly.store(false, ordering: .relaxed) }
    }

    /// The replica has every write: this server follows it.
    public func handedOver(_ engine: Engine, host: String, port: Int) {
        state.withLock { s in
            s.handingOverTo = nil
            s.failoverState = "no-failover"
            s.promoteRequest = nil
        }
        engine.logger.notice("handed over to the replica at \(host):\(port); following it")
        follow(engine, host: host, port: port)
    }

    /// FAILOVER: the replica a feeder should tell to take over, once.
    public func takePromoteRequest(for clientID: Int64) -> Bool {
        state.withLock { s in
            guard s.promoteRequest == clientID else { return false }
            s.promoteRequest = -1
            return true
        }
    }
}

/// FAILOVER [TO host port] [TIMEOUT ms] [FORCE] | ABORT (Redis 6.2): hands this primary's role
/// to a replica without losing writes, by the same hand-over as above.
enum FailoverCommand {
    static let command = Command("failover") { call, out throws(CommandError) in
        let r = call.engine.replication
        if call.count == 2 && call[1].isKeyword("ABORT") {
            let aborted = r.state.withLock { s -> Bool in
                guard s.promoteRequest != nil, s.handingOverTo == nil else { return false }
                s.promoteRequest = nil
                s.failoverState = "no-failover"
                return true
            }
            guard aborted else { throw CommandError("ERR", "No failover in progress.") }
            out.simpleString("OK")
            return
        }
        var target: (String, Int)? = nil
        var i = 1
        while i < call.count {
            if call[i].isKeyword("TO") && i + 2 < call.count {
                target = (call.text(i + 1), Int(try call.integer(i + 2)))
                i += 3
            } else if call[i].isKeyword("TIMEOUT") && i + 1 < call.count {
                guard try call.integer(i + 1) > 0 else { throw CommandError("ERR", "FAILOVER timeout must be greater than 0") }
                i += 2
            } else if call[i].isKeyword("FORCE") {
                i += 1
            } else {
                throw .syntax
            }
        }
        guard !r.isReplica else { throw CommandError("ERR", "FAILOVER is not valid when server is a replica.") }
        let result = r.state.withLock { s -> CommandError? in
            if s.promoteRequest != nil || s.handingOverTo != nil { return CommandError("ERR", "FAILOVER already in progress.") }
            let online = s.replicas.values.filter { $0.state == "online" }.sorted { $0.acked > $1.acked }
            guard !online.isEmpty else { return CommandError("ERR", "FAILOVER requires connected replicas.") }
            let chosen: Replication.ReplicaInfo?
            if let (host, port) = target {
                chosen = online.first { $0.address == host && $0.listeningPort == port }
                guard chosen != nil else { return CommandError("ERR", "FAILOVER target HOST and PORT is not a replica.") }
            } else {
                chosen = online.first
            }
            s.promoteRequest = chosen!.clientID
            s.failoverState = "waiting-for-sync"
            return nil
        }
        if let result { throw result }
        out.simpleString("OK")
    }
}
