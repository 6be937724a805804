import CairnEngine
import RESP

/// The rules of one client connection, with no socket, engine or queue in it.
///
/// Events come in (bytes read, a request ran, staged writes done, a WAL sync done, a deferred
/// reply ready, bytes sent, the socket writable again, the peer gone) and `next` says what to
/// do: run this request (or this group of them), send the replies, ask for a WAL sync, wait,
/// close. `Connection` owns the socket and carries the actions out; the engine writes replies
/// straight into `output`, which this machine owns, so it always knows which bytes may go.
///
/// What it decides:
/// - Order: requests run one after another; while one waits (its group is in the worker's
///   write batch, its reply is deferred, it is parked as a blocking pop, CLIENT PAUSE) later
///   requests wait, still read so a hang-up is seen.
/// - Grouping: consecutive requests the engine routes the same grouped way run as one group.
/// - Durability: under `appendfsync always`, replies from the first write of a round on are
///   held until the sync requested at the end of the round is done.
/// - Backpressure and limits: while more than `flushThreshold` of replies wait to be read, no
///   more requests run; past `client-output-buffer-limit` (or the pub/sub limit when
///   subscribed), or buffers a client that has not authenticated could not need, it closes.
struct ConnectionStateMachine {
    /// How a request runs, as the engine's door admits it (`Engine.admit`); `alone` and `long`
    /// carry the admitted command (nil: the executor screens it), which the run action hands on.
    enum Step: Equatable {
        case alone(Engine.Admitted?)
        case long(Engine.Admitted?)
        /// With its neighbours routed the same way, at most `Grouping.mostRequests` of them.
        case grouped(Command.Grouping, Engine.Admitted)
        case paused(milliseconds: Int64)
    }

    enum Action: Equatable {
        /// Run this request on the worker; report with `ran`.
        case run([[UInt8]], Engine.Admitted?)
        /// Run this request off the worker; report with `deferredDone`.
        case runLong([[UInt8]], Engine.Admitted?)
        /// Hand these consecutive writes (with their admitted commands) to the worker's round of
        /// every connection, run by their handlers as one transaction and one write batch;
        /// report with `stagedWritesDone`.
        case stage([[[UInt8]]], [Engine.Admitted])
        /// Run these consecutive GETs as one read, stopping once `output` passes `stopPast`
        /// bytes; report with `readDone(answered:)`.
        case read([[[UInt8]]], stopPast: Int)
        /// Ask for a WAL sync covering the held replies; report with `syncDone`.
        case requestSync
        /// Send the sendable replies (`withSendable`); report with `sent`.
        case send
        /// Log this protocol error; its reply is written and the connection closes after it.
        case protocolError(String)
        /// Run the held requests again after this long (CLIENT PAUSE); report with `pauseEnded`.
        case retryAfter(milliseconds: Int64)
        /// Nothing to do until the next event.
        case wait
        /// Close the connection; `reason` is for the log (nil: the client asked, or left).
        case close(reason: String?)
    }

    /// What a request that ran asks of the connection (the part of `Outcome` that is rules).
    struct Ran: Equatable {
        /// Its reply waits for a WAL sync (`appendfsync always` and it wrote).
        var holdsForSync = false
        var closeAfterReply = false
        /// Its reply comes later: deferred work runs, or it is parked as a blocking pop.
        var waits: Waiting? = nil
    }

    /// Per-call facts of the session and configuration.
    struct Context {
        var authenticated = true
        var subscribed = false
        /// `client-output-buffer-limit`; 0 is none.
        var outputLimit = 0
        /// `client-output-buffer-limit pubsub`: unsent bytes a subscribed client may have
        /// before it is closed, so publishers never wait for it; 0 is none.
        var pubsubOutputLimit = 32 << 20
    }

    enum Waiting: Equatable {
        /// Its writes are in the worker's batch.
        case stagedWrites
        /// Its reply is computed off the worker (`Outcome.deferred`, `Engine.Route.long`).
        case deferred
        /// A blocking pop waits for an element.
        case parked
        /// CLIENT PAUSE holds its next request.
        case pause
    }

    /// Replies above this size are sent before more requests run.
    static let flushThreshold = 1 << 20
    /// Unparsed request bytes, and unsent reply bytes, a client that has not authenticated may
    /// leave buffered. Its requests are at most 10 arguments of 16 KiB (`RESPLimits`) and its
    /// replies short errors, so only one that stops reading comes near this.
    static let unauthenticatedBufferLimit = 1 << 20
    private var parser: RequestParser
    /// Replies not sent yet (and, before `sent`, some that were).
    var output: RESPWriter
    /// Bytes of `output.bytes` already sent.
    private(set) var sent = 0
    /// Bytes ever written to `output` before `output.bytes[0]`: positions are absolute, so they
    /// survive the buffer being compacted.
    private(set) var base = 0
    private(set) var waiting: Waiting? = nil
    /// Requests taken from the parser but not run yet, in order: the one that ended a group,
    /// GETs left for after the client reads, one held by CLIENT PAUSE.
    private var heldBack: [[[UInt8]]] = []
    /// The GETs of the `read` action being run.
    private var reading: [[[UInt8]]] = []
    /// A protocol error met while looking ahead; answered after the requests before it ran.
    private var parseError: RESPProtocolError? = nil
    /// Where this round's first reply held for a sync starts; the sync is asked for when the
    /// round ends.
    private var roundHoldStart: Int? = nil
    /// Asked-for syncs, oldest first, each with where its first held reply starts.
    private var pendingSyncs: [Int] = []
    private(set) var closeAfterReply = false
    /// The last send could not take everything: wait for the socket to be writable.
    private(set) var socketFull = false
    private var peerGone = false
    /// Why the connection must close at the next step (a limit, a failed sync).
    private var mustClose: String? = nil
    private(set) var closed = false

