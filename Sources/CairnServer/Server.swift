public import CairnEngine
import Dispatch
public import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The TCP server: a listener, a fixed set of workers, the WAL sync timer, and shutdown.
///
/// Networking is plain Dispatch over non-blocking sockets: an accept source on its own queue
/// hands each new connection to a worker (round-robin); see `Worker` and `Connection`.
public final class Server: ServerHooks, @unchecked Sendable {
    public let engine: Engine
    public let logger: Logger
    public let configFilePath: String?
    private let workers: [Worker]
    private let groupCommit: GroupCommit
    private let backupSchedule: BackupSchedule
    private let control = DispatchQueue(label: "cairn.control")
    private let acceptQueue = DispatchQueue(label: "cairn.accept", qos: .userInitiated)
    private var listenFD: Int32 = -1
    private var acceptSource: (any DispatchSourceRead)?
    /// Held open to be closed when `accept` fails for want of descriptors: the freed one
    /// takes the waiting connection, which is refused, and the spare is reopened. On
    /// `acceptQueue`, as are the two below.
    private var spareFD: Int32 = -1
    /// The accept source is suspended for a moment (out of descriptors, no spare).
    private var acceptPaused = false
    /// Connections refused for want of descriptors since the last log line, and its time.
    private var refusedForDescriptors = 0
    private var lastDescriptorWarning: Int64 = 0
    private var walTimer: (any DispatchSourceTimer)?
    private var diskTimer: (any DispatchSourceTimer)?
    private var trimTimer: (any DispatchSourceTimer)?
    private var sweepTimer: (any DispatchSourceTimer)?
    private var keyspaceCountTimer: (any DispatchSourceTimer)?
    private let walQueue = DispatchQueue(label: "cairn.wal", qos: .utility)
    private let sweepQueue = DispatchQueue(label: "cairn.expiry", qos: .utility)
    /// Runs requests that would hold up a worker (`Engine.Route.long`), one at a time.
    private let longQueue = DispatchQueue(label: "cairn.long", qos: .userInitiated)
    /// Runs big collection commands below the workers' priority (one thread per core).
    private let background = BackgroundThreads(count: AvailableCores.count)
    private let nextWorker = Atomic<Int>(0)
    private let shuttingDown = Atomic<Bool>(false)
    /// Held by `withClientsPaused` for the whole pause.
    private let pausing = Mutex<Void>(())
    private let onShutdown: @Sendable (Int32) -> Void
    /// The port actually bound (differs from the configuration when it asked for port 0).
    public private(set) var port = 0

    /// - Parameters:
    ///   - workerCount: serial queues serving connections; default `io-threads`.
    ///   - onShutdown: called once the database is closed, with the exit status to use.
    public init(
        engine: Engine, configFilePath: String?, logger: Logger, workerCount: Int? = nil,
        onShutdown: @escaping @Sendable (Int32) -> Void
    ) {
        self.engine = engine
        self.logger = logger
        self.configFilePath = configFilePath
        self.onShutdown = onShutdown
        // CONFIG GET/SET/REWRITE know the server's options from here on.
        engine.register(ServerSettings.self)
        let count = workerCount ?? engine.configuration.server.ioThreads
        let groupCommit = GroupCommit(engine: engine)
        var built: [Worker] = []
        for i in 0..<count {
            built.append(Worker(index: i, engine: engine, logger: logger, groupCommit: groupCommit, longQueue: longQueue, background: background, onRemoved: {}))
        }
        workers = built
        self.groupCommit = groupCommit
        self.backupSchedule = BackupSchedule(engine: engine)
        engine.groupCommit.store(true, ordering: .relaxed)
        engine.hooks = self
    }

