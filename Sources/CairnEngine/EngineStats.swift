public import Synchronization

/// Counters INFO reports. Relaxed atomics: each is an independent tally.
public final class EngineStats: Sendable {
    public let commandsProcessed = Atomic<Int>(0)
    public let connectionsReceived = Atomic<Int>(0)
    public let rejectedConnections = Atomic<Int>(0)
    public let keyspaceHits = Atomic<Int>(0)
    public let keyspaceMisses = Atomic<Int>(0)
    public let expiredKeys = Atomic<Int>(0)
    public let errorReplies = Atomic<Int>(0)
    public let netInputBytes = Atomic<Int>(0)
    public let netOutputBytes = Atomic<Int>(0)
    public let walSyncs = Atomic<Int>(0)
    /// Server-side iterators (ITER.OPEN) alive now; a gauge, not reset by CONFIG RESETSTAT.
    public let openIterators = Atomic<Int>(0)
    /// Expired values the compaction filter dropped (see `ExpiryCompactionFilter`).
    public let expiredValuesCompacted = Atomic<Int>(0)
    /// Range compactions the expiry sweep ran after emptying a large part of a family.
    public let sweepCompactions = Atomic<Int>(0)

    public init() {}

    func reset() {
        commandsProcessed.store(0, ordering: .relaxed)
        connectionsReceived.store(0, ordering: .relaxed)
        rejectedConnections.store(0, ordering: .relaxed)
        keyspaceHits.store(0, ordering: .relaxed)
        keyspaceMisses.store(0, ordering: .relaxed)
        expiredKeys.store(0, ordering: .relaxed)
        errorReplies.store(0, ordering: .relaxed)
        netInputBytes.store(0, ordering: .relaxed)
        netOutputBytes.store(0, ordering: .relaxed)
        walSyncs.store(0, ordering: .relaxed)
        sweepCompactions.store(0, ordering: .relaxed)
        expiredValuesCompacted.store(0, ordering: .relaxed)
    }
}

extension Atomic where Value == Int {
    @inline(__always)
    public func increment(by n: Int = 1) { _ = add(n, ordering: .relaxed) }
    public var value: Int { load(ordering: .relaxed) }
}
