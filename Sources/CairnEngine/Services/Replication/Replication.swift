import Dispatch
import Synchronization
import Rocks
#if canImport(Glibc)
import Glibc
#endif

/// This server's part in replication: primary or replica, its replication id, the replicas
/// connected to it, the link to its primary, and the counters INFO reports.
///
/// Offsets are RocksDB sequence numbers. A replica starts from a checkpoint of its primary and
/// then writes the primary's WAL batches as they are (`BatchApplier`), so after each batch both
/// databases have the same latest sequence number: that number is the replication offset, and
/// a replica's offset survives a crash with its data (both are in its WAL).
///
/// The replication id names a history of writes. A replica keeps its primary's (in the file
/// `REPLICATION` in the data directory), so after a restart it asks to continue that history.
/// A primary reuses its id after a clean shutdown only: after a crash it may have lost writes
/// its replicas have, so it starts a new history and they resynchronise in full. A promoted
/// replica starts a new id and keeps the old one (`secondID`) up to its offset, so the other
/// replicas of the old primary continue with a partial sync, as Redis's PSYNC2.
public final class Replication: Sendable {
    public enum Role: Equatable, Sendable {
        case primary
        case replica(host: String, port: Int)
    }

    /// One replica connected to this server.
    public struct ReplicaInfo: Sendable {
        public var clientID: Int64
        public var address: String
        public var listeningPort: Int
        /// `wait_bgsave` (checkpoint being made), `send_bulk` (files streaming), `online`.
        public var state: String
        /// The last sequence number it reported applied.
        public var acked: UInt64
        /// When it last reported (Unix ms).
        public var lastAck: Int64
        public init(clientID: Int64, address: String, listeningPort: Int, state: String, acked: UInt64, lastAck: Int64) {
            self.clientID = clientID
            self.address = address
            self.listeningPort = listeningPort
            self.state = state
            self.acked = acked
            self.lastAck = lastAck
        }
    }

    struct State {
        var role: Role = .primary
        var id: String
        var secondID = Replication.noID
        /// `secondID` names this history up to this sequence number.
        var secondOffset: UInt64 = 0
        /// Bumped when the role or the primary changes: the link of an older generation stops.
        var generation = 0
        // The link to the primary (replica role).
        var linkUp = false
        var lastIO: Int64 = 0
        var syncInProgress = false
        var syncBytesReceived = 0
        var lastSyncFailure = ""
        var linkDownSince: Int64 = 0
        // Counters (primary role), as INFO stats.
        var syncFull = 0
        var syncPartialOK = 0
        var syncPartialErr = 0
        var replicas: [Int64: ReplicaInfo] = [:]
        /// Replicas must reconnect when this changes (the history they follow ended).
        var feedGeneration = 0
        /// `FAILOVER`'s progress, INFO's `master_failover_state`.
        var failoverState = "no-failover"
        var checkpointCounter = 0
        /// A batch failed to apply: ask for a full sync next time rather than loop.
        var mustSyncInFull = false
        // A hand-over (Takeover.swift).
        var takeoverWanted = false
        var takeoverDone: DispatchSemaphore? = nil
        var handingOverTo: Int64? = nil
        /// FAILOVER chose this replica (-1 once told).
        var promoteRequest: Int64? = nil
    }

    /// Redis's id for "none".
    static let noID = String(repeating: "0", count: 40)

    let state: Mutex<State>
    /// This server takes part in replication, so its WAL is kept for replicas (`keepsWAL`).
    let walWanted = Atomic<Bool>(false)
    /// Whether writes from clients are refused (`-READONLY`): a replica with `replica-read-only`.
    let readOnly = Atomic<Bool>(false)
    /// WAIT's callers, woken when a replica acknowledges.
    let waiters = Mutex<[Waiter]>([])
    /// Serialises the WAL readers of every replica with a database swap (`WALFeed`).
    let feedLock = Mutex<[ObjectIdentifier: WALFeed]>([:])

    final class Waiter: Sendable {
        let target: UInt64
        let needed: Int
        let semaphore = DispatchSemaphore(value: 0)
        init(target: UInt64, needed: Int) {
            self.target = target
            self.needed = needed
        }
    }

    init() {
        state = Mutex(State(id: Replication.newID()))
    }

    /// 40 random hex digits.
    static func newID() -> String {
        var bytes = [UInt8](repeating: 0, count: 20)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        return bytes.map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    public var role: Role { state.withLock { $0.role } }
    public var generation: Int { state.withLock { $0.generation } }
    public var isReplica: Bool { role != .primary }
    public var replicationID: String { state.withLock { $0.id } }
    /// Held while a batch is applied; true once the server stops (no batch is applied after).
    let applyGate = Mutex<Bool>(false)
    /// Held while a link to a primary changes the database (applies a batch, swaps in a full
    /// sync's copy) after checking that its generation is current, and while REPLICAOF changes
    /// the generation: a link whose generation ended (a new primary, or a promotion) never
    /// writes after the change, though its thread may take a while to notice and end.
    /// Taken before `applyGate`, and inside a clients' pause, never around one.
    let linkGate = Mutex<Void>(())
    private let stopped = Atomic<Bool>(false)

    public var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// At shutdown, before the database closes: no more batches are applied or WAL read.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        applyGate.withLock { $0 = true }
        feedLock.withLock { feeds in endFeeds(feeds) }
    }