    /// Binds, listens and starts serving. Throws when the address cannot be bound.
    public func start() throws {
        let settings = engine.configuration.server
        let (fd, bound) = try Socket.listen(host: settings.bind, port: settings.port)
        listenFD = fd
        port = bound
        // After `port 0`, CONFIG GET port (and CONFIG REWRITE) answer the port bound.
        engine.updateExtension(ServerSettings.self) { $0.port = bound }
        spareFD = Server.openSpare()
        for w in workers { w.startIdleTimer() }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: acceptQueue)
        source.setEventHandler { [unowned self] in self.acceptAll() }
        source.setCancelHandler { Glibc.close(fd) }
        source.activate()
        acceptSource = source
        startWALTimer()
        startDiskGuard()
        startExpirySweep()
        startKeyspaceCount()
        startMemoryTrim()
        backupSchedule.start()
        replicationChanged()
        if settings.bind != "127.0.0.1" && settings.bind != "::1" && settings.bind != "localhost"
            && engine.guardrails.accessControl.anyoneWithoutPassword {
            logger.warning("WARNING: listening on \(settings.bind) with no password: anyone who can reach this port can read and change all data. Set requirepass (or give every user a password).")
        }
        if !settings.portFile.isEmpty {
            if !ConfigCommandsFile.write(settings.portFile, "\(bound)\n") {
                logger.error("could not write port file \(settings.portFile)")
            }
        }
        logger.notice("Ready to accept connections on \(settings.bind):\(bound)")
    }

    private func acceptAll() {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                if errno == EMFILE || errno == ENFILE {
                    // Level-triggered: returning with the connection still queued would bring
                    // this handler straight back (a spinning core and a flood of log lines).
                    if refuseWithSpare(errno) { continue }
                    pauseAccepting()
                }
                return
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let config = engine.configuration
            engine.stats.connectionsReceived.increment()
            if shuttingDown.load(ordering: .relaxed) {
                // As a closed listener would: no reply (it is not "max clients").
                Glibc.close(fd)
                continue
            }
            if engine.clients.count >= config.server.maxclients {
                refuse(fd)
                continue
            }
            Socket.configureClient(fd, keepalive: config.tcpKeepalive)
            let record = ClientRecord(
                id: engine.clients.makeID(), address: Socket.peerAddress(fd).text,
                localAddress: Socket.localAddress(fd).text, now: Clock.milliseconds())
            engine.clients.add(record)
            let index = nextWorker.add(1, ordering: .relaxed).oldValue % workers.count
            workers[index].adopt(fd: fd, record: record)
        }
    }

    /// Answers Redis's error and closes: the client learns why rather than waiting.
    private func refuse(_ fd: Int32) {
        engine.stats.rejectedConnections.increment()
        let message = Array("-ERR max number of clients reached\r\n".utf8)
        _ = message.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        Glibc.close(fd)
    }

    /// Out of descriptors (`code` is EMFILE or ENFILE): gives the spare descriptor's slot to
    /// the waiting connection to refuse it, then takes the spare back. False when there was
    /// no spare or nothing to accept with it.
    private func refuseWithSpare(_ code: Int32) -> Bool {
        refusedForDescriptors += 1
        let now = Clock.milliseconds()
        if now - lastDescriptorWarning >= 10_000 {
            lastDescriptorWarning = now
            logger.warning("accept: out of file descriptors (\(String(cString: strerror(code)))) with \(engine.clients.count) clients: refused \(refusedForDescriptors) connection(s) since the last warning. Lower maxclients or raise the open files limit (ulimit -n).")
            refusedForDescriptors = 0
        }
        if spareFD < 0 { spareFD = Server.openSpare() }
        guard spareFD >= 0 else { return false }
        Glibc.close(spareFD)
        let fd = accept(listenFD, nil, nil)
        if fd >= 0 {
            engine.stats.connectionsReceived.increment()
            refuse(fd)
        }
        // After the refused connection's descriptor is closed, so there is room for it.
        spareFD = Server.openSpare()
        return fd >= 0
    }

    /// Stops accepting for 100 ms, so a descriptor shortage the spare cannot cover costs a
    /// few wake-ups a second rather than a core.
    private func pauseAccepting() {
        guard let source = acceptSource, !acceptPaused, !shuttingDown.load(ordering: .relaxed) else { return }
        acceptPaused = true
        source.suspend()
        acceptQueue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
            guard acceptPaused else { return }
            acceptPaused = false
            acceptSource?.resume()
        }
    }

    private static func openSpare() -> Int32 {
        open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    /// Syncs the WAL once a second when `appendfsync everysec`, off the request path.
    private func startWALTimer() {
        let timer = DispatchSource.makeTimerSource(queue: walQueue)
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(50))
        timer.setEventHandler { [unowned self] in
            if engine.configuration.appendfsync == .everysec && !shuttingDown.load(ordering: .relaxed) {
                engine.syncWAL()
            }
        }
        timer.activate()
        walTimer = timer
    }

    /// Ten free-space checks a second (`DiskGuard.poll`), on the WAL queue: a restore pauses
    /// them with the syncs, and a check never runs during a sync. The same tick samples the
    /// statistics behind INFO's instantaneous rates.
    private func startDiskGuard() {
        let timer = DispatchSource.makeTimerSource(queue: walQueue)
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100), leeway: .milliseconds(20))
        timer.setEventHandler { [unowned self] in
            if !shuttingDown.load(ordering: .relaxed) {
                engine.diskGuard.poll(engine)
                // INFO's instantaneous rates and used_memory_peak, from ten samples a second.
                engine.sampleStatistics()
            }
        }
        timer.activate()
        diskTimer = timer
    }

    /// Every ten seconds, on the sweep's utility queue: free memory in malloc's heaps goes back
    /// to the system, so RSS follows the block cache and memtables rather than their peak.
    private func startMemoryTrim() {
        let timer = DispatchSource.makeTimerSource(queue: sweepQueue)
        timer.schedule(deadline: .now() + 10, repeating: 10, leeway: .seconds(1))
        timer.setEventHandler { [unowned self] in
            guard !shuttingDown.load(ordering: .relaxed) else { return }
            let ms = engine.releaseFreeMemory()
            if ms >= 20 { logger.info("returning free memory to the system took \(ms) ms") }
        }
        timer.activate()
        trimTimer = timer
    }

    /// Ten sweep steps a second on a utility queue, each within `active-expire-effort`'s time
    /// budget: expired keys go without blocking requests, and a database without TTLs costs
    /// nothing (a resting step returns at once).
    private func startExpirySweep() {
        let timer = DispatchSource.makeTimerSource(queue: sweepQueue)
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100), leeway: .milliseconds(20))
        timer.setEventHandler { [unowned self] in
            guard !shuttingDown.load(ordering: .relaxed) else { return }
            let effort = engine.configuration.activeExpireEffort
            engine.expirySweep.step(engine, milliseconds: ExpirySweep.stepMilliseconds(effort: effort))
        }
        timer.activate()
        sweepTimer = timer
    }

    /// INFO keyspace's count (`KeyspaceCount`), a bounded step ten times a second on the
    /// sweep's queue: a restore pauses it with the sweep, and shutdown waits for a step running.
    private func startKeyspaceCount() {
        let timer = DispatchSource.makeTimerSource(queue: sweepQueue)
        timer.schedule(deadline: .now() + .milliseconds(50), repeating: .milliseconds(100), leeway: .milliseconds(20))
        timer.setEventHandler { [unowned self] in
            guard !shuttingDown.load(ordering: .relaxed) else { return }
            engine.keyspaceCount.step(engine)
        }
        timer.activate()
        keyspaceCountTimer = timer
    }

    // MARK: ServerHooks

    public func requestShutdown() {
        shutdown()
    }

    public func infoLines(section: String) -> [(String, String)] {
        switch section {
        case "server": [("tcp_port", String(port)), ("io_workers", String(workers.count))]
        case "clients": [("maxclients", String(engine.configuration.server.maxclients))]
        default: []
        }
    }

    public func configurationChanged(_ configuration: Configuration) {
        for w in workers { w.apply(configuration) }
        var limits = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0, limits.rlim_cur != rlim_t.max,
           DescriptorBudget.needed(configuration) > Int(limits.rlim_cur) {
            logger.warning("maxclients \(configuration.server.maxclients) is more than the open files limit (\(limits.rlim_cur)) can hold with max-open-files \(configuration.maxOpenFiles): connections past the limit will be refused")
        }
    }

    /// Online restore: every worker queue, the WAL sync timer, the expiry sweep and the group
    /// commit syncer each run a block that waits, so no command or background job touches the
    /// database while `body` swaps it. Requests that arrive meanwhile wait in their sockets.
    /// Must not be called from one of those queues (deferred work runs on a global queue).
    /// One pause at a time: two callers (two replicas' first connections, a full sync and a
    /// restore) would each hold some queues while waiting for the others' forever.
    public func withClientsPaused(_ body: ([Session]) -> Void) {
        pausing.withLock { _ in pauseClients(body) }
    }

    private func pauseClients(_ body: ([Session]) -> Void) {
        let queues = workers.map(\.queue) + [walQueue, sweepQueue, longQueue, groupCommit.queue]
        let entered = DispatchGroup()
        let resume = DispatchSemaphore(value: 0)
        for q in queues {
            entered.enter()
            q.async {
                entered.leave()
                resume.wait()
            }
        }
        entered.wait()
        logger.notice("clients paused")
        body(workers.flatMap { $0.sessionsWhilePaused() })
        for _ in queues { resume.signal() }
        logger.notice("clients resumed")
    }

    /// Starts a link to the primary for the current generation; older links see the generation
    /// change and end by themselves.
    public func replicationChanged() {
        guard !shuttingDown.load(ordering: .relaxed), engine.replication.isReplica else { return }
        PrimaryLink(engine: engine, logger: logger, generation: engine.replication.generation).start()
    }

    public func runInBackground(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global(qos: .utility).async(execute: work)
    }

    /// Stops accepting, finishes pending replies (up to a second), closes the database, then
    /// calls `onShutdown` with 0 (or 1 when closing the database failed). Idempotent.
    public func shutdown() {
        guard !shuttingDown.exchange(true, ordering: .relaxed) else { return }
        control.async { [self] in
            logger.notice("shutting down: no new connections, finishing replies")
            // A running script would hold the long queue forever: it stops, leaving nothing.
            engine.stopScripts()
            acceptQueue.sync {
                acceptSource?.cancel()
                // A suspended source runs its cancel handler (closing the listener) once resumed.
                if acceptPaused {
                    acceptPaused = false
                    acceptSource?.resume()
                }
                if spareFD >= 0 { Glibc.close(spareFD) }
                spareFD = -1
            }
            let deadline = DispatchTime.now() + .milliseconds(900)
            for w in workers { w.queue.sync { w.closeAll(deadline: deadline) } }
            walTimer?.cancel()
            diskTimer?.cancel()
            trimTimer?.cancel()
            sweepTimer?.cancel()
            keyspaceCountTimer?.cancel()
            backupSchedule.cancel()
            // Wait for a WAL sync or sweep step already running (their queues are serial).
            walQueue.sync {}
            sweepQueue.sync {}
            longQueue.sync {}
            // Replication threads stop touching the database (a batch being applied finishes).
            engine.replication.stop()
            var status: Int32 = 0
            do {
                try engine.close()
                logger.notice("database closed; bye")
            } catch {
                logger.error("closing the database failed: \(error)")
                status = 1
            }
            onShutdown(status)
        }
    }
}

/// Small file helper for the port file.
enum ConfigCommandsFile {
    static func write(_ path: String, _ text: String) -> Bool {
        guard let f = fopen(path, "w") else { return false }
        let bytes = Array(text.utf8)
        let ok = fwrite(bytes, 1, bytes.count, f) == bytes.count
        fclose(f)
        return ok
    }
}
