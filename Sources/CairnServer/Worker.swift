import CairnEngine
import Dispatch
import Logging
import RESP

/// One serial queue and the connections it serves.
///
/// The server keeps a small fixed set of workers (one per core by default) and gives each new
/// connection to one of them in turn, so a request never hops queues: it is read, run and
/// answered on its connection's worker. The worker's sockets share one `Poller`, so one
/// Dispatch wake-up serves every client that is ready.
///
/// `@unchecked Sendable`: mutable state (`connections`, `limits`) is touched only on `queue`.
final class Worker: @unchecked Sendable {
    let queue: DispatchQueue
    let engine: Engine
    let logger: Logger
    var limits: Limits
    /// Scratch buffer for `recv`, shared by this worker's connections (they run one at a time).
    let readBuffer: UnsafeMutableBufferPointer<UInt8>
    /// Open connections by socket descriptor (the key the poller reports).
    private var connections: [Int32: Connection] = [:]
    private(set) var poller: Poller! = nil
    private var idleTimer: (any DispatchSourceTimer)?
    let onRemoved: @Sendable () -> Void
    /// Syncs the WAL for replies held under `appendfsync always`.
    let groupCommit: GroupCommit
    /// Where requests that would hold up this worker run (`Engine.Route.long`), shared by all.
    let longQueue: DispatchQueue
    /// Where big collection commands run, below the workers' priority, shared by all.
    let background: BackgroundThreads

    /// Most bytes read from one client per read event, so one busy client cannot starve the rest.
    static let readBudget = 1 << 20

    struct Limits {
        var queryBufferLimit: Int
        var outputBufferLimit: Int
        var pubsubOutputLimit: Int
        var idleTimeoutSeconds: Int
        var resp: RESPLimits

        init(_ c: Configuration) {
            queryBufferLimit = c.clientQueryBufferLimit
            outputBufferLimit = c.clientOutputBufferLimit
            pubsubOutputLimit = c.clientOutputBufferLimitPubsub
            idleTimeoutSeconds = c.timeout
            resp = RESPLimits()
            resp.maxBulkLength = c.protoMaxBulkLen
            resp.maxMultibulkCount = c.maxArgs
        }
    }

    init(
        index: Int, engine: Engine, logger: Logger, groupCommit: GroupCommit, longQueue: DispatchQueue,
        background: BackgroundThreads, onRemoved: @escaping @Sendable () -> Void
    ) {
        self.groupCommit = groupCommit
        self.longQueue = longQueue
        self.background = background
        self.queue = DispatchQueue(label: "cairn.worker.\(index)", qos: .userInitiated)
        self.engine = engine
        self.logger = logger
        self.limits = Limits(engine.configuration)
        self.readBuffer = .allocate(capacity: 64 * 1024)
        self.onRemoved = onRemoved
        // The worker lives as long as the server, so strong captures are fine.
        self.poller = Poller(
            queue: queue,
            ready: { [self] fd, events in
                collecting = true
                connections[fd]?.ready(events)
            },
            roundEnded: { [self] in finishRound() })
    }

    // MARK: the writes of many connections, one batch

    /// Writes connections staged since the last batch, in the order they were staged.
    private var staged: [(connection: Connection, requests: [[[UInt8]]], commands: [Engine.Admitted])] = []
    /// A batch of the staged writes is coming: the poller's round is running, or one is queued.
    private var collecting = false

    /// Takes a connection's consecutive writes (SET, INCR, HSET, LPUSH, ZADD...: `Grouping.batched`),
    /// to be run with those of every other connection served in the same poller round, each by
    /// its own handler, as one transaction and one write (`Engine.executeBatched`): at one
    /// request per client, as redis-benchmark sends, one RocksDB write (one WAL append, one
    /// memtable insert group) answers a whole round of clients instead of one each, and
    /// clients sending to one hash take its lock once per round. The connection runs nothing
    /// more until they are written.
    func stage(_ requests: [[[UInt8]]], _ commands: [Engine.Admitted], from connection: Connection) {
        staged.append((connection, requests, commands))
        if !collecting {
            // Staged outside a poller round (a write drained, a sync or deferred reply came back);
            // posted, so a poller drain waiting for sockets gives the queue to it at once.
            collecting = true
            post { [self] in finishRound() }
        }
    }

    /// Runs every staged write as one batch and answers them; connections that go on may stage
    /// more, which run in turn.
    private func finishRound() {
        while !staged.isEmpty {
            let batch = staged
            staged = []
            let done = engine.executeBatched(batch.map {
                Engine.BatchedRun(
                    session: $0.connection.session, requests: $0.requests, admitted: $0.commands, version: $0.connection.session.protocolVersion)
            })
            for (s, d) in zip(batch, done) { s.connection.stagedWritesDone(d.reply, d.outcome) }
        }
        collecting = false
    }

    deinit { readBuffer.deallocate() }

    /// Runs `block` on this worker's queue, from any thread: what other threads hand a worker
    /// (replies computed elsewhere, wake-ups, new connections) goes through here, so a poller
    /// waiting for sockets gives the queue to it at once (`Poller.post`).
    func post(_ block: @escaping @Sendable () -> Void) {
        poller.post(block)
    }

    /// Takes a freshly accepted socket (called on any thread).
    func adopt(fd: Int32, record: ClientRecord) {
        post { [self] in
            let session = engine.makeSession(record: record, canDefer: true)
            let connection = Connection(fd: fd, worker: self, session: session, limits: limits.resp)
            connections[fd] = connection
            record.setKillHandler { [weak self, weak connection] in
                self?.post { [weak connection] in connection?.close() }
            }
            connection.start()
        }
    }

    /// Called by a connection once its descriptor is closed.
    func removed(_ connection: Connection) {
        connections.removeValue(forKey: connection.fd)
        onRemoved()
    }

    func startIdleTimer() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [unowned self] in
            // Snapshots past their age and idle iterators go, even on busy connections.
            for c in connections.values where !c.isClosed { engine.reclaimIdle(c.session) }
            let timeout = limits.idleTimeoutSeconds
            guard timeout > 0 else { return }
            let limit = UInt64(timeout) * 1_000_000_000
            for c in connections.values where c.idleNanoseconds > limit && !c.session.inTransaction && c.parked == nil {
                logger.info("closing idle client \(c.session.id) (\(c.session.record.address)) after \(timeout)s")
                c.close()
            }
        }
        timer.activate()
        idleTimer = timer
    }

    func apply(_ configuration: Configuration) {
        post { [self] in limits = Limits(configuration) }
    }

    /// The sessions of open connections; only while the queue is paused (online restore).
    func sessionsWhilePaused() -> [Session] {
        connections.values.filter { !$0.isClosed }.map(\.session)
    }

    /// Shutdown: flush every connection (for at most `deadline`) and close it. Runs on `queue`.
    func closeAll(deadline: DispatchTime) {
        idleTimer?.cancel()
        for c in connections.values { c.drainAndClose(deadline: deadline) }
        poller.cancel()
    }
}
