import Dispatch
import Rocks

/// What PSYNC decided for a connection that becomes a replica's stream.
public struct ReplicaHandOff: Sendable {
    /// A full sync (a checkpoint, then the WAL from the sequence the replica reports after
    /// switching it in); otherwise the WAL from `from`.
    public let full: Bool
    public let from: UInt64
    /// The replication id the replica is told.
    public let id: String
    public let listeningPort: Int
    public let announcedIP: String
}

extension Engine {
    /// This server's replication offset: its latest sequence number.
    public var replicationOffset: UInt64 { database.latestSequenceNumber }
}

/// What the server's replication threads report and ask: the primary's feeders
/// (CairnServer/ReplicaFeeder.swift) and a replica's link (CairnServer/PrimaryLink.swift).
extension Replication {
    // MARK: primary side

    public func replicaConnected(_ info: ReplicaInfo) {
        state.withLock { $0.replicas[info.clientID] = info }
    }

    public func replicaState(_ clientID: Int64, _ text: String) {
        state.withLock { $0.replicas[clientID]?.state = text }
    }

    public func replicaDisconnected(_ clientID: Int64) {
        _ = state.withLock { $0.replicas.removeValue(forKey: clientID) }
    }

    /// A replica reported it applied everything up to `sequence`: wakes WAITs it satisfies.
    public func acked(_ clientID: Int64, _ sequence: UInt64) {
        let acks: [UInt64] = state.withLock { s in
            s.replicas[clientID]?.acked = sequence
            s.replicas[clientID]?.lastAck = Clock.milliseconds()
            return s.replicas.values.map(\.acked)
        }
        waiters.withLock { list in
            list.removeAll { w in
                guard acks.filter({ $0 >= w.target }).count >= w.needed else { return false }
                w.semaphore.signal()
                return true
            }
        }
    }

    /// How many replicas acknowledged `sequence` or later.
    func replicasAcknowledging(_ sequence: UInt64) -> Int {
        state.withLock { $0.replicas.values.filter { $0.acked >= sequence }.count }
    }

    /// Feeders compare this with the value they started with: a change ends their stream.
    public var feedGeneration: Int { state.withLock { $0.feedGeneration } }

    // MARK: replica side
    //
    // A link belongs to one generation. REPLICAOF (another primary, or NO ONE) starts a new
    // one at once, while the old link's thread may still be in a handshake, a full sync or
    // between frames for a while: everything a link reports or changes names its generation,
    // and an ended generation's link changes nothing (see `linkGate`). Otherwise it would, on
    // its way out, mark the new link down for good, or apply an old primary's batches.

    /// The primary to follow, while `generation` is current.
    public func target(ifGeneration generation: Int) -> (host: String, port: Int)? {
        state.withLock { s in
            guard s.generation == generation, case .replica(let host, let port) = s.role else { return nil }
            return (host, port)
        }
    }

    /// Changes the link's state only while `generation` is current.
    private func updateLink(_ generation: Int, _ body: (inout State) -> Void) {
        state.withLock { s in
            if s.generation == generation { body(&s) }
        }
    }

    public func noteLink(up: Bool, generation: Int) {
        updateLink(generation) { s in
            if s.linkUp && !up { s.linkDownSince = Clock.milliseconds() }
            s.linkUp = up
            if up { s.lastIO = Clock.milliseconds() }
        }
    }

    public func noteIO(generation: Int) { updateLink(generation) { $0.lastIO = Clock.milliseconds() } }

    public func noteSync(inProgress: Bool, bytes: Int = 0, generation: Int) {
        updateLink(generation) { s in
            s.syncInProgress = inProgress
            s.syncBytesReceived = bytes
        }
    }

    public func noteSyncFailure(_ reason: String, generation: Int) { updateLink(generation) { $0.lastSyncFailure = reason } }

    /// The id to ask to continue (`?` when this replica must sync in full).
    public func psyncID(latest: UInt64) -> String {
        state.withLock { s in
            if s.mustSyncInFull { return "?" }
            // Promoted (or restarted as a primary) and nothing written since: still a prefix
            // of the history it left.
            if s.secondID != Replication.noID && latest == s.secondOffset { return s.secondID }
            return s.id
        }
    }

    /// After a failed batch: the next sync is a full one.
    public func requireFullSync(generation: Int) { updateLink(generation) { $0.mustSyncInFull = true } }

    /// `+CONTINUE id`: the primary's history goes on. Under a new id (the primary was promoted
    /// from a replica, or this server asked by its second id), this server's history up to
    /// `latest` is still a prefix of it: the id it had stays valid that far (`secondID`), and
    /// its own replicas reconnect to learn the new one, as Redis's PSYNC2 does, so that they
    /// and a later PSYNC by the old id continue partially.
    public func continued(primaryID: String, latest: UInt64, dir: String, generation: Int) {
        var changed = false
        updateLink(generation) { s in
            guard s.id != primaryID else { return }
            s.secondID = s.id
            s.secondOffset = latest
            s.id = primaryID
            s.feedGeneration += 1
            changed = true
        }
        if changed { save(dir: dir, cleanAt: nil) }
    }

    /// After a full sync switched in.
    public func fullSyncDone(generation: Int) { updateLink(generation) { $0.mustSyncInFull = false } }
}
