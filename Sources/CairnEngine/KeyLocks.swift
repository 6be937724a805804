#if canImport(Glibc)
import Glibc
#endif

/// Striped locks over keys, each stripe with a modification counter.
///
/// Every write to a key holds its stripe's lock, so a read-modify-write (INCR, APPEND, SET NX)
/// never interleaves with another write to the same key, as Redis's single thread guarantees.
/// The counter moves only when a write really changed a key of the stripe (`changed(_:in:)`,
/// called by the writer after its write landed, while it still holds the stripe): WATCH
/// remembers it and EXEC compares, so a change to a watched key aborts the transaction, while
/// reads, no-op writes (SET NX on an existing key) and empty or read-only EXECs do not. Keys
/// sharing a stripe (1 in 4096) can still abort each other: a rare false conflict, never a
/// missed one.
///
/// `@unchecked Sendable`: the mutexes and counters are allocated once, never moved, and each
/// counter is only read or written while its mutex is held.
final class KeyLocks: @unchecked Sendable {
    private let mutexes: UnsafeMutablePointer<pthread_mutex_t>
    private let versions: UnsafeMutablePointer<UInt64>
    private let count: Int

    init(count: Int = 4096) {
        precondition(count > 0 && count & (count - 1) == 0, "stripe count must be a power of two")
        self.count = count
        mutexes = .allocate(capacity: count)
        versions = .allocate(capacity: count)
        versions.initialize(repeating: 0, count: count)
        for i in 0..<count { pthread_mutex_init(mutexes + i, nil) }
    }

    deinit {
        for i in 0..<count { pthread_mutex_destroy(mutexes + i) }
        mutexes.deallocate()
        versions.deallocate()
    }

    func stripe(for key: [UInt8], in family: Family) -> Int {
        var h = family.salt
        for b in key { h = (h ^ UInt64(b)) &* 1_099_511_628_211 }
        return Int(truncatingIfNeeded: h ^ (h >> 29)) & (count - 1)
    }

    func version(ofStripe index: Int) -> UInt64 {
        pthread_mutex_lock(mutexes + index)
        defer { pthread_mutex_unlock(mutexes + index) }
        return versions[index]
    }

    /// Runs `body` holding the key's stripe.
    func withLock<R, E: Error>(_ key: [UInt8], in family: Family, _ body: () throws(E) -> R) throws(E) -> R {
        try withStripes([stripe(for: key, in: family)], body)
    }

    /// Runs `body` holding the stripes of all `keys` (taken in index order, so no deadlock).
    func withLocks<R, E: Error>(_ keys: [[UInt8]], in family: Family, _ body: () throws(E) -> R) throws(E) -> R {
        if keys.count == 1 { return try withLock(keys[0], in: family, body) }
        return try withDistinctStripes(keys.map { stripe(for: $0, in: family) }, body)
    }

    /// Runs `body` holding the stripes of keys that may live in different families.
    func withLocks<R, E: Error>(_ keys: [(key: [UInt8], family: Family)], _ body: () throws(E) -> R) throws(E) -> R {
        try withDistinctStripes(keys.map { stripe(for: $0.key, in: $0.family) }, body)
    }

    /// Runs `body` holding the stripes of `keys` plus `stripes` (or every stripe when `all`),
    /// moving no version. Inside, `heldVersion(_:)` reads the version of a held stripe.
    func withLocks<R, E: Error>(
        _ keys: [[UInt8]], in family: Family, plus stripes: [Int], all: Bool, _ body: () throws(E) -> R
    ) throws(E) -> R {
        if all { return try withEveryStripe(body) }
        return try withDistinctStripes(keys.map { stripe(for: $0, in: family) } + stripes, body)
    }

    /// The version of a stripe the caller holds (no locking: the caller already has the mutex).
    func heldVersion(_ index: Int) -> UInt64 { versions[index] }

    /// Records that a write changed `key`: WATCHes of its stripe fire. The caller holds the
    /// stripe and calls this after the write landed (a WATCH then sees the new version only
    /// together with the new value).
    func changed(_ key: [UInt8], in family: Family) {
        changed(stripe: stripe(for: key, in: family))
    }

    /// Records a change to a key of stripe `index`, which the caller holds.
    func changed(stripe index: Int) {
        versions[index] &+= 1
    }

    /// Records a change to unknown keys; the caller holds every stripe (`withEveryStripe`).
    func changedEveryStripe() {
        for i in 0..<count { versions[i] &+= 1 }
    }

    /// Runs `body` holding every stripe, then moves every version: for changes to unknown keys
    /// (FLUSHDB, DELRANGE, CF.DROP, an online restore), so every WATCH fires.
    func withAll<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try withEveryStripe { () throws(E) -> R in
            let result = try body()
            changedEveryStripe()
            return result
        }
    }

    /// Runs `body` holding every stripe, moving no version (an EXEC that switches family holds
    /// everything and marks what it wrote with `changed`).
    func withEveryStripe<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try withStripes(Array(0..<count), body)
    }

    /// Takes each stripe once, in index order (so no deadlock).
    private func withDistinctStripes<R, E: Error>(_ stripes: [Int], _ body: () throws(E) -> R) throws(E) -> R {
        try withStripes(Array(Set(stripes)).sorted(), body)
    }

    private func withStripes<R, E: Error>(_ indexes: [Int], _ body: () throws(E) -> R) throws(E) -> R {
        for i in indexes { pthread_mutex_lock(mutexes + i) }
        defer {
            for i in indexes.reversed() { pthread_mutex_unlock(mutexes + i) }
        }
        return try body()
    }
}
