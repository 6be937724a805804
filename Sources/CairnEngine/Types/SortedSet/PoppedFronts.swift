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
/// (`noteInserts`), and a missing hint means "scan from the start". Inside a transaction (EXEC,
/// a script, a batched run of pops) a pop moves the transaction's own bound, which its later
/// pops use and `publish` makes shared once the batch committed: a transaction that does not
/// commit must not leave a bound past live entries. Callers hold the collection's key lock.
final class PoppedFronts: Sendable {
    static let shared = PoppedFronts()

    struct Bounds {
        /// Every entry below this key is gone.
        var lower: [UInt8]? = nil
        /// Every entry at or above this key is gone.
        var upper: [UInt8]? = nil
    }

    /// The bounds by index prefix, for the database `owner` (a weak reference, so a swapped-in
    /// database at a reused address is still told apart).
    private struct Table: @unchecked Sendable {
        weak var owner: Database?
        var bounds: [ByteKey: Bounds] = [:]
    }

    private let table = Mutex(Table())
    /// Hints kept at most; past it they are all dropped (each costs only a slower next pop).
    private let capacity = 4096

    private func withBounds<R>(_ database: Database, _ body: (inout [ByteKey: Bounds]) -> R) -> R {
        table.withLock { t in
            if t.owner !== database {
                t.owner = database
                t.bounds.removeAll()
            }
            return body(&t.bounds)
        }
    }

    /// The tag prefix of one collection's index: members-family keys start with it.
    static func prefix(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ tag: MemberKeys.Tag) -> [UInt8] {
        meta.memberPrefix(family: call.family.name, key: key) + [tag.rawValue]
    }

    /// The sub-key range (lower inclusive, upper exclusive) still worth scanning.
    func range(_ call: Call, _ prefix: [UInt8]) -> (lower: [UInt8]?, upper: [UInt8]?) {
        let b = call.session.transaction?.poppedBounds[ByteKey(prefix)] ?? withBounds(call.database) { $0[ByteKey(prefix)] }
        return (b?.lower, b?.upper)
    }

    /// After popping from the front through sub-key `last`: everything up to it is gone.
    func poppedFront(_ call: Call, _ prefix: [UInt8], through last: [UInt8]) {
        moved(call, prefix) { $0.lower = last + [0] }
    }

    /// After popping from the back down to sub-key `first`: everything from it on is gone.
    func poppedBack(_ call: Call, _ prefix: [UInt8], from first: [UInt8]) {
        moved(call, prefix) { $0.upper = first }
    }

    private func moved(_ call: Call, _ prefix: [UInt8], _ change: (inout Bounds) -> Void) {
        let key = ByteKey(prefix)
        if let tx = call.session.transaction {
            var b = tx.poppedBounds[key] ?? withBounds(call.database) { $0[key] } ?? Bounds()
            change(&b)
            tx.poppedBounds[key] = b
            return
        }
        withBounds(call.database) { all in
            if all.count >= capacity && all[key] == nil { all.removeAll(keepingCapacity: true) }
            change(&all[key, default: Bounds()])
        }
    }

    /// Makes the bounds a transaction's pops moved shared, once its batch committed (under the
    /// locks of its keys).
    func publish(_ tx: Transaction, database: Database) {
        guard !tx.poppedBounds.isEmpty else { return }
        withBounds(database) { all in
            for (key, b) in tx.poppedBounds {
                if all.count >= capacity && all[key] == nil { all.removeAll(keepingCapacity: true) }
                all[key] = b
            }
        }
    }

    /// Forgets every bound: for a writer that puts members without going through the set and
    /// sorted-set commands (a replication applier would).
    func forgetAll() {
        table.withLock { $0.bounds.removeAll() }
    }

    /// Entries `subs` of `tag` of the collection `change` stages are (or may be) written: a
    /// bound one of them falls outside of is dropped (the shared one, and the running
    /// transaction's).
    func noteInserts(_ call: Call, _ change: CollectionChange, _ tag: MemberKeys.Tag, _ subs: [[UInt8]]) {
        guard !subs.isEmpty else { return }
        func dropped(_ b: inout Bounds) {
            for sub in subs {
                if let lower = b.lower, sub.lexicographicallyPrecedes(lower) { b.lower = nil }
                if let upper = b.upper, !sub.lexicographicallyPrecedes(upper) { b.upper = nil }
            }
        }
        var key: ByteKey? = nil  // built only when some bound exists
        if let tx = call.session.transaction, !tx.poppedBounds.isEmpty {
            let k = key ?? ByteKey(change.prefix + [tag.rawValue])
            key = k
            if var b = tx.poppedBounds[k] {
                dropped(&b)
                // With both sides gone, the shared bound (checked the same way below) applies.
                tx.poppedBounds[k] = (b.lower == nil && b.upper == nil) ? nil : b
            }
        }
        withBounds(call.database) { all in
            guard !all.isEmpty else { return }
            let k = key ?? ByteKey(change.prefix + [tag.rawValue])
            guard var b = all[k] else { return }
            dropped(&b)
            all[k] = (b.lower == nil && b.upper == nil) ? nil : b
        }
    }
}
