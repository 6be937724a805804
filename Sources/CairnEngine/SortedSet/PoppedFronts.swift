import Rocks
import Synchronization

/// Where the live entries of a collection that is being popped begin (ZPOPMIN, SPOP) or end
/// (ZPOPMAX), so the next pop seeks there instead of stepping over the tombstones of every
/// entry popped before it. Those tombstones stay in the memtable and the upper levels until
/// compaction reaches them; without the bound, popping a million members from the front
/// costs O(popped) per pop. (A range deletion over the popped span does not help with
/// RocksDB 7.8.3: every read then re-fragments all the memtable's range tombstones, and pops
/// fell to a few per second after a thousand of them; `scripts/bench-shrink` measures.)
///
/// A bound is only a hint kept in memory, per collection version and index (the tag prefix of
/// the members-family key), for the database being served (a restore or reopen swaps it and
/// the hints are dropped): a write that puts an entry beyond it drops it
/// (`noteInserts`), pops move it only outside EXEC (a discarded transaction must not leave it
/// past live entries), and a missing hint means "scan from the start". Callers hold the
/// collection's key lock.
final class PoppedFronts: Sendable {
    static let shared = PoppedFronts()

    private struct Bounds {
        /// Every entry below this key is gone.
        var lower: [UInt8]? = nil
        /// Every entry at or above this key is gone.
        var upper: [UInt8]? = nil
    }

    /// The bounds by index prefix, for the database `owner` (a weak reference, so a swapped-in
    /// database at a reused address is still told apart).
    private struct Table: @unchecked Sendable {
        weak var owner: Database?
        var bounds: [[UInt8]: Bounds] = [:]
    }

    private let table = Mutex(Table())
    /// Hints kept at most; past it they are all dropped (each costs only a slower next pop).
    private let capacity = 4096

    private func withBounds<R>(_ call: Call, _ body: (inout [[UInt8]: Bounds]) -> R) -> R {
        let database = call.database
        return table.withLock { t in
            if t.owner !== database {
                t.owner = database
                t.bounds.removeAll()
            }
            return body(&t.bounds)
        }
    }

    /// The tag prefix of one collection's index: members-family keys start with it.
    static func prefix(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ tag: MemberKeys.Tag) -> [UInt8] {
        MemberKeys.prefix(family: call.family.name, key: key, version: meta.version) + [tag.rawValue]
    }

    /// The sub-key range (lower inclusive, upper exclusive) still worth scanning.
    func range(_ call: Call, _ prefix: [UInt8]) -> (lower: [UInt8]?, upper: [UInt8]?) {
        let b = withBounds(call) { $0[prefix] }
        return (b?.lower, b?.upper)
    }

    /// After popping from the front through sub-key `last`: everything up to it is gone.
    func poppedFront(_ call: Call, _ prefix: [UInt8], through last: [UInt8]) {
        guard call.session.transaction == nil else { return }
        withBounds(call) { all in
            if all.count >= capacity && all[prefix] == nil { all.removeAll(keepingCapacity: true) }
            all[prefix, default: Bounds()].lower = last + [0]
        }
    }

    /// After popping from the back down to sub-key `first`: everything from it on is gone.
    func poppedBack(_ call: Call, _ prefix: [UInt8], from first: [UInt8]) {
        guard call.session.transaction == nil else { return }
        withBounds(call) { all in
            if all.count >= capacity && all[prefix] == nil { all.removeAll(keepingCapacity: true) }
            all[prefix, default: Bounds()].upper = first
        }
    }

    /// Forgets every bound: for a writer that puts members without going through the set and
    /// sorted-set commands (a replication applier would).
    func forgetAll() {
        table.withLock { $0.bounds.removeAll() }
    }

    /// Entries `subs` of `tag` of the collection `change` stages are (or may be) written: a
    /// bound one of them falls outside of is dropped.
    func noteInserts(_ call: Call, _ change: CollectionChange, _ tag: MemberKeys.Tag, _ subs: [[UInt8]]) {
        guard !subs.isEmpty else { return }
        withBounds(call) { all in
            guard !all.isEmpty, var b = all[change.prefix + [tag.rawValue]] else { return }
            let prefix = change.prefix + [tag.rawValue]
            for sub in subs {
                if let lower = b.lower, sub.lexicographicallyPrecedes(lower) { b.lower = nil }
                if let upper = b.upper, !sub.lexicographicallyPrecedes(upper) { b.upper = nil }
            }
            all[prefix] = (b.lower == nil && b.upper == nil) ? nil : b
        }
    }
}
