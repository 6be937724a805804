import CairnEngine
import Dispatch
import Logging
import RESP
#if canImport(Glibc)
import Glibc
#endif

/// One client connection: its socket, and the state machine that decides what to do with it.
///
/// Everything here runs on the owning worker's serial queue, so requests of one client run in
/// order and replies go out in order. A read event reads what is available (at most
/// `Worker.readBudget`, so one client cannot starve the others) and hands it to the state
/// machine (ConnectionStateMachine.swift), which holds the rules: which requests run now and
/// how (alone, grouped, off the worker), which replies may be sent, when to wait and when to
/// close. This class carries out its actions: it runs requests through the engine, sends
/// bytes, and reports back what happened (`drive`).
///
/// `@unchecked Sendable`: confined to `worker.queue` (checked with `dispatchPrecondition` in
/// debug builds); the kill handler only enqueues onto that queue.
final class Connection: @unchecked Sendable {
    let fd: Int32
    let worker: Worker
    let session: Session
    var machine: ConnectionStateMachine
    private var writing = false
    private(set) var closed = false
    var lastActivity: UInt64
    /// A blocking pop waiting for an element; see Connection+Parking.swift.
    var parked: BlockRequest? = nil
    /// Ends `parked` with the timeout reply when its time is up.
    var parkTimer: (any DispatchSourceTimer)? = nil

    init(fd: Int32, worker: Worker, session: Session, limits: RESPLimits) {
        self.fd = fd
        self.worker = worker
        self.session = session
        self.machine = ConnectionStateMachine(limits: limits)
        self.lastActivity = DispatchTime.now().uptimeNanoseconds
    }

    func start() {
        let worker = worker
        session.subscriber = Subscriber(id: session.id, version: session.protocolVersion) { [weak self] bytes in
            guard let connection = self else { return }
            worker.post { connection.push(bytes) }
        }
        if !worker.poller.add(fd) {
            worker.logger.error("cannot watch client \(session.id)'s socket: \(String(cString: strerror(errno)))")
            close()
        }
    }

    /// A pub/sub message for this client, published by any connection: it goes after the
    /// replies already buffered. A subscriber that does not read is disconnected once
    /// `client-output-buffer-limit pubsub` is pending, so publishers never wait for it.
    private func push(_ bytes: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed else { return }
        machine.output.bytes.append(contentsOf: bytes)
        drive()
    }

    // MARK: events

    /// The poller found the socket ready (`EPOLLIN`, `EPOLLOUT`, hang-up or error bits).
    func ready(_ events: UInt32) {
        if events & Poller.writableBit != 0 { writable() }
        if events & ~Poller.writableBit != 0 { readable() }
    }

