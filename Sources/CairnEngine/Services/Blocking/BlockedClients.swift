import Synchronization

/// The clients parked by a blocking pop (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP), per key in
/// arrival order, and who to wake when a key may have something for them.
///
/// A push (any path that commits a collection: `Call.commit`, EXEC, a script) calls `signal`
/// once its batch is written. Only the first waiter of a key is woken, and it retries its pop
/// on its own connection's queue: served, it leaves and the key is signalled again for the next
/// waiter, so several waiters are served strictly in arrival order from one push of several
/// elements. A waiter already woken and not yet back is remembered as signalled again, so a
/// push landing between its failed retry and its return to waiting is never lost.
public final class BlockedClients: Sendable {
    struct WaitKey: Hashable {
        var family: String
        var key: [UInt8]
    }

    private struct Waiter {
        var keys: [WaitKey]
        /// Woken (or just parked) and retrying: later signals only set `signalledAgain`.
        var retrying = true
        var signalledAgain = false
        let wake: @Sendable () -> Void
        let unblock: @Sendable (_ withError: Bool) -> Void
    }

    private struct State {
        var waiters: [Int64: Waiter] = [:]
        var queues: [WaitKey: [Int64]] = [:]
    }

    private let state = Mutex(State())
    /// Waiters parked: a push with none to wake costs one atomic load.
    private let waiting = Atomic<Int>(0)

    init() {}

    /// How many clients are blocked (INFO clients `blocked_clients`).
    public var count: Int { waiting.load(ordering: .relaxed) }

    /// Parks client `id` on `keys` of `family`, as retrying: its connection retries once right
    /// after parking, which covers a push that landed between the first try and this call.
    func add(_ id: Int64, family: String, keys: [[UInt8]],
             wake: @escaping @Sendable () -> Void, unblock: @escaping @Sendable (Bool) -> Void) {
        var seen = Set<WaitKey>()
        let waitKeys = keys.map { WaitKey(family: family, key: $0) }.filter { seen.insert($0).inserted }
        state.withLock { s in
            s.waiters[id] = Waiter(keys: waitKeys, wake: wake, unblock: unblock)
            for k in waitKeys { s.queues[k, default: []].append(id) }
        }
        waiting.add(1, ordering: .relaxed)
    }

    /// Client `id` stops waiting (served, timed out, unblocked or gone). A waiter that was
    /// woken passes the signal on, so the next one in line looks at what may be left.
    func remove(_ id: Int64) {
        let resignal: [WaitKey] = state.withLock { s in
            guard let w = s.waiters.removeValue(forKey: id) else { return [] }
            for k in w.keys {
                s.queues[k]?.removeAll { $0 == id }
                if s.queues[k]?.isEmpty == true { s.queues[k] = nil }
            }
            waiting.subtract(1, ordering: .relaxed)
            return w.retrying ? w.keys : []
        }
        if !resignal.isEmpty { wake(resignal) }
    }

    /// Client `id`'s retry found nothing: true when it was signalled again meanwhile and must
    /// retry once more, false when it is back to waiting.
    func retryFailed(_ id: Int64) -> Bool {
        state.withLock { s in
            guard var w = s.waiters[id] else { return false }
            defer { s.waiters[id] = w }
            if w.signalledAgain {
                w.signalledAgain = false
                return true
            }
            w.retrying = false
            return false
        }
    }

    /// `keys` of `family` may have something now: wakes the first waiter of each.
    func signal(family: String, keys: some Sequence<[UInt8]>) {
        guard waiting.load(ordering: .relaxed) > 0 else { return }
        wake(keys.map { WaitKey(family: family, key: $0) })
    }

    private func wake(_ keys: [WaitKey]) {
        let wakes: [@Sendable () -> Void] = state.withLock { s in
            keys.compactMap { k in s.queues[k]?.first.flatMap { Self.markWoken($0, in: &s) } }
        }
        for wake in wakes { wake() }
    }

    /// Wakes every waiter (the node became a replica: those blocked in a write end their wait,
    /// `Engine.retryBlocked`).
    func wakeAll() {
        let wakes: [@Sendable () -> Void] = state.withLock { s in
            Array(s.waiters.keys).compactMap { Self.markWoken($0, in: &s) }
        }
        for wake in wakes { wake() }
    }

    /// Marks waiter `id` woken and returns its wake handler, or nil when it is already
    /// retrying (then it is remembered as signalled again) or gone.
    private static func markWoken(_ id: Int64, in s: inout State) -> (@Sendable () -> Void)? {
        guard var w = s.waiters[id] else { return nil }
        defer { s.waiters[id] = w }
        if w.retrying {
            w.signalledAgain = true
            return nil
        }
        w.retrying = true
        return w.wake
    }

    /// CLIENT UNBLOCK: asks client `id`'s connection to end its wait (with the timeout reply,
    /// or the UNBLOCKED error); false when it is not blocked.
    func unblock(_ id: Int64, withError: Bool) -> Bool {
        guard let handler = state.withLock({ $0.waiters[id]?.unblock }) else { return false }
        handler(withError)
        return true
    }
}
