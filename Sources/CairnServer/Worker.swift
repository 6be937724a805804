import CairnEngine
import Dispatch
import Logging
import RESP

/// One serial queue and the connections it serves.
///
/// The server keeps a small fixed set of workers (one per core by default) and gives each new
/// connection to one of them in turn, so a request never hops queues: it is read, run and
/// answered on its connection's worker.
///
/// `@unchecked Sendable`: mutable state (`connections`, `limits`) is touched only on `queue`.
final class Worker: @unchecked Sendable {
    let queue: DispatchQueue
    let engine: Engine
    let logger: Logger
    var limits: Limits
    /// Scratch buffer for `recv`, shared by this worker's connections (they run one at a time).
    let readBuffer: UnsafeMutableBufferPointer<UInt8>
    private var connections: [ObjectIdentifier: Connection] = [:]
    private var idleTimer: (any DispatchSourceTimer)?
    let onRemoved: @Sendable () -> Void
    /// Syncs the WAL for replies held under `appendfsync always`.
    let groupCommit: GroupCommit

    /// Most bytes read from one client per read event, so one busy client cannot starve the rest.
    static let readBudget = 1 << 20

    struct Limits {
        var queryBufferLimit: Int
        var outputBufferLimit: Int
        var idleTimeoutSeconds: Int
        var resp: RESPLimits

        init(_ c: Configuration) {
            queryBufferLimit = c.clientQueryBufferLimit
            outputBufferLimit = c.clientOutputBufferLimit
            idleTimeoutSeconds = c.timeout
            resp = RESPLimits()
            resp.maxBulkLength = c.protoMaxBulkLen
            resp.maxMultibulkCount = c.maxArgs
        }
    }

    init(index: Int, engine: Engine, logger: Logger, groupCommit: GroupCommit, onRemoved: @escaping @Sendable () -> Void) {
        self.groupCommit = groupCommit
        self.queue = DispatchQueue(label: "cairn.worker.\(index)", qos: .userInitiated)
        self.engine = engine
        self.logger = logger
        self.limits = Limits(engine.configuration)
        self.readBuffer = .allocate(capacity: 64 * 1024)
        self.onRemoved = onRemoved
    }

    deinit { readBuffer.deallocate() }

    /// Takes a freshly accepted socket (called on any thread).
    func adopt(fd: Int32, record: ClientRecord) {
        queue.async { [self] in
            let session = engine.makeSession(record: record)
            session.canDefer = true
            let connection = Connection(fd: fd, worker: self, session: session, limits: limits.resp)
            connections[ObjectIdentifier(connection)] = connection
            let id = ObjectIdentifier(connection)
            // The worker lives as long as the server, so a strong capture is fine.
            record.setKillHandler { [self] in
                queue.async { self.connections[id]?.close() }
            }
            connection.start()
        }
    }

    /// Called by a connection once its descriptor is closed.
    func removed(_ connection: Connection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
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
            for c in connections.values where c.idleNanoseconds > limit && !c.session.inTransaction {
                logger.info("closing idle client \(c.session.id) (\(c.session.record.address)) after \(timeout)s")
                c.close()
            }
        }
        timer.activate()
        idleTimer = timer
    }

    func apply(_ configuration: Configuration) {
        queue.async { [self] in limits = Limits(configuration) }
    }

    /// The sessions of open connections; only while the queue is paused (online restore).
    func sessionsWhilePaused() -> [Session] {
        connections.values.filter { !$0.isClosed }.map(\.session)
    }

    /// Shutdown: flush every connection (for at most `deadline`) and close it. Runs on `queue`.
    func closeAll(deadline: DispatchTime) {
        idleTimer?.cancel()
        for c in connections.values { c.drainAndClose(deadline: deadline) }
    }
}