    private func readable() {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed else { return }
        var total = 0
        let buffer = worker.readBuffer
        while total < Worker.readBudget {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 {
                total += n
                guard machine.bytesRead(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n), queryLimit: worker.limits.queryBufferLimit) else {
                    worker.logger.warning("closing client \(session.id) (\(session.record.address)): query buffer over client-query-buffer-limit")
                    close()
                    return
                }
                if n < buffer.count { break }
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                machine.peerClosed()
                break
            }
        }
        if total > 0 {
            worker.engine.stats.netInputBytes.increment(by: total)
            lastActivity = DispatchTime.now().uptimeNanoseconds
        }
        drive()
    }

    private func writable() {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed else { return }
        machine.writable()
        drive()
    }

    /// Carries out the state machine's actions until it waits for an event.
    func drive() {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        let engine = worker.engine
        while !closed {
            let context = ConnectionStateMachine.Context(
                authenticated: session.authenticated, subscribed: session.subscriptionCount > 0,
                outputLimit: worker.limits.outputBufferLimit, pubsubOutputLimit: worker.limits.pubsubOutputLimit)
            let action = machine.next(context) { argv in Connection.step(engine.admit(argv, session: session)) }
            machine.output.version = session.protocolVersion
            switch action {
            case .run(let argv, let admitted):
                let start = machine.position
                let outcome = engine.execute(argv, session: session, out: &machine.output, admitted: admitted)
                if !carryOut(outcome, from: start) { return }
            case .stage(let writes, let commands):
                worker.stage(writes, commands, from: self)
            case .read(let gets, let stopPast):
                let answered = engine.executePlainGets(gets, session: session, out: &machine.output, stopPast: stopPast)
                machine.readDone(answered: answered)
            case .runLong(let argv, let admitted):
                startLong(argv, admitted: admitted)
            case .requestSync:
                let worker = worker
                worker.groupCommit.request { [self] ok in
                    worker.post { self.syncDone(ok) }
                }
            case .send:
                send()
            case .protocolError(let message):
                worker.logger.info("protocol error from client \(session.id) (\(session.record.address)): \(message)")
            case .retryAfter(let milliseconds):
                retryAfterPause(milliseconds)
            case .close(let reason):
                if let reason { worker.logger.warning("closing client \(session.id) (\(session.record.address)): \(reason)") }
                close()
            case .wait:
                setWriting(machine.wantsWritable)
                return
            }
        }
    }

    static func step(_ admission: Engine.Admission) -> ConnectionStateMachine.Step {
        switch admission.route {
        case .alone: .alone(admission.admitted)
        case .long: .long(admission.admitted)
        case .grouped(let kind):
            // A grouped request always passed the door; without its command it runs alone.
            if let admitted = admission.admitted { .grouped(kind, admitted) } else { .alone(nil) }
        case .paused(let milliseconds): .paused(milliseconds: milliseconds)
        }
    }

    /// Does what a request's outcome asks beyond its reply and tells the machine. Returns false
    /// when the connection is no longer this object's to drive (handed to a replica feeder).
    @discardableResult
    func carryOut(_ outcome: Outcome, from replyStart: Int) -> Bool {
        var ran = ConnectionStateMachine.Ran(
            holdsForSync: outcome.wroteToWAL && worker.engine.repliesWaitForSync, closeAfterReply: outcome.closeAfterReply)
        if outcome.startsMonitoring { startMonitoring() }
        if let handOff = outcome.replicaHandOff {
            becomeReplicaStream(handOff)
            return false
        }
        if let work = outcome.deferred {
            ran.waits = .deferred
            machine.ran(ran, from: replyStart)
            startDeferred(work, inBackground: outcome.runsInBackground)
        } else if let request = outcome.blocked {
            ran.waits = .parked
            machine.ran(ran, from: replyStart)
            park(request)
        } else {
            machine.ran(ran, from: replyStart)
        }
        return true
    }

    /// The worker ran the writes this connection staged: append their replies and go on. A
    /// request that ran alone may have left its work to run off the worker (a big collection:
    /// `Outcome.deferred`); its reply comes when that is done.
    func stagedWritesDone(_ reply: [UInt8], _ outcome: Outcome) {
        guard !closed else { return }
        let start = machine.position
        machine.output.bytes.append(contentsOf: reply)
        var ran = ConnectionStateMachine.Ran(holdsForSync: outcome.wroteToWAL && worker.engine.repliesWaitForSync)
        if let work = outcome.deferred {
            ran.waits = .deferred
            machine.stagedWritesDone(ran, from: start)
            startDeferred(work, inBackground: outcome.runsInBackground)
        } else {
            machine.stagedWritesDone(ran, from: start)
        }
        drive()
    }

    /// The replies a WAL sync waited for are durable (or the sync failed: then the client is
    /// closed rather than told its writes are safe).
    private func syncDone(_ ok: Bool) {
        guard !closed else { return }
        machine.syncDone(ok: ok)
        drive()
    }

    /// Runs deferred work off the worker: on Dispatch's pool, or for a big collection command
    /// on the server's lower-priority threads (`BackgroundThreads`).
    private func startDeferred(_ work: @escaping Outcome.DeferredReply, inBackground: Bool = false) {
        let version = session.protocolVersion
        let worker = worker
        let job: @Sendable () -> Void = { [self] in
            var reply = RESPWriter(version: version, capacity: 256)
            work(&reply)
            let bytes = reply.bytes
            worker.post { self.finishDeferred(bytes, Outcome()) }
        }
        if inBackground { worker.background.run(job) } else { DispatchQueue.global(qos: .utility).async(execute: job) }
    }

    /// Runs a request that would hold up the worker (`Engine.Route.long`) on the server's long
    /// queue instead: the other clients of this worker go on; this one waits for its reply, as
    /// for deferred work. The session is left to that queue meanwhile (nothing here touches it
    /// until `finishDeferred`, and a close waits for it, see `close`); the long queue is paused
    /// with the workers during a restore and drained before the database closes.
    private func startLong(_ argv: [[UInt8]], admitted: Engine.Admitted?) {
        let version = session.protocolVersion
        let worker = worker
        let engine = worker.engine
        worker.longQueue.async { [self] in
            var reply = RESPWriter(version: version, capacity: 256)
            var outcome = engine.execute(argv, session: session, out: &reply, admitted: admitted)
            if let work = outcome.deferred {
                outcome.deferred = nil
                work(&reply)
            }
            let bytes = reply.bytes
            let ran = outcome
            worker.post { self.finishDeferred(bytes, ran) }
        }
    }

    private func finishDeferred(_ reply: [UInt8], _ outcome: Outcome) {
        guard !closed else {
            // Closed while the work ran: release what the session holds now that nothing uses it.
            worker.engine.connectionClosed(session)
            return
        }
        let start = machine.position
        machine.output.bytes.append(contentsOf: reply)
        // What a long request asked besides (a write to sync, a blocking pop to park...).
        var ran = ConnectionStateMachine.Ran(
            holdsForSync: outcome.wroteToWAL && worker.engine.repliesWaitForSync, closeAfterReply: outcome.closeAfterReply)
        if let request = outcome.blocked {
            ran.waits = .parked
            machine.deferredDone(ran, from: start)
            park(request)
        } else {
            machine.deferredDone(ran, from: start)
        }
        drive()
    }

    /// Sends what may be sent; arms the write watch when the socket is full.
    private func send() {
        let (count, full, failed) = machine.withSendable { bytes -> (Int, Bool, Bool) in
            var done = 0
            while done < bytes.count {
                let n = Glibc.send(fd, bytes.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL))
                if n > 0 {
                    done += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    return (done, true, false)
                } else {
                    return (done, true, true)
                }
            }
            return (done, false, false)
        }
        if count > 0 { worker.engine.stats.netOutputBytes.increment(by: count) }
        machine.sent(count, full: full)
        if failed {
            close()
            return
        }
        setWriting(machine.wantsWritable)
    }

    private func setWriting(_ on: Bool) {
        guard on != writing, !closed else { return }
        writing = on
        worker.poller.watchWritable(fd, on)
    }

    /// A retry of paused requests is scheduled (`retryAfterPause`).
    private var pauseRetryScheduled = false

    /// Runs the held requests again once `milliseconds` passed, checking at least every 20 ms
    /// so CLIENT UNPAUSE takes effect at once rather than at the pause's end.
    private func retryAfterPause(_ milliseconds: Int64) {
        guard !pauseRetryScheduled else { return }
        pauseRetryScheduled = true
        worker.queue.asyncAfter(deadline: .now() + .milliseconds(Int(min(max(milliseconds, 1), 20)))) { [self] in
            pauseRetryScheduled = false
            machine.pauseEnded()
            if !closed { drive() }
        }
    }

    // MARK: MONITOR

    /// This client's MONITOR lines, once it sent MONITOR.
    private var monitor: MonitorSink? = nil
    /// Lines a monitor may leave unread when `client-output-buffer-limit` is 0 (no limit):
    /// a monitor that falls this far behind is disconnected rather than held in memory.
    static let monitorBufferLimit = 32 << 20

    /// Starts sending this client a line for every request any client runs (`Engine.monitors`).
    /// Lines are collected off this queue and written here; a monitor that lets more than the
    /// output limit pile up is closed, so a slow monitor never slows the clients it watches.
    private func startMonitoring() {
        guard monitor == nil else { return }
        let configured = worker.limits.outputBufferLimit
        let limit = configured > 0 ? configured : Connection.monitorBufferLimit
        let worker = worker
        let sink = MonitorSink(
            limit: limit,
            wake: { [weak self] in
                worker.post { [weak self] in self?.drainMonitor() }
            },
            overflow: { [weak self] in
                worker.post { [weak self] in
                    guard let self, !self.closed else { return }
                    self.overLimit(limit)
                }
            })
        monitor = sink
        worker.engine.monitors.add(session.id, sink)
    }

    private func drainMonitor() {
        guard !closed, let monitor else { return }
        let lines = monitor.take()
        guard !lines.isEmpty else { return }
        machine.output.bytes.append(contentsOf: lines)
        if machine.unsentCount > monitor.limit {
            overLimit(machine.unsentCount)
            return
        }
        drive()
    }

    private func overLimit(_ pending: Int) {
        worker.logger.warning("closing client \(session.id) (\(session.record.address)): \(pending) bytes of replies over client-output-buffer-limit")
        close()
    }

    // MARK: replication

    /// PSYNC accepted: the socket leaves the poller for a replica feeder of its own, with the
    /// replies not yet sent. The client stays listed (`flags=S`) until the feeder ends.
    private func becomeReplicaStream(_ handOff: ReplicaHandOff) {
        let unsent = machine.unsent
        closed = true
        machine.closing()
        worker.poller.remove(fd)
        if monitor != nil { worker.engine.monitors.remove(session.id) }
        worker.engine.connectionClosed(session)
        worker.removed(self)
        let engine = worker.engine
        ReplicaFeeder(fd: fd, engine: engine, handOff: handOff, record: session.record, pending: unsent, logger: worker.logger,
                      isStopping: { engine.replication.isStopped }).start()
    }

    // MARK: closing

    /// Closes now. Safe to call more than once.
    func close() {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed else { return }
        closed = true
        machine.closing()
        worker.poller.remove(fd)
        Glibc.close(fd)
        worker.engine.clients.remove(session.id)
        if monitor != nil { worker.engine.monitors.remove(session.id) }
        if parked != nil { endParked(.disconnected) }
        // Deferred or long work may still be using the session: `finishDeferred` releases it.
        if machine.waiting != .deferred { worker.engine.connectionClosed(session) }
        worker.removed(self)
    }

    /// At shutdown: send what is pending (waiting up to `deadline`), then close.
    func drainAndClose(deadline: DispatchTime) {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        // Held replies: sync now rather than wait for the group commit.
        if machine.holdsReplies && worker.engine.syncWAL() { machine.syncedEverything() }
        while !closed && machine.sendableCount > 0 && DispatchTime.now() < deadline {
            send()
            if machine.sendableCount > 0 {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 50)
            }
        }
        close()
    }

    var idleNanoseconds: UInt64 { DispatchTime.now().uptimeNanoseconds &- lastActivity }
    var isClosed: Bool { closed }
}
