import CairnEngine
import Dispatch
import Logging
import RESP
#if canImport(Glibc)
import Glibc
#endif

/// One client connection: its socket, request parser and reply buffer.
///
/// Everything here runs on the owning worker's serial queue, so requests of one client run in
/// order and replies go out in order. A read event reads what is available (at most
/// `Worker.readBudget`, so one client cannot starve the others), runs every complete request,
/// and writes all their replies with as few `send` calls as possible. What the socket cannot
/// take waits in the reply buffer for the write source; a client whose pending replies pass
/// `client-output-buffer-limit` is disconnected, as Redis does, so a client that never reads
/// costs at most that much memory.
///
/// `@unchecked Sendable`: confined to `worker.queue` (checked with `dispatchPrecondition` in
/// debug builds); the kill handler only enqueues onto that queue.
final class Connection: @unchecked Sendable {
    let fd: Int32
    let worker: Worker
    let session: Session
    private var parser: RequestParser
    var writer: RESPWriter
    /// Bytes of `writer.bytes` already sent.
    private var sent = 0
    private var writing = false
    private(set) var closed = false
    var lastActivity: UInt64
    /// Bytes ever written to `writer` before `writer.bytes[0]`: reply positions below are
    /// absolute, so they survive the buffer being compacted.
    private(set) var base = 0
    /// `appendfsync always` (see `GroupCommit`): where the first reply of this round's unsynced
    /// writes starts; the sync for it is requested when the round ends.
    private var roundHoldStart: Int? = nil
    /// Requested syncs, oldest first, each with where its first held reply starts: replies from
    /// the first one's start on wait for it.
    private var pendingSyncs: [Int] = []
    /// A deferred reply (`Session.deferred`) is being computed; later requests wait for it.
    private var awaitingDeferred = false
    /// Plain writes wait in the worker to be written with other connections'; later requests wait.
    private var awaitingStagedWrites = false
    /// A blocking pop waiting for an element (`Session.blocked`); later requests wait. See
    /// Connection+Parking.swift.
    var parked: BlockRequest? = nil
    /// Ends `parked` with the timeout reply when its time is up.
    var parkTimer: (any DispatchSourceTimer)? = nil

    /// Replies above this size are flushed before more requests run.
    static let flushThreshold = 1 << 20
    /// Unparsed request bytes, and unsent reply bytes, a client that has not authenticated may
    /// leave buffered. Its requests are at most 10 arguments of 16 KiB (`RESPLimits`) and its
    /// replies short errors, so only one that stops reading comes near this.
    static let unauthenticatedBufferLimit = 1 << 20

    init(fd: Int32, worker: Worker, session: Session, limits: RESPLimits) {
        self.fd = fd
        self.worker = worker
        self.session = session
        self.parser = RequestParser(limits: limits)
        self.writer = RESPWriter(version: .v2, capacity: 16 * 1024)
        self.lastActivity = DispatchTime.now().uptimeNanoseconds
    }

    func start() {
        let queue = worker.queue
        session.subscriber = Subscriber(id: session.id, version: session.protocolVersion) { [weak self] bytes in
            guard let connection = self else { return }
            queue.async { connection.push(bytes) }
        }
        if !worker.poller.add(fd) {
            worker.logger.error("cannot watch client \(session.id)'s socket: \(String(cString: strerror(errno)))")
            close()
        }
    }

    /// A pub/sub message for this client, published by any connection: it goes after the
    /// replies already buffered. A subscriber that does not read is disconnected once
    /// `pubsubOutputLimit` is pending, so publishers never wait for it.
    private func push(_ bytes: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed else { return }
        writer.bytes.append(contentsOf: bytes)
        flush()
    }

    /// Unsent bytes a subscribed client may have before it is disconnected (Redis's
    /// `client-output-buffer-limit pubsub 32mb`).
    static let pubsubOutputLimit = 32 << 20

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
        var eof = false
        let buffer = worker.readBuffer
        while total < Worker.readBudget {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 {
                parser.append(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                total += n
                if n < buffer.count { break }
            } else if n == 0 {
                eof = true
                break
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                break
            } else {
                eof = true
                break
            }
        }
        if total > 0 {
            worker.engine.stats.netInputBytes.increment(by: total)
            lastActivity = DispatchTime.now().uptimeNanoseconds
        }
        if parser.bufferedByteCount > worker.limits.queryBufferLimit {
            worker.logger.warning("closing client \(session.id) (\(session.record.address)): query buffer over client-query-buffer-limit")
            close()
            return
        }
        process()
        if !closed && !session.authenticated && parser.bufferedByteCount > Connection.unauthenticatedBufferLimit {
            // What is left after running every complete request: a stranger whose replies
            // back up (it does not read) cannot make the server hold more of its input.
            worker.logger.warning("closing client \(session.id) (\(session.record.address)): over \(Connection.unauthenticatedBufferLimit) bytes of unparsed requests before AUTH")
            close()
            return
        }
        if eof {
            // The peer is gone: whatever it can no longer read is dropped.
            close()
        }
    }

