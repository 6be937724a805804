#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Hot values in memory, in front of RocksDB (`value-cache-size`): a GET of a key read recently
/// is answered from here, without a memtable search or a block-cache lookup.
///
/// An entry holds a key's stored bytes (header and payload, as RocksDB returned them, so expiry
/// and type are decided exactly as for a read from RocksDB), or no bytes for a key RocksDB did
/// not have (a cache-aside client reads missing keys often), and the key's cache version
/// (`KeyLocks.cacheVersion`) before that read. Every write to a key moves that version while
/// holding the key's stripe (`KeyLocks.changed`, what WATCH relies on): a write that names its
/// key moves its key slot's version (1 slot in 262,144), one that names only stripes (EXEC,
/// scripts, a replica's applied batches) its stripe's, and FLUSHDB, DELRANGE, CF.DROP and a
/// restore move every stripe's. So an entry is valid exactly while the key's version is
/// unchanged and no writer holds its stripe: `lookup` takes the stripe with a try-lock (a writer
/// in the middle of its write, landed but not yet counted, makes it fall back to RocksDB) and
/// compares. Nothing invalidates entries one by one, and no write path knows about the cache.
///
/// A big write committed in pieces (`KeyLocks`' claims) moves its versions only when it ends,
/// so while any claim is open the cache is not used at all. Reads through a snapshot or inside a
/// transaction never use it.
///
/// A key enters on its second read in a while, not its first: each shard remembers the hashes
/// of recent misses it did not admit (`recentMisses`, direct-mapped, about one slot per entry
/// the shard can hold, 8 bytes each, so a hot set the size of the cache gets in), so a scan or a uniform
/// read of many keys, each read once, costs a hash store per read instead of a copy and an
/// eviction. Eviction is CLOCK per shard: a hit marks its entry, and the hand passing over the
/// entries spares marked ones once. Sizes are counted as the key and value bytes plus
/// `entryOverhead`, an estimate of the table's own memory per entry.
///
/// `@unchecked Sendable`: each shard's state is only touched under its mutex; the counters are
/// atomics.
final class ValueCache: @unchecked Sendable {
    /// Bytes counted per entry besides its key and value (array headers, the slot, the index).
    static let entryOverhead = 160
    /// Values larger than this are never cached (one entry must not evict thousands).
    static let largestValue = 64 * 1024
    static let shardCount = 64
    /// Remembered misses per shard, at least (8 bytes each).
    static let fewestRecentMissSlots = 1024
    /// Bytes of capacity per remembered miss: about one entry of a small value.
    static let bytesPerRecentMiss = 256

    private struct Key: Hashable {
        let family: ObjectIdentifier
        let bytes: [UInt8]
        /// The key's FNV-1a hash with its family's salt (`KeyLocks.hash`): computed once per
        /// request and used for the stripe, the shard and the table.
        let hash: UInt64

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
        static func == (a: Key, b: Key) -> Bool { a.hash == b.hash && a.family == b.family && a.bytes == b.bytes }
    }

    private struct Slot {
        var key: Key?
        var version: UInt64 = 0
        var stored: [UInt8] = []
        var marked = false
        var size: Int { (key?.bytes.count ?? 0) + stored.count + ValueCache.entryOverhead }
    }

    private struct Shard {
        var index: [Key: Int] = [:]
        var slots: [Slot] = []
        var free: [Int] = []
        var hand = 0
        var bytes = 0
        /// Mixed hashes of keys missed once and not admitted (0: empty).
        var recentMisses: [UInt64]

        init(capacity: Int) {
            recentMisses = [UInt64](repeating: 0, count: Shard.recentMissSlots(for: capacity))
        }

        /// A power of two, about one per entry a shard of `capacity` bytes holds.
        static func recentMissSlots(for capacity: Int) -> Int {
            var slots = ValueCache.fewestRecentMissSlots
            while slots * ValueCache.bytesPerRecentMiss < capacity { slots *= 2 }
            return slots
        }

        func recentMissSlot(_ mixed: UInt64) -> Int {
            Int(truncatingIfNeeded: mixed >> 6) & (recentMisses.count - 1)
        }

        mutating func remove(at i: Int) {
            guard let key = slots[i].key else { return }
            bytes -= slots[i].size
            index.removeValue(forKey: key)
            slots[i] = Slot()
            free.append(i)
        }

        /// Evicts until `needed` more bytes fit in `capacity`; false when they cannot.
        mutating func makeRoom(_ needed: Int, capacity: Int) -> Bool {
            guard needed <= capacity else { return false }
            var sweeps = 0
            while bytes + needed > capacity && !index.isEmpty && sweeps < 2 * slots.count + 1 {
                if hand >= slots.count { hand = 0 }
                if slots[hand].key != nil {
                    if slots[hand].marked {
                        slots[hand].marked = false
                    } else {
                        remove(at: hand)
                    }
                }
                hand += 1
                sweeps += 1
            }
            return bytes + needed <= capacity
        }

        /// Empties the shard, its remembered misses sized for `capacity`.
        mutating func clear(capacity: Int) {
            self = Shard(capacity: capacity)
        }
    }

    private final class ShardBox: Sendable {
        let state: Mutex<Shard>
        init(capacity: Int) { state = Mutex(Shard(capacity: capacity)) }
    }
    private let shards: [ShardBox]
    /// Bytes allowed over all shards; 0 turns the cache off.
    private let capacity: Atomic<Int>
    let hits = Atomic<Int>(0)
    let misses = Atomic<Int>(0)
    let evictions = Atomic<Int>(0)

    init(capacity: Int) {
        self.capacity = Atomic(max(0, capacity))
        shards = (0..<ValueCache.shardCount).map { _ in ShardBox(capacity: max(0, capacity) / ValueCache.shardCount) }
    }

