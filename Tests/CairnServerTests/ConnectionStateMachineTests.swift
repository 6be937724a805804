import CairnEngine
@testable import CairnServer
import RESP
import Testing

/// The connection's rules, in-process: no socket, no engine. Each test feeds events to the
/// state machine and plays the connection's part (running what it is told, appending replies).
@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    /// Plain routing: SET is a grouped write, GET a grouped read, everything else alone.
    static func route(_ argv: [[UInt8]]) -> Machine.Step {
        switch String(decoding: argv[0], as: UTF8.self).uppercased() {
        case "SET": .grouped(.batched, set)
        case "GET": .grouped(.read, get)
        case "HSET": .grouped(.batched, hset)
        case "DBSIZE": .long(nil)
        default: .alone(nil)
        }
    }

    static func argv(_ words: String...) -> [[UInt8]] { words.map { Array($0.utf8) } }
    static let set = Engine.Admitted(named: "set")!
    static let get = Engine.Admitted(named: "get")!
    static let hset = Engine.Admitted(named: "hset")!

    static func wire(_ requests: [[String]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for r in requests {
            bytes += Array("*\(r.count)\r\n".utf8)
            for w in r { bytes += Array("$\(w.utf8.count)\r\n\(w)\r\n".utf8) }
        }
        return bytes
    }

    var machine = Machine(limits: RESPLimits())
    var context = Machine.Context(authenticated: true, subscribed: false, outputLimit: 0)

    mutating func read(_ requests: [[String]]) {
        let bytes = Self.wire(requests)
        let ok = bytes.withUnsafeBytes { machine.bytesRead($0, queryLimit: 1 << 30) }
        #expect(ok)
    }

    mutating func next() -> Machine.Action { machine.next(context, route: Self.route) }

    /// Runs `.run` requests by answering each with `+<NAME>` until another action comes.
    mutating func runAlone() -> (ran: [String], then: Machine.Action) {
        var ran: [String] = []
        while true {
            let action = next()
            guard case .run(let argv, _) = action else { return (ran, action) }
            let name = String(decoding: argv[0], as: UTF8.self)
            let start = machine.position
            machine.output.simpleString(name)
            machine.ran(.init(), from: start)
            ran.append(name)
        }
    }

    /// Sends everything sendable into a socket that takes at most `room` bytes.
    mutating func send(room: Int = .max) -> [UInt8] {
        let taken = machine.withSendable { Array($0.prefix(room)) }
        machine.sent(taken.count, full: taken.count < machine.sendableCount || room == 0)
        return taken
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test mutating func pipelinedRequestsRunInOrderAndRepliesGoOutTogether() {
        read([["PING"], ["ECHO", "a"], ["TIME"]])
        let (ran, then) = runAlone()
        #expect(ran == ["PING", "ECHO", "TIME"])
        #expect(then == .send)
        #expect(Self.text(send()) == "+PING\r\n+ECHO\r\n+TIME\r\n")
        #expect(next() == .wait)
        #expect(machine.unsentCount == 0)
    }

    @Test mutating func consecutiveWritesAreStagedAsOneGroupAndLaterRequestsWaitForThem() {
        read([["SET", "a", "1"], ["SET", "b", "2"], ["PING"]])
        #expect(next() == .stage([Self.argv("SET", "a", "1"), Self.argv("SET", "b", "2")], [Self.set, Self.set]))
        // While the batch is written, more bytes come: nothing runs before the batch's replies.
        read([["SET", "c", "3"]])
        #expect(next() == .wait)
        #expect(machine.waiting == .stagedWrites)
        let start = machine.position
        machine.output.simpleString("OK")
        machine.output.simpleString("OK")
        machine.stagedWritesDone(.init(), from: start)
        let (ran, then) = runAlone()
        #expect(ran == ["PING"])
        #expect(then == .stage([Self.argv("SET", "c", "3")], [Self.set]))
        #expect(next() == .send)
        #expect(Self.text(send()) == "+OK\r\n+OK\r\n+PING\r\n")
    }

    @Test mutating func aGroupEndsAtTheFirstRequestRoutedOtherwise() {
        read([["GET", "a"], ["GET", "b"], ["PING"], ["GET", "c"]])
        #expect(next() == .read([Self.argv("GET", "a"), Self.argv("GET", "b")], stopPast: Machine.flushThreshold))
        // Only the first was answered (its value was big): the second runs later, still first.
        machine.output.bulk("x")
        machine.readDone(answered: 1)
        #expect(next() == .read([Self.argv("GET", "b")], stopPast: Machine.flushThreshold))
        machine.output.bulk("y")
        machine.readDone(answered: 1)
        let (ran, then) = runAlone()
        #expect(ran == ["PING"])
        #expect(then == .read([Self.argv("GET", "c")], stopPast: Machine.flushThreshold))
    }

    @Test mutating func underAppendfsyncAlwaysRepliesWaitForTheSyncOfTheirRound() {
        read([["PING"], ["INCR", "n"], ["PING"]])
        // PING alone, then a write whose reply (and everything after it) waits for the sync.
        guard case .run = next() else { Issue.record("expected run"); return }
        machine.output.simpleString("PONG")
        machine.ran(.init(), from: 0)
        guard case .run = next() else { Issue.record("expected run"); return }
        let held = machine.position
        machine.output.integer(1)
        machine.ran(.init(holdsForSync: true), from: held)
        guard case .run = next() else { Issue.record("expected run"); return }
        machine.output.simpleString("PONG")
        machine.ran(.init(), from: machine.position - 7)
        #expect(next() == .requestSync)
        // What came before the write may go; the write's reply and the later PONG may not.
        #expect(next() == .send)
        #expect(Self.text(send()) == "+PONG\r\n")
        #expect(next() == .wait)
        #expect(machine.holdsReplies)
        #expect(!machine.wantsWritable)  // nothing to wait for from the socket
        machine.syncDone(ok: true)
        #expect(next() == .send)
        #expect(Self.text(send()) == ":1\r\n+PONG\r\n")
        #expect(next() == .wait)
    }

    @Test mutating func aFailedSyncClosesRatherThanAcknowledge() {
        read([["INCR", "n"]])
        guard case .run = next() else { Issue.record("expected run"); return }
        machine.output.integer(1)
        machine.ran(.init(holdsForSync: true), from: 0)
        #expect(next() == .requestSync)
        #expect(next() == .wait)
        machine.syncDone(ok: false)
        #expect(next() == .close(reason: "the WAL sync covering its writes failed"))
        #expect(machine.closed)
    }

    @Test mutating func aDeferredReplyHoldsTheRequestsAfterIt() {
        read([["BGSAVE"], ["PING"]])
        guard case .run = next() else { Issue.record("expected run"); return }
        machine.ran(.init(waits: .deferred), from: 0)
        #expect(next() == .wait)
        read([["ECHO", "x"]])
        #expect(next() == .wait)
        let start = machine.position
        machine.output.simpleString("Background saving started")
        machine.deferredDone(.init(), from: start)
        let (ran, then) = runAlone()
        #expect(ran == ["PING", "ECHO"])
        #expect(then == .send)
        #expect(Self.text(send()) == "+Background saving started\r\n+PING\r\n+ECHO\r\n")
    }

    @Test mutating func aLongRequestWaitsOffTheWorkerAndAParkedOneUntilServed() {
        read([["DBSIZE"], ["BLPOP", "q", "0"], ["PING"]])
        #expect(next() == .runLong(Self.argv("DBSIZE"), nil))
        #expect(next() == .wait)
        machine.output.integer(7)
        machine.deferredDone(.init(), from: 0)
        guard case .run = next() else { Issue.record("expected run"); return }
        machine.ran(.init(waits: .parked), from: machine.position)
        #expect(next() == .send)  // DBSIZE's reply goes; PING waits for the pop
        #expect(Self.text(send()) == ":7\r\n")
        #expect(next() == .wait)
        let start = machine.position
        machine.output.simpleString("served")
        machine.unparked(.init(), from: start)
        let (ran, _) = runAlone()
        #expect(ran == ["PING"])
    }

    @Test mutating func aProtocolErrorIsAnsweredAfterTheGoodRequestsBeforeItThenCloses() {
        var bytes = Self.wire([["PING"], ["ECHO", "a"]])
        bytes += Array("*1\r\n$x\r\n".utf8)
        let ok = bytes.withUnsafeBytes { machine.bytesRead($0, queryLimit: 1 << 30) }
        #expect(ok)
        let (ran, then) = runAlone()
        #expect(ran == ["PING", "ECHO"])
        guard case .protocolError = then else { Issue.record("expected protocol error, got \(then)"); return }
        #expect(next() == .send)
        let sent = Self.text(send())
        #expect(sent.hasPrefix("+PING\r\n+ECHO\r\n-ERR Protocol error"))
        #expect(next() == .close(reason: nil))
    }

    @Test mutating func aClientThatStopsReadingStopsRunningThenIsClosedAtTheOutputLimit() {
        context.outputLimit = 4 << 20
        let big = String(repeating: "v", count: 600 << 10)
        read(Array(repeating: ["GETBIG"], count: 20))
        // The socket takes nothing: after about flushThreshold of replies, nothing more runs.
        var ran = 0
        loop: while true {
            switch next() {
            case .run:
                machine.output.bulk(big)
                machine.ran(.init(), from: machine.position)
                ran += 1
            case .send:
                _ = send(room: 0)
            default:
                break loop
            }
        }
        #expect(ran == 2)
        #expect(machine.wantsWritable)
        // The socket takes some: more run, and still at most about a threshold waits.
        machine.writable()
        #expect(next() == .send)
        _ = send(room: 700 << 10)
        guard case .run = next() else { Issue.record("expected a run after the client read"); return }
        // A client that piles up past the limit is closed.
        machine.output.bulk(String(repeating: "w", count: 5 << 20))
        machine.ran(.init(), from: machine.position)
        guard case .close(let reason?) = next() else { Issue.record("expected close"); return }
        #expect(reason.contains("client-output-buffer-limit"))
    }

    @Test mutating func aStrangerThatNeverReadsIsClosedBeforeAuthentication() {
        context.authenticated = false
        read(Array(repeating: ["PING"], count: 10))
        machine.output.bytes += Array(repeating: UInt8(ascii: "x"), count: Machine.unauthenticatedBufferLimit + 1)
        guard case .close(let reason?) = next() else { Issue.record("expected close"); return }
        #expect(reason.contains("before AUTH"))
    }

    @Test mutating func aSubscriberPastThePubSubLimitIsClosedOnceTheSocketIsFull() {
        context.subscribed = true
        machine.output.bytes += Array(repeating: UInt8(ascii: "m"), count: Machine.Context().pubsubOutputLimit + 2000)
        #expect(next() == .send)
        _ = send(room: 1000)
        guard case .close(let reason?) = next() else { Issue.record("expected close"); return }
        #expect(reason.contains("pub/sub"))
    }

    @Test mutating func closeAfterReplyClosesOnceTheRepliesAreSent() {
        read([["QUIT"], ["PING"]])
        guard case .run = next() else { Issue.record("expected run"); return }
        machine.output.simpleString("OK")
        machine.ran(.init(closeAfterReply: true), from: 0)
        #expect(next() == .send)
        _ = send(room: 2)
        #expect(next() == .wait)  // the socket is full: the rest of +OK waits
        machine.writable()
        #expect(next() == .send)
        #expect(Self.text(send()) == "K\r\n")
        #expect(next() == .close(reason: nil))  // PING never runs
    }

    @Test mutating func aPeerThatLeftIsClosedAfterItsRequestsRan() {
        read([["PING"]])
        machine.peerClosed()
        let (ran, then) = runAlone()
        #expect(ran == ["PING"])
        #expect(then == .close(reason: nil))
    }

    @Test mutating func clientPauseHoldsTheRequestUntilRetried() {
        var paused = true
        read([["PING"]])
        let route: ([[UInt8]]) -> Machine.Step = { _ in paused ? .paused(milliseconds: 50) : .alone(nil) }
        #expect(machine.next(context, route: route) == .retryAfter(milliseconds: 50))
        #expect(machine.next(context, route: route) == .wait)
        paused = false
        machine.pauseEnded()
        #expect(machine.next(context, route: route) == .run(Self.argv("PING"), nil))
    }

    @Test mutating func theQueryBufferLimitIsEnforcedOnRead() {
        let bytes = Array("*1\r\n$100\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 50)
        let ok = bytes.withUnsafeBytes { machine.bytesRead($0, queryLimit: 40) }
        #expect(!ok)
    }
}
