public import RESP

/// A blocking command that found nothing to pop and waits: what its connection parks
/// (`Session.blocked`), retries when woken, and answers when the wait ends.
///
/// The request passed the admission step once, when it first ran; a retry re-runs only its
/// pop (`attempt`), on the connection's queue, with a fresh `Call` (a fresh clock reading).
/// `@unchecked Sendable`: used only on its connection's queue.
public final class BlockRequest: @unchecked Sendable {
    let family: Family
    let argv: [[UInt8]]
    let name: String
    let keys: [[UInt8]]
    /// Whether the command writes (BLPOP, XREADGROUP): on a node that became a replica its wait
    /// ends with an error instead of writing there (`Engine.retryBlocked`).
    let writes: Bool
    /// How long to wait in milliseconds; 0 waits until served, unblocked or disconnected.
    public let timeoutMilliseconds: Int64
    /// Tries the pop; writes the reply and returns true when it served the client.
    let attempt: Attempt
    /// The reply when the wait ends without an element: a null (array) in Redis's form.
    let empty: @Sendable (inout RESPWriter) -> Void

    /// `retrying` is false on the first try (a key of the wrong type is an error) and true on
    /// retries (it is skipped, as Redis serves blocked clients only from keys of their type).
    typealias Attempt = @Sendable (_ call: Call, _ out: inout RESPWriter, _ retrying: Bool) throws(CommandError) -> Bool

    init(call: Call, keys: [[UInt8]], timeoutMilliseconds: Int64, attempt: @escaping Attempt,
         empty: @escaping @Sendable (inout RESPWriter) -> Void) {
        self.family = call.family
        self.argv = call.argv
        self.name = call.name
        self.keys = keys
        self.writes = call.engine.table.find(call.name)?.flags.contains(.write) ?? false
        self.timeoutMilliseconds = timeoutMilliseconds
        self.attempt = attempt
        self.empty = empty
    }

    /// Why a wait ended without an element.
    public enum Ending: Sendable {
        case timedOut
        /// CLIENT UNBLOCK: with the timeout reply, or with the UNBLOCKED error.
        case unblocked(withError: Bool)
        /// The connection closed: nothing is answered.
        case disconnected
    }
}

extension Call {
    /// Runs a blocking pop: `attempt` now; when it finds nothing, inside MULTI/EXEC or a script
    /// (session.transaction) or where the server cannot park the client, answers `empty` as
    /// Redis does there; otherwise leaves the request in the outcome (`Outcome.blocked`) for the server to
    /// park (nothing is written: the reply comes when the wait ends).
    func block(keys: [[UInt8]], timeout: Int64, out: inout RESPWriter,
               empty: @escaping @Sendable (inout RESPWriter) -> Void,
               attempt: @escaping BlockRequest.Attempt) throws(CommandError) {
        if try attempt(self, &out, false) { return }
        guard session.transaction == nil, session.canDefer else {
            empty(&out)
            return
        }
        session.outcome.blocked = BlockRequest(call: self, keys: keys, timeoutMilliseconds: timeout, attempt: attempt, empty: empty)
    }

    /// A blocking command's timeout argument, in seconds with decimals, as milliseconds (0:
    /// forever), read and checked as Redis 7.0 does (`timeout(_:_:)`).
    func blockTimeout(_ i: Int) throws(CommandError) -> Int64 {
        // Longer than a century waits as long as forever does. (Redis 7.0 adds the timeout to
        // the clock unchecked: one past the 64-bit range there wraps and times out at once.)
        min(try timeout(i, .seconds), 100 * 365 * 86_400_000)
    }
}

extension Engine {
    /// The server parks `session`'s blocked request: registers it for its keys and marks the
    /// client blocked (CLIENT LIST `flags=b`). `wake` and `unblock` must hop onto the
    /// connection's queue. The server then retries once (`retryBlocked`), as a wake-up would.
    public func park(_ session: Session, _ request: BlockRequest,
                     wake: @escaping @Sendable () -> Void, unblock: @escaping @Sendable (Bool) -> Void) {
        session.record.state.withLock { $0.blocked = true }
        blocking.add(session.id, family: request.family.name, keys: request.keys, wake: wake, unblock: unblock)
    }

    /// Retries a parked request's pop; when it serves the client, writes the reply, unparks it
    /// and returns the outcome (nil while it still waits). An error (a destination of the wrong
    /// type) ends the wait too.
    public func retryBlocked(_ session: Session, _ request: BlockRequest, out: inout RESPWriter) -> Outcome? {
        while true {
            let call = Call(engine: self, session: session, argv: request.argv, name: request.name)
            var served: Bool
            do throws(CommandError) {
                // Demoted while it waited: a replica writes only what its primary sends, so the
                // wait ends as Redis ends it (a read, XREAD, waits on for replicated entries).
                if request.writes && replication.isReplica {
                    throw CommandError("UNBLOCKED", "force unblock from blocking operation, instance state changed (master -> replica?)")
                }
                served = try request.attempt(call, &out, true)
            } catch {
                reply(error, to: &out)
                served = true
            }
            flushEvents(of: session)
            if served {
                unpark(session)
                var outcome = Outcome()
                outcome.wroteToWAL = true
                return outcome
            }
            if !blocking.retryFailed(session.id) { return nil }
        }
    }

    /// Ends a parked request's wait without an element, writing Redis's reply for `ending`.
    public func endBlock(_ session: Session, _ request: BlockRequest, _ ending: BlockRequest.Ending, out: inout RESPWriter) {
        unpark(session)
        switch ending {
        case .timedOut, .unblocked(withError: false): request.empty(&out)
        case .unblocked(withError: true): reply(CommandError("UNBLOCKED", "client unblocked via CLIENT UNBLOCK"), to: &out)
        case .disconnected: break
        }
    }

    private func unpark(_ session: Session) {
        blocking.remove(session.id)
        session.record.state.withLock { $0.blocked = false }
    }

    /// After a transaction's or a script's batch committed: wakes clients blocked on any key
    /// it wrote (its overlay holds every key it staged, per family).
    func wakeBlocked(after tx: Transaction) {
        guard blocking.count > 0 else { return }
        for (familyName, staged) in tx.overlay where familyName != Engine.membersFamilyName {
            blocking.signal(family: familyName, keys: staged.compactMap { $0.value == nil ? nil : $0.key.bytes })
        }
    }
}