    var isEnabled: Bool { capacity.load(ordering: .relaxed) > 0 }
    var capacityBytes: Int { capacity.load(ordering: .relaxed) }
    private var shardCapacity: Int { capacity.load(ordering: .relaxed) / ValueCache.shardCount }

    /// FNV-1a's high bits hardly move with a key's last bytes (k1, k2, ...): mixed first.
    private static func mixed(_ hash: UInt64) -> UInt64 {
        var h = hash ^ (hash >> 33)
        h = h &* 0xff51_afd7_ed55_8ccd
        return h ^ (h >> 33)
    }

    private func shard(_ hash: UInt64) -> Int {
        Int(truncatingIfNeeded: ValueCache.mixed(hash)) & (ValueCache.shardCount - 1)
    }

    /// What a lookup found.
    enum Found {
        /// The key's stored bytes, current; empty when the key is missing.
        case hit([UInt8])
        /// Not here: read RocksDB, then `fill`.
        case miss
        /// A writer holds the key's stripe (or a big write is open): read RocksDB and do not
        /// fill, since what it reads is about to be stale.
        case busy
    }

    /// The stored bytes of `key` if the cache holds them at the key's current version and no
    /// writer holds the stripe now. A value that has expired by `now` is dropped and missed: the
    /// read from RocksDB then reaps it as before.
    func lookup(_ key: [UInt8], in family: Family, hash: UInt64, locks: KeyLocks, now: Int64) -> Found {
        guard isEnabled else { return .miss }
        guard !locks.hasClaims else { return .busy }
        let k = Key(family: ObjectIdentifier(family), bytes: key, hash: hash)
        let mixed = ValueCache.mixed(hash) | 1
        let found: [UInt8]?? = locks.withKeyIfFree(hash: hash) { version in
            shards[shard(hash)].state.withLock { s -> [UInt8]? in
                guard let i = s.index[k] else { return nil }
                let stored = s.slots[i].stored
                let expired = !stored.isEmpty && (ValueFormat.header(of: stored)?.isExpired(now: now) ?? true)
                guard s.slots[i].version == version, !expired else {
                    // Written since, or expired: it will never be valid again. A key written
                    // since that was hit while cached is admitted again by its next read; one
                    // that was not (its stripe is written faster than it is read) must be read
                    // twice again, so a busy stripe does not churn copies.
                    let wasHit = s.slots[i].marked
                    s.remove(at: i)
                    if !expired && wasHit { s.recentMisses[s.recentMissSlot(mixed)] = mixed }
                    return nil
                }
                s.slots[i].marked = true
                return s.slots[i].stored
            }
        }
        guard let found, let value = found else {
            misses.add(1, ordering: .relaxed)
            return found == nil ? .busy : .miss
        }
        hits.add(1, ordering: .relaxed)
        return .hit(value)
    }

    /// Remembers the stored bytes `raw` of `key` (nil: RocksDB has no such key), read from
    /// RocksDB after its stripe's version was `version` (read before the read, with
    /// `KeyLocks.cacheVersion`).
    func fill(_ key: [UInt8], in family: Family, hash: UInt64, version: UInt64, raw: UnsafeRawBufferPointer?, locks: KeyLocks) {
        guard (raw?.count ?? 0) <= ValueCache.largestValue, isEnabled, !locks.hasClaims else { return }
        let k = Key(family: ObjectIdentifier(family), bytes: key, hash: hash)
        let capacity = shardCapacity
        let mixed = ValueCache.mixed(hash) | 1
        var evicted = 0
        shards[shard(hash)].state.withLock { s in
            if let i = s.index[k] {
                let slot = Slot(key: k, version: version, stored: raw.map { Array($0) } ?? [])
                s.bytes -= s.slots[i].size
                s.slots[i] = slot
                s.bytes += slot.size
                return
            }
            // First miss in a while: remember it, admit it the next time.
            let remembered = s.recentMissSlot(mixed)
            guard s.recentMisses[remembered] == mixed else {
                s.recentMisses[remembered] = mixed
                return
            }
            s.recentMisses[remembered] = 0
            let slot = Slot(key: k, version: version, stored: raw.map { Array($0) } ?? [])
            let before = s.index.count
            guard s.makeRoom(slot.size, capacity: capacity) else { return }
            evicted = before - s.index.count
            let i: Int
            if let f = s.free.popLast() {
                i = f
                s.slots[i] = slot
            } else {
                i = s.slots.count
                s.slots.append(slot)
            }
            s.index[k] = i
            s.bytes += slot.size
        }
        if evicted > 0 { evictions.add(evicted, ordering: .relaxed) }
    }

    /// Sets the capacity; a smaller one evicts down to it, 0 empties the cache.
    func resize(to bytes: Int) {
        capacity.store(max(0, bytes), ordering: .relaxed)
        let per = shardCapacity
        for shard in shards {
            shard.state.withLock { s in
                if per == 0 {
                    s.clear(capacity: 0)
                    return
                }
                _ = s.makeRoom(0, capacity: per)  // evicts down to the new size
                let slots = Shard.recentMissSlots(for: per)
                if slots != s.recentMisses.count { s.recentMisses = [UInt64](repeating: 0, count: slots) }
            }
        }
    }

    /// Forgets every entry (the database was replaced).
    func removeAll() {
        let per = shardCapacity
        for shard in shards { shard.state.withLock { $0.clear(capacity: per) } }
    }

    /// Bytes counted and entries held now.
    var usage: (bytes: Int, entries: Int) {
        shards.reduce(into: (0, 0)) { total, shard in
            shard.state.withLock { s in
                total.0 += s.bytes
                total.1 += s.index.count
            }
        }
    }
}