    private func writable() {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed else { return }
        flush()
        if !closed && sent == writer.bytes.count {
            // Drained: run requests that waited for room, then read again.
            process()
        }
    }

    /// Runs complete requests until the parser needs more bytes or the replies need to drain.
    ///
    /// Consecutive plain writes (`SET key value`, `MSET`, `INCR` and friends) go to the worker (`Worker.stage`),
    /// which writes those of every connection of the poller round as one RocksDB write batch; the replies and
    /// the requests after them follow in `stagedWritesDone`. Consecutive plain `GET key`
    /// requests are read with one batched MultiGet (`Engine.executePlainGets`).
    func process() {
        let engine = worker.engine
        while !closed && !awaitingDeferred && !awaitingStagedWrites && parked == nil {
            let pending = writer.bytes.count - sent
            if pending > Connection.unauthenticatedBufferLimit && !session.authenticated {
                // Before AUTH every reply is a short error: this many unread is not a client.
                worker.logger.warning("closing client \(session.id) (\(session.record.address)): over \(Connection.unauthenticatedBufferLimit) bytes of unread replies before AUTH")
                close()
                return
            }
            if pending > Connection.flushThreshold {
                // Redis's rule: a client whose replies pass the output limit is closed.
                if pending > worker.limits.outputBufferLimit && worker.limits.outputBufferLimit > 0 {
                    overLimit(pending)
                    return
                }
                flush()
                // Backpressure: while the client has not read what waits (or replies are held
                // for a WAL sync), its next requests wait too, so a client that never reads
                // costs about one reply, not the replies to everything it asked for, and never
                // holds the worker. `writable` (or `syncDone`) resumes once it drained. The
                // requests are still read, so a client that sends everything before reading
                // cannot deadlock against us.
                if writer.bytes.count - sent > Connection.flushThreshold { break }
            }
            guard let argv = nextRequest() else { break }
            if let wait = engine.pauseDelay(argv, session: session) {
                // CLIENT PAUSE: this request (and those after it) run once the pause ends.
                heldBack.insert(argv, at: 0)
                retryAfterPause(wait)
                break
            }
            let replyStart = base + writer.bytes.count
            writer.version = session.protocolVersion
            switch engine.route(argv, session: session) {
            case .grouped(.write):
                awaitingStagedWrites = true
                worker.stage(group(from: argv, while: { engine.grouping($0, session: $1) == .write }), from: self)
            case .grouped(.read):
                let gets = group(from: argv, while: { engine.grouping($0, session: $1) == .read }, upTo: Connection.maxGroupedGets)
                let answered = engine.executePlainGets(gets, session: session, out: &writer, stopPast: sent + Connection.flushThreshold)
                // The rest run after the client read these (backpressure, above).
                heldBack.insert(contentsOf: gets[answered...], at: 0)
            case .grouped(.batched):
                engine.executeBatched(group(from: argv, while: { engine.grouping($0, session: $1) == .batched }, upTo: Engine.maxBatched),
                                      session: session, out: &writer)
            case .long:
                startLong(argv)
            case .alone:
                engine.execute(argv, session: session, out: &writer)
                if session.startsMonitoring { startMonitoring() }
                if session.replicaHandOff != nil {
                    becomeReplicaStream()
                    return
                }
            }
            if awaitingStagedWrites || awaitingDeferred { break }
            holdRepliesForSync(from: replyStart)
            if let work = session.deferred {
                session.deferred = nil
                startDeferred(work)
                break
            }
            if let request = session.blocked {
                session.blocked = nil
                park(request)
                if parked != nil { break }
            }
            if session.closeAfterReply { break }
        }
        if let start = roundHoldStart {
            roundHoldStart = nil
            pendingSyncs.append(start)
            let queue = worker.queue
            worker.groupCommit.request { [self] ok in
                queue.async { self.syncDone(ok) }
            }
        }
        // A protocol error met while grouping writes is answered after them.
        if let error = protocolError, heldBack.isEmpty, !awaitingStagedWrites {
            protocolError = nil
            writer.error("ERR \(error.message)")
            worker.logger.info("protocol error from client \(session.id) (\(session.record.address)): \(error.message)")
            session.closeAfterReply = true
        }
        flush()
    }