    /// Runs `body` (which closes and replaces the database) while no batch is being applied and
    /// no replica's feed reads the WAL or makes a checkpoint; every feed ends (its replica
    /// reconnects), its WAL iterator freed while the old database is still open.
    func excludingReplication<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try applyGate.withLock { (_: inout Bool) throws(E) -> R in
            try feedLock.withLock { (feeds: inout [ObjectIdentifier: WALFeed]) throws(E) -> R in
                endFeeds(feeds)
                return try body()
            }
        }
    }

    private func endFeeds(_ feeds: [ObjectIdentifier: WALFeed]) {
        for feed in feeds.values { feed.end() }
        state.withLock { $0.feedGeneration += 1 }
    }

    // MARK: the REPLICATION file

    static func filePath(_ dir: String) -> String { dir + "/REPLICATION" }

    /// At start: takes the saved history when this server may continue it. A replica's data
    /// is always a prefix of its primary's history, so a replica keeps the id (and one that now
    /// starts as a primary keeps it as the second id, as after a promotion). A primary keeps
    /// its id only after a clean shutdown at exactly `latest`. Then the file is marked as in
    /// use, so a crash from now on is seen as one at the next start.
    func load(dir: String, latest: UInt64, role: Role) {
        var saved: String? = nil
        var cleanAt: UInt64? = nil
        var wasReplica = false
        if let bytes = readFile(Replication.filePath(dir)) {
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                let words = line.split(separator: " ")
                guard words.count == 2 else { continue }
                if words[0] == "id", words[1].utf8.count == 40 { saved = String(words[1]) }
                if words[0] == "clean-at" { cleanAt = UInt64(words[1]) }
                if words[0] == "role" { wasReplica = words[1] == "replica" }
                if words[0] == "keep-wal" && words[1] == "yes" { walWanted.store(true, ordering: .relaxed) }
            }
        }
        state.withLock { s in
            s.role = role
            guard let saved else { return }
            if role != .primary && wasReplica {
                s.id = saved
            } else if wasReplica {
                s.secondID = saved
                s.secondOffset = latest
            } else if cleanAt == latest {
                s.id = saved
            }
        }
        save(dir: dir, cleanAt: nil)
    }

    /// Writes the id and the role (and, at a clean shutdown, the sequence number it ends at).
    func save(dir: String, cleanAt: UInt64?) {
        let (id, replica) = state.withLock { ($0.id, $0.role != .primary) }
        var text = "id \(id)\nrole \(replica ? "replica" : "primary")\n"
        if walWanted.load(ordering: .relaxed) { text += "keep-wal yes\n" }
        if let cleanAt { text += "clean-at \(cleanAt)\n" }
        _ = writeFileAtomically(Replication.filePath(dir), text)
    }

    /// Whether the database in `dir` is opened keeping its flushed WAL (`repl-backlog-ttl`,
    /// `repl-backlog-size`): once a server has had a replica or followed a primary (recorded in
    /// the REPLICATION file). A server that never replicates keeps none, so it costs no disk.
    static func keepsWAL(dir: String, configuration: Configuration) -> Bool {
        if !configuration.replicaof.isEmpty { return true }
        guard let bytes = readFile(filePath(dir)) else { return false }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").contains("keep-wal yes")
    }

    /// Before a replica is fed: from now on the WAL is kept for replicas. The first time, the
    /// database is reopened with the WAL kept (clients wait a moment), since RocksDB sets that
    /// only at open.
    public func keepWAL(_ engine: Engine) {
        guard !walWanted.exchange(true, ordering: .relaxed) || !engine.walKept.load(ordering: .relaxed) else { return }
        save(dir: engine.configuration.dir, cleanAt: nil)
        guard !engine.walKept.load(ordering: .relaxed), let hooks = engine.hooks else { return }
        engine.logger.notice("a replica connected: reopening the database to keep its WAL for replicas (repl-backlog-ttl \(engine.configuration.replBacklogTTL) s, repl-backlog-size \(engine.configuration.replBacklogSize >> 20) MB)")
        hooks.withClientsPaused { sessions in
            // Another replica's feeder may have reopened it while this one waited for the pause.
            guard !engine.walKept.load(ordering: .relaxed) else { return }
            _ = engine.reopenForWriting(sessions: sessions, why: "keeping the WAL for replicas")
        }
    }

    /// `replicaof`'s `host port`, or nil for none.
    static func parseTarget(_ text: String) -> (String, Int)? {
        let words = text.split(separator: " ")
        guard words.count == 2, let port = Int(words[1]) else { return nil }
        return (String(words[0]), port)
    }
}
