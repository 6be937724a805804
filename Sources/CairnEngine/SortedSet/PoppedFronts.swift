import Synchronization

/// Where the live entries of a collection that is being popped begin (ZPOPMIN, SPOP) or end
/// (ZPOPMAX), so the next pop seeks there instead of stepping over the tombstones of every
/// entry popped before it. Those tombstones stay in the memtable and the upper levels until
/// compaction reaches them; without the bound, popping a million members from the front
/// costs O(popped) per pop. (A range deletion over the popped span does not help with
/// RocksDB 7.8.3: every read then re-fragments all the memtable's range tombstones, and pops
/// fell to a few per second after a thousand of them; `scripts/bench-shrink` measures.)
///
/// A bound is only a hint kept in memory, per database, collection version and index (the tag
/// prefix of the members-family key): a write that puts an entry beyond it drops it
/// (`noteInsert`), pops move it only outside EXEC (a discarded transaction must not leave it
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

    private struct Scope: Hashable {
        let database: ObjectIdentifier
        let prefix: [UInt8]
    }

    private let bounds = Mutex<[Scope: Bounds]>([:])
    /// Hints kept at most; past it they are all dropped (each costs only a slower next pop).
    private let capacity = 4096

    private func scope(_ call: Call, _ prefix: [UInt8]) -> Scope {
        Scope(database: ObjectIdentifier(call.database), prefix: prefix)
    }

    /// The tag prefix of one collection's index: members-family keys start with it.
    static func prefix(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ tag: MemberKeys.Tag) -> [UInt8] {
        MemberKeys.prefix(family: call.family.name, key: key, version: meta.version) + [tag.rawValue]
    }

    /// The sub-key range (lower inclusive, upper exclusive) still worth scanning.
    func range(_ call: Call, _ prefix: [UInt8]) -> (lower: [UInt8]?, upper: [UInt8]?) {
        let b = bounds.withLock { $0[scope(call, prefix)] }
        return (b?.lower, b?.upper)
    }

    /// After popping from the front through sub-key `last`: everything up to it is gone.
    func poppedFront(_ call: Call, _ prefix: [UInt8], through last: [UInt8]) {
        guard call.session.transaction == nil else { return }
        let s = scope(call, prefix)
        bounds.withLock { all in
            if all.count >= capacity && all[s] == nil { all.removeAll(keepingCapacity: true) }
            all[s, default: Bounds()].lower = last + [0]
        }
    }

    /// After popping from the back down to sub-key `first`: everything from it on is gone.
    func poppedBack(_ call: Call, _ prefix: [UInt8], from first: [UInt8]) {
        guard call.session.transaction == nil else { return }
        let s = scope(call, prefix)
        bounds.withLock { all in
            if all.count >= capacity && all[s] == nil { all.removeAll(keepingCapacity: true) }
            all[s, default: Bounds()].upper = first
        }
    }

    /// Entries `subs` are (or may be) written: a bound one of them falls outside of is dropped.
    func noteInserts(_ call: Call, _ prefix: [UInt8], _ subs: [[UInt8]]) {
        guard !subs.isEmpty else { return }
        let s = scope(call, prefix)
        bounds.withLock { all in
            guard !all.isEmpty, var b = all[s] else { return }
            for sub in subs {
                if let lower = b.lower, sub.lexicographicallyPrecedes(lower) { b.lower = nil }
                if let upper = b.upper, !sub.lexicographicallyPrecedes(upper) { b.upper = nil }
            }
            all[s] = (b.lower == nil && b.upper == nil) ? nil : b
        }
    }
}