    /// Under `appendfsync always`, replies from `replyStart` on wait for a WAL sync when the
    /// requests behind them wrote.
    func holdRepliesForSync(from replyStart: Int) {
        guard session.unsyncedWrite else { return }
        session.unsyncedWrite = false
        if roundHoldStart == nil && worker.engine.repliesWaitForSync { roundHoldStart = replyStart }
    }

    /// The worker wrote the requests this connection staged (or failed to): answer them and go on.
    func stagedWritesDone(_ replies: [Engine.PlainReply]) {
        awaitingStagedWrites = false
        guard !closed else { return }
        let replyStart = base + writer.bytes.count
        writer.version = session.protocolVersion
        worker.engine.reply(replies, session: session, out: &writer)
        holdRepliesForSync(from: replyStart)
        process()
    }

    /// The replies a WAL sync waited for are durable (or the sync failed: then the client is
    /// closed rather than told its writes are safe).
    private func syncDone(_ ok: Bool) {
        guard !closed else { return }
        guard ok else {
            worker.logger.error("closing client \(session.id): the WAL sync covering its writes failed")
            close()
            return
        }
        pendingSyncs.removeFirst()
        process()
    }

    /// Absolute position up to which replies may be sent.
    private var sendLimit: Int {
        let held = [roundHoldStart, pendingSyncs.first].compactMap { $0 }.min()
        return held ?? base + writer.bytes.count
    }

    private func startDeferred(_ work: @escaping @Sendable (inout RESPWriter) -> Void) {
        awaitingDeferred = true
        let version = session.protocolVersion
        let queue = worker.queue
        DispatchQueue.global(qos: .utility).async { [self] in
            var reply = RESPWriter(version: version, capacity: 256)
            work(&reply)
            let bytes = reply.bytes
            queue.async { self.finishDeferred(bytes) }
        }
    }

    /// Runs a request that would hold up the worker (`Engine.Route.long`) on the server's long
    /// queue instead: the other clients of this worker go on; this one waits for its reply, as
    /// for deferred work. The session is left to that queue meanwhile (nothing here touches it
    /// until `finishDeferred`, and a close waits for it, see `close`); the long queue is paused
    /// with the workers during a restore and drained before the database closes.
    private func startLong(_ argv: [[UInt8]]) {
        awaitingDeferred = true
        let version = session.protocolVersion
        let queue = worker.queue
        let engine = worker.engine
        worker.longQueue.async { [self] in
            var reply = RESPWriter(version: version, capacity: 256)
            engine.execute(argv, session: session, out: &reply)
            if let work = session.deferred {
                session.deferred = nil
                work(&reply)
            }
            let bytes = reply.bytes
            queue.async { self.finishDeferred(bytes) }
        }
    }

    private func finishDeferred(_ reply: [UInt8]) {
        awaitingDeferred = false
        guard !closed else {
            // Closed while the work ran: release what the session holds now that nothing uses it.
            worker.engine.connectionClosed(session)
            return
        }
        let replyStart = base + writer.bytes.count
        writer.bytes.append(contentsOf: reply)
        holdRepliesForSync(from: replyStart)
        process()
    }

    /// `first` and the requests right after it that `belongs` accepts (at most `limit`); the
    /// first that does not waits in `heldBack`.
    private func group(
        from first: [[UInt8]], while belongs: ([[UInt8]], Session) -> Bool, upTo limit: Int = Connection.maxGrouped
    ) -> [[[UInt8]]] {
        var group = [first]
        while group.count < limit, let next = nextRequest() {
            guard belongs(next, session) else {
                heldBack.insert(next, at: 0)
                break
            }
            group.append(next)
        }
        return group
    }