    init(limits: RESPLimits) {
        parser = RequestParser(limits: limits)
        output = RESPWriter(version: .v2, capacity: 16 * 1024)
    }

    // MARK: positions

    /// Absolute position of the end of `output`: where the next reply starts.
    var position: Int { base + output.bytes.count }
    /// Absolute position up to which replies may be sent (held ones wait for their sync).
    private var sendLimit: Int { [roundHoldStart, pendingSyncs.first].compactMap { $0 }.min() ?? position }
    /// Reply bytes not sent yet, held or not.
    var unsentCount: Int { output.bytes.count - sent }
    var sendableCount: Int { sendLimit - base - sent }
    /// Replies wait for a WAL sync.
    var holdsReplies: Bool { roundHoldStart != nil || !pendingSyncs.isEmpty }
    /// The socket should be watched for room: there is something to send that it would not take.
    var wantsWritable: Bool { socketFull && sendableCount > 0 && !closed }
    var bufferedRequestBytes: Int { parser.bufferedByteCount }

    // MARK: events

    /// Bytes arrived. Returns false when the unparsed bytes pass `queryLimit`
    /// (`client-query-buffer-limit`): the connection closes.
    mutating func bytesRead(_ bytes: UnsafeRawBufferPointer, queryLimit: Int) -> Bool {
        parser.append(bytes)
        return parser.bufferedByteCount <= queryLimit
    }

    /// The peer closed its side (or the socket failed): once the requests already read ran,
    /// the connection closes; replies it can no longer read are dropped.
    mutating func peerClosed() { peerGone = true }

    /// A request run from `.run` (or a deferred one, a served blocking pop)
    /// wrote its reply from `replyStart` on.
    mutating func ran(_ ran: Ran, from replyStart: Int) {
        if ran.holdsForSync && roundHoldStart == nil { roundHoldStart = replyStart }
        if ran.closeAfterReply { closeAfterReply = true }
        waiting = ran.waits
    }

    /// The GETs of `.read` were answered up to `answered`; the rest run once the client reads.
    mutating func readDone(answered: Int) {
        heldBack.insert(contentsOf: reading[answered...], at: 0)
        reading = []
    }

    /// The worker wrote the staged writes and their replies were appended from `replyStart`.
    mutating func stagedWritesDone(_ ran: Ran, from replyStart: Int) {
        guard waiting == .stagedWrites else { return }
        self.ran(ran, from: replyStart)
    }

    /// Deferred or long work appended its reply from `replyStart` on.
    mutating func deferredDone(_ ran: Ran, from replyStart: Int) {
        guard waiting == .deferred else { return }
        self.ran(ran, from: replyStart)
    }

    /// The parked blocking pop was served or its wait ended; its reply starts at `replyStart`.
    mutating func unparked(_ ran: Ran, from replyStart: Int) {
        guard waiting == .parked else { return }
        self.ran(ran, from: replyStart)
    }

    /// The oldest asked-for sync finished. A failed one closes rather than tell the client its
    /// writes are safe.
    mutating func syncDone(ok: Bool) {
        guard ok else {
            mustClose = "the WAL sync covering its writes failed"
            return
        }
        if !pendingSyncs.isEmpty { pendingSyncs.removeFirst() }
    }

    /// Every held reply is durable (a sync outside the group commit, at shutdown).
    mutating func syncedEverything() {
        roundHoldStart = nil
        pendingSyncs = []
    }

    mutating func pauseEnded() {
        if waiting == .pause { waiting = nil }
    }

    /// `count` bytes went; `full` when the socket took less than offered (or nothing).
    mutating func sent(_ count: Int, full: Bool) {
        sent += count
        socketFull = full
        if sent == output.bytes.count {
            base += output.bytes.count
            sent = 0
            if output.bytes.capacity > 4 << 20 {
                output.bytes = []  // give back the memory of a big reply
                output.bytes.reserveCapacity(16 * 1024)
            } else {
                output.reset()
            }
        } else if sent > 1 << 20 && sent > output.bytes.count / 2 {
            output.bytes.removeFirst(sent)
            base += sent
            sent = 0
        }
    }

    /// The socket has room again.
    mutating func writable() { socketFull = false }

    /// The connection closed (for any reason); nothing more happens.
    mutating func closing() { closed = true }

