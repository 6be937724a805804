import NIOCore
import RESP

/// One request on a connection: commands written together, their replies collected in order.
struct ClientRequest {
    let id: Int
    let commands: [Command]
    /// The column family the commands must run in; the handler sends `CF.USE` first when the
    /// connection's current family differs. Nil: leave the family alone.
    let family: String?
    let deadline: NIODeadline
    let promise: EventLoopPromise<[RESPValue]>
}

/// Asks the handler to give up a request (its task was cancelled): it fails at once, and its
/// replies are read and dropped when they come, so the replies after it stay in step.
struct AbandonRequest {
    let id: Int
}

/// Commands for the subscriber connection: written with no reply expected, because a
/// subscribed connection's replies and messages all go to the push sink.
struct SubscriberCommands {
    let commands: [Command]
}

/// A request that was written but not answered when the connection broke. On Cairn, a server
/// that shuts down answers every request it ran before it closes, so such a request did not run.
struct RequestNotAnswered: Error {
    let error: CairnClientError
}

/// Turns a connection into a subscriber connection once its handshake is done.
struct EnterSubscriberMode {}

/// A request that failed before any byte of it was written: safe to send again elsewhere.
struct RequestNotSent: Error {
    let error: CairnClientError
}

/// Encodes requests as RESP and decodes replies incrementally (``ValueParser``), matching each
/// reply to the oldest request still waiting: many requests in flight on one connection
/// (pipelining), each with its own promise and deadline.
///
/// Commands whose effect changes how later commands run (`CF.USE`, `RESET`, `MULTI`...`EXEC`)
/// are barriers: requests after one are held until its reply arrives, so the handler always
/// knows the connection's current family before it writes the next request. Everything runs on
/// the channel's event loop.
final class RESPClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ClientRequest
    typealias OutboundOut = ByteBuffer

    private enum Purpose {
        /// A caller's request; `promise` is nil once it was abandoned (timed out, cancelled).
        case user(commands: [Command], promise: EventLoopPromise<[RESPValue]>?, barrier: Bool)
        /// The `CF.USE` sent ahead of `request`.
        case switchFamily(String, request: ClientRequest?)
        /// A health-check `PING`.
        case healthCheck
    }

    private struct Pending {
        let id: Int
        let expected: Int
        var purpose: Purpose
        var timeout: Scheduled<Void>?
    }

    private var parser = ValueParser()
    private var pending = CircularBuffer<Pending>()
    /// The replies so far of the oldest pending request (`pending.first`). Kept here, not in
    /// its `Pending`: `CircularBuffer`'s subscript has no in-place accessor (a get and a set),
    /// so appending to an array inside an element copies the whole array once per reply, and a
    /// pipeline of n commands cost O(n²) (100,000 commands missed a 30 s deadline).
    private var headReplies: [RESPValue] = []
    /// Requests waiting for a barrier's reply, in arrival order.
    private var held = CircularBuffer<(request: ClientRequest, timeout: Scheduled<Void>?)>()
    private var barrierOutstanding = false
    /// The connection's current family on the server (exact whenever no barrier is outstanding).
    private var family = "default"
    /// The commands queued since MULTI, until EXEC or DISCARD (nil outside a transaction).
    private var queuedSinceMulti: [Command]? = nil
    private var context: ChannelHandlerContext?
    private var closedError: CairnClientError?
    /// Where RESP3 push messages go (and, on a subscriber connection, every value).
    private let pushSink: (@Sendable (RESPValue) -> Void)?
    private var subscriber = false
    private let healthCheckTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let onIdle: @Sendable (any Channel) -> Void
    private var lastUse = NIODeadline.now()
    private var nextInternalID = -1

    init(
        pushSink: (@Sendable (RESPValue) -> Void)?, healthCheckTimeout: TimeAmount, idleTimeout: TimeAmount,
        onIdle: @escaping @Sendable (any Channel) -> Void
    ) {
        self.pushSink = pushSink
        self.healthCheckTimeout = healthCheckTimeout
        self.idleTimeout = idleTimeout
        self.onIdle = onIdle
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        failAll(CairnClientError(.connection, message: "the connection is closed"))
        self.context = nil
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        promise?.succeed()
        if let closedError {
            request.promise.fail(RequestNotSent(error: closedError))
            return
        }
        lastUse = .now()
        if barrierOutstanding {
            held.append((request, scheduleExpiry(of: request.id, at: request.deadline, context: context)))
        } else {
            start(request, timeout: nil, context: context)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let abandon = event as? AbandonRequest {
            abandonRequest(abandon.id, CairnClientError(.cancelled, message: "the request was cancelled"))
            promise?.succeed()
        } else if event is EnterSubscriberMode {
            subscriber = true
            promise?.succeed()
        } else if let subscriberCommands = event as? SubscriberCommands {
            var buffer = context.channel.allocator.buffer(capacity: 64)
            for c in subscriberCommands.commands { buffer.writeRESPCommand(c) }
            context.writeAndFlush(wrapOutboundOut(buffer), promise: promise)
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }

    /// Writes a request (after a `CF.USE` when its family differs from the connection's).
    private func start(_ request: ClientRequest, timeout: Scheduled<Void>?, context: ChannelHandlerContext) {
        let timeout = timeout ?? scheduleExpiry(of: request.id, at: request.deadline, context: context)
        if let wanted = request.family, wanted != family {
            writeCommands([command("CF.USE", wanted)], context: context)
            pending.append(Pending(id: request.id, expected: 1, purpose: .switchFamily(wanted, request: request), timeout: timeout))
            barrierOutstanding = true
            return
        }
        let barrier = request.commands.contains(where: isBarrier)
        writeCommands(request.commands, context: context)
        pending.append(
            Pending(
                id: request.id, expected: request.commands.count,
                purpose: .user(commands: request.commands, promise: request.promise, barrier: barrier), timeout: timeout))
        if barrier { barrierOutstanding = true }
    }

    private func writeCommands(_ commands: [Command], context: ChannelHandlerContext) {
        var size = 0
        for c in commands { for a in c { size += a.count + 16 } }
        var buffer = context.channel.allocator.buffer(capacity: size + 16)
        for c in commands { buffer.writeRESPCommand(c) }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    private func isBarrier(_ c: Command) -> Bool {
        guard let name = c.first, name.count >= 4, name.count <= 7 else { return false }
        switch String(decoding: name, as: UTF8.self).uppercased() {
        case "CF.USE", "RESET", "MULTI", "EXEC", "DISCARD": return true
        default: return false
        }
    }

    private func scheduleExpiry(of id: Int, at deadline: NIODeadline, context: ChannelHandlerContext) -> Scheduled<Void> {
        context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            abandonRequest(id, CairnClientError(.timeout, message: "no reply within the request deadline"))
        }
    }

    /// Fails request `id` now; its replies, if any are still due, are dropped when they come.
    private func abandonRequest(_ id: Int, _ error: CairnClientError) {
        if let i = held.firstIndex(where: { $0.request.id == id }) {
            let (request, timeout) = held.remove(at: i)
            timeout?.cancel()
            request.promise.fail(error)
            return
        }
        guard let i = pending.firstIndex(where: { $0.id == id }) else { return }
        pending[i].timeout?.cancel()
        pending[i].timeout = nil
        switch pending[i].purpose {
        case .user(let commands, let promise, let barrier):
            promise?.fail(error)
            pending[i].purpose = .user(commands: commands, promise: nil, barrier: barrier)
        case .switchFamily(let f, let request):
            request?.promise.fail(error)
            pending[i].purpose = .switchFamily(f, request: nil)
        case .healthCheck:
            // The server did not answer a PING in time: it is stalled or gone.
            failAll(error)
            context?.close(promise: nil)
        }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        buffer.withUnsafeReadableBytes { parser.append($0) }
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        while true {
            let value: RESPValue?
            do {
                value = try parser.next()
            } catch {
                failAll(CairnClientError(.protocolViolation, message: error.message))
                context.close(promise: nil)
                return
            }
            guard let value else { break }
            if subscriber {
                pushSink?(value)
                continue
            }
            if case .push = value {
                pushSink?(value)
                continue
            }
            receive(value, context: context)
        }
    }

    private func receive(_ value: RESPValue, context: ChannelHandlerContext) {
        guard !pending.isEmpty else {
            // A reply nobody asked for: the stream is out of step and cannot be trusted.
            failAll(CairnClientError(.protocolViolation, message: "the server sent a reply no request asked for"))
            context.close(promise: nil)
            return
        }
        let expected = pending[pending.startIndex].expected
        if headReplies.isEmpty { headReplies.reserveCapacity(expected) }
        headReplies.append(value)
        guard headReplies.count == expected else { return }
        let done = pending.removeFirst()
        let replies = headReplies
        headReplies = []
        done.timeout?.cancel()
        lastUse = .now()
        switch done.purpose {
        case .user(let commands, let promise, let barrier):
            track(commands, replies)
            promise?.succeed(replies)
            if barrier { releaseHeld(context: context) }
        case .switchFamily(let wanted, let request):
            barrierOutstanding = false
            if case .error(let text) = value {
                request?.promise.fail(CairnClientError(serverReply: text))
            } else {
                family = wanted
                if let request { start(request, timeout: done.timeout, context: context) }
            }
            if !barrierOutstanding { releaseHeld(context: context) }
        case .healthCheck:
            break
        }
    }

    /// Writes held requests until one of them is a barrier again.
    private func releaseHeld(context: ChannelHandlerContext) {
        barrierOutstanding = false
        while !barrierOutstanding, let (request, timeout) = held.popFirst() {
            start(request, timeout: timeout, context: context)
        }
    }

    /// Follows commands that change the connection's family, also inside MULTI: a queued
    /// `CF.USE` changes the family only when EXEC runs it.
    private func track(_ commands: [Command], _ replies: [RESPValue]) {
        for (c, reply) in zip(commands, replies) {
            guard let first = c.first, first.count >= 4, first.count <= 7 || queuedSinceMulti != nil else { continue }
            let name = String(decoding: first, as: UTF8.self).uppercased()
            if name == "RESET" {
                queuedSinceMulti = nil
                family = "default"
            } else if let queued = queuedSinceMulti {
                switch name {
                case "EXEC", "DISCARD":
                    queuedSinceMulti = nil
                    if name == "EXEC", let results = reply.array { follow(queued, results) }
                default:
                    if reply == .simpleString("QUEUED") { queuedSinceMulti?.append(c) }
                }
            } else if name == "MULTI" {
                if reply == .simpleString("OK") { queuedSinceMulti = [] }
            } else {
                follow([c], [reply])
            }
        }
    }

    private func follow(_ commands: [Command], _ replies: [RESPValue]) {
        for (c, reply) in zip(commands, replies) where reply == .simpleString("OK") && c.count == 2 {
            if String(decoding: c[0], as: UTF8.self).uppercased() == "CF.USE" {
                family = String(decoding: c[1], as: UTF8.self)
            }
        }
    }

    // MARK: Lifecycle

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is IdleStateHandler.IdleStateEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if subscriber { return }
        if pending.isEmpty && held.isEmpty && NIODeadline.now() - lastUse >= idleTimeout {
            onIdle(context.channel)
        } else if pending.isEmpty {
            // Nothing in flight for a while: make sure the server still answers.
            let id = nextInternalID
            nextInternalID -= 1
            writeCommands([command("PING")], context: context)
            let timeout = scheduleExpiry(of: id, at: .now() + healthCheckTimeout, context: context)
            pending.append(Pending(id: id, expected: 1, purpose: .healthCheck, timeout: timeout))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(CairnClientError(.connection, message: "the server closed the connection"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS failure keeps its reason (and its own code, which the pool does not retry).
        failAll(tlsFailure(error) ?? CairnClientError(.connection, message: "the connection failed: \(error)"))
        context.close(promise: nil)
    }

    /// Fails every request: those written with `error`, those never written as not sent.
    private func failAll(_ error: CairnClientError) {
        if closedError == nil { closedError = error }
        let written = pending
        let waiting = held
        pending.removeAll()
        held.removeAll()
        headReplies = []
        for p in written {
            p.timeout?.cancel()
            switch p.purpose {
            case .user(_, let promise, _): promise?.fail(RequestNotAnswered(error: error))
            case .switchFamily(_, let request): request?.promise.fail(RequestNotSent(error: error))
            case .healthCheck: break
            }
        }
        for (request, timeout) in waiting {
            timeout?.cancel()
            request.promise.fail(RequestNotSent(error: error))
        }
    }
}

extension ByteBuffer {
    /// Appends one command as a RESP array of bulk strings.
    mutating func writeRESPCommand(_ argv: Command) {
        writeInteger(UInt8(ascii: "*"))
        writeDecimal(argv.count)
        for arg in argv {
            writeInteger(UInt8(ascii: "$"))
            writeDecimal(arg.count)
            writeBytes(arg)
            writeStaticString("\r\n")
        }
    }

    private mutating func writeDecimal(_ n: Int) {
        if n < 10 {
            writeInteger(UInt8(ascii: "0") + UInt8(n))
        } else {
            writeString(String(n))
        }
        writeStaticString("\r\n")
    }
}