    /// Requests taken from the parser but not run yet, in order: the one that ended a group,
    /// and grouped GETs left for after the client reads.
    private var heldBack: [[[UInt8]]] = []
    /// A protocol error met while looking ahead; reported after the requests before it ran.
    private var protocolError: RESPProtocolError? = nil
    static let maxGrouped = 1024
    /// GETs fetch every value of their group before writing any (RocksDB copies memtable values
    /// out), so a group of big values costs its sum at once: 16 keeps that small and still
    /// covers a pipeline of 16 (1,024 GETs of a 1 MiB value held a bystander 2.25 s).
    static let maxGroupedGets = 16

    private func nextRequest() -> [[UInt8]]? {
        if !heldBack.isEmpty { return heldBack.removeFirst() }
        guard protocolError == nil else { return nil }
        // Per request: the pre-AUTH limits stop applying from the request after AUTH.
        parser.unauthenticated = !session.authenticated
        do {
            return try parser.next()
        } catch {
            protocolError = error
            return nil
        }
    }

    /// Writes pending replies; arms the write source when the socket is full.
    private func flush() {
        guard !closed else { return }
        let limit = sendLimit - base
        while sent < limit {
            let n = writer.bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + sent, limit - sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                sent += n
                worker.engine.stats.netOutputBytes.increment(by: n)
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                close()
                return
            }
        }
        let pending = writer.bytes.count - sent
        if pending == 0 {
            sent = 0
            base += writer.bytes.count
            if writer.bytes.capacity > 4 << 20 {
                writer.bytes = []  // give back the memory of a big reply
                writer.bytes.reserveCapacity(16 * 1024)
            } else {
                writer.reset()
            }
            setWriting(false)
            if session.closeAfterReply {
                close()
                return
            }
        } else {
            if (pending > worker.limits.outputBufferLimit && worker.limits.outputBufferLimit > 0)
                || (pending > Connection.pubsubOutputLimit && session.subscriptionCount > 0) {
                overLimit(pending)
                return
            }
            if sent > 1 << 20 && sent > writer.bytes.count / 2 {
                writer.bytes.removeFirst(sent)
                base += sent
                sent = 0
            }
            // Wait for the socket only when it is full, not for replies held for a WAL sync.
            setWriting(sent < sendLimit - base)
        }
    }

    private func overLimit(_ pending: Int) {
        worker.logger.warning("closing client \(session.id) (\(session.record.address)): \(pending) bytes of replies over client-output-buffer-limit")
        close()
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
            if !closed { process() }
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
        session.startsMonitoring = false
        guard monitor == nil else { return }
        let configured = worker.limits.outputBufferLimit
        let limit = configured > 0 ? configured : Connection.monitorBufferLimit
        let queue = worker.queue
        let sink = MonitorSink(
            limit: limit,
            wake: { [weak self] in
                queue.async { [weak self] in self?.drainMonitor() }
            },
            overflow: { [weak self] in
                queue.async { [weak self] in
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
        writer.bytes.append(contentsOf: lines)
        let pending = writer.bytes.count - sent
        if pending > monitor.limit {
            overLimit(pending)
            return
        }
        flush()
    }

    // MARK: replication

    /// PSYNC accepted: the socket leaves the poller for a replica feeder of its own, with the
    /// replies not yet sent. The client stays listed (`flags=S`) until the feeder ends.
    private func becomeReplicaStream() {
        guard let handOff = session.replicaHandOff else { return }
        session.replicaHandOff = nil
        let unsent = Array(writer.bytes[sent...])
        closed = true
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
        worker.poller.remove(fd)
        Glibc.close(fd)
        worker.engine.clients.remove(session.id)
        if monitor != nil { worker.engine.monitors.remove(session.id) }
        if parked != nil { endParked(.disconnected) }
        // Deferred or long work may still be using the session: `finishDeferred` releases it.
        if !awaitingDeferred { worker.engine.connectionClosed(session) }
        worker.removed(self)
    }

    /// At shutdown: send what is pending (waiting up to `deadline`), then close.
    func drainAndClose(deadline: DispatchTime) {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        if roundHoldStart != nil || !pendingSyncs.isEmpty {
            // Held replies: sync now rather than wait for the group commit.
            if worker.engine.syncWAL() {
                roundHoldStart = nil
                pendingSyncs = []
            }
        }
        while !closed && sent < sendLimit - base && DispatchTime.now() < deadline {
            flush()
            if sent < sendLimit - base {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 50)
            }
        }
        close()
    }

    var idleNanoseconds: UInt64 { DispatchTime.now().uptimeNanoseconds &- lastActivity }
    var isClosed: Bool { closed }
}