    /// Passes the sendable bytes to `body`, which returns how many it sent.
    func withSendable<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        let limit = sendLimit - base
        return output.bytes.withUnsafeBytes { raw in body(UnsafeRawBufferPointer(rebasing: raw[sent..<limit])) }
    }

    /// The unsent replies, held or not (a PSYNC hand-off takes them with the socket).
    var unsent: [UInt8] { Array(output.bytes[sent...]) }

    // MARK: deciding

    /// What to do now. Call until it says `.wait` or `.close`, reporting each action's end
    /// with its event first.
    mutating func next(_ context: Context, route: ([[UInt8]]) -> Step) -> Action {
        guard !closed else { return .wait }
        if let reason = mustClose { return close(reason) }
        let pending = unsentCount
        if !context.authenticated && pending > Self.unauthenticatedBufferLimit {
            // Before AUTH every reply is a short error: this many unread is not a client.
            return close("over \(Self.unauthenticatedBufferLimit) bytes of unread replies before AUTH")
        }
        if socketFull && pending > 0 {
            if context.outputLimit > 0 && pending > context.outputLimit {
                return close("\(pending) bytes of replies over client-output-buffer-limit")
            }
            if context.subscribed && context.pubsubOutputLimit > 0 && pending > context.pubsubOutputLimit {
                return close("\(pending) bytes of pub/sub messages over the pub/sub output limit")
            }
        }
        if waiting == nil && !closeAfterReply {
            var backedUp = pending > Self.flushThreshold
            if backedUp {
                // Redis's rule: a client whose replies pass the output limit is closed.
                if context.outputLimit > 0 && pending > context.outputLimit {
                    return close("\(pending) bytes of replies over client-output-buffer-limit")
                }
                if !socketFull && sendableCount > 0 { return .send }
                // Backpressure: while the client has not read what waits (or replies are held
                // for a WAL sync), its next requests wait too, so a client that never reads
                // costs about one reply, not the replies to everything it asked for. They are
                // still read, so a client that sends everything before reading cannot deadlock.
                backedUp = true
            }
            if !backedUp, let argv = nextRequest(authenticated: context.authenticated) {
                return start(argv, context, route: route)
            }
        }
        // The round ends.
        if let start = roundHoldStart {
            roundHoldStart = nil
            pendingSyncs.append(start)
            return .requestSync
        }
        if let error = parseError, heldBack.isEmpty, waiting == nil, !closeAfterReply {
            // A protocol error is answered after the requests before it.
            parseError = nil
            output.error("ERR \(error.message)")
            closeAfterReply = true
            return .protocolError(error.message)
        }
        if !context.authenticated && parser.bufferedByteCount > Self.unauthenticatedBufferLimit {
            // What is left after running every complete request: a stranger whose replies back
            // up (it does not read) cannot make the server hold more of its input.
            return close("over \(Self.unauthenticatedBufferLimit) bytes of unparsed requests before AUTH")
        }
        if peerGone { return close(nil) }
        if !socketFull && sendableCount > 0 { return .send }
        if closeAfterReply && unsentCount == 0 && waiting == nil { return close(nil) }
        return .wait
    }

    private mutating func close(_ reason: String?) -> Action {
        closed = true
        return .close(reason: reason)
    }

    private mutating func start(_ argv: [[UInt8]], _ context: Context, route: ([[UInt8]]) -> Step) -> Action {
        let step = route(argv)
        switch step {
        case .paused(let milliseconds):
            heldBack.insert(argv, at: 0)
            waiting = .pause
            return .retryAfter(milliseconds: milliseconds)
        case .alone(let admitted):
            return .run(argv, admitted)
        case .long(let admitted):
            waiting = .deferred
            return .runLong(argv, admitted)
        case .grouped(let kind, let admitted):
            let (requests, commands) = group(from: argv, admitted, of: kind, context, route: route)
            switch kind {
            case .batched:
                waiting = .stagedWrites
                return .stage(requests, commands)
            case .read:
                reading = requests
                return .read(requests, stopPast: sent + Self.flushThreshold)
            }
        }
    }

    /// `first` and the requests right after it grouped the same way (at most
    /// `Grouping.mostRequests`), with their admitted commands; the first that is not waits in
    /// `heldBack`.
    private mutating func group(
        from first: [[UInt8]], _ admitted: Engine.Admitted, of kind: Command.Grouping, _ context: Context, route: ([[UInt8]]) -> Step
    ) -> ([[[UInt8]]], [Engine.Admitted]) {
        var group = [first]
        var commands = [admitted]
        while group.count < kind.mostRequests, let next = nextRequest(authenticated: context.authenticated) {
            guard case .grouped(kind, let admitted) = route(next) else {
                heldBack.insert(next, at: 0)
                break
            }
            group.append(next)
            commands.append(admitted)
        }
        return (group, commands)
    }

    private mutating func nextRequest(authenticated: Bool) -> [[UInt8]]? {
        if !heldBack.isEmpty { return heldBack.removeFirst() }
        guard parseError == nil else { return nil }
        // Per request: the pre-AUTH limits stop applying from the request after AUTH.
        parser.unauthenticated = !authenticated
        do {
            return try parser.next()
        } catch {
            parseError = error
            return nil
        }
    }
}
