#if canImport(Glibc)
import Glibc
#endif
import Synchronization

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
/// Blind writes (a poller round of plain SETs and MSETs: no value read, no reply that depends
/// on one) hold their stripes *shared* (`withLocks(_:shared:_:)`): two such rounds of unrelated keys
/// no longer take turns because 400 random keys of each share a stripe, and RocksDB groups
/// their writes. Two blind writes of one key may then land in either order, which is an order
/// their clients could have seen (neither was answered). Everything else holds its stripes
/// exclusively, so a read-modify-write, a WATCH's version read or EXEC never runs beside a
/// blind write of its stripe. Each stripe is a writer-preferring read-write lock, so a stream
/// of blind rounds does not starve an INCR.
///
/// A write of many keys (a 500,000-key MSET or DEL covers every stripe) would hold every
/// stripe for the whole commit and stall every other writer. Instead it *claims* its keys
/// (`claimThreshold` or more): it waits for the writers in flight, registers the keys, and
/// commits holding no stripe; only a writer of one of those keys waits for it (`withStripes`
/// checks the claims after taking its stripes), and the claim moves its stripes' versions at
/// the end, holding them all for an instant.
///
/// `@unchecked Sendable`: the locks and counters are allocated once, never moved, and each
/// counter is only written while its lock is held (shared holders move them atomically);
/// claims are guarded by `claimMutex`.
final class KeyLocks: @unchecked Sendable {
    private let stripeLocks: UnsafeMutablePointer<pthread_rwlock_t>
    /// Written only under the stripe's lock; atomic so that shared holders may move one
    /// together and `unlockedVersion` may read one without it.
    private let versions: UnsafeMutablePointer<Atomic<UInt64>>
    private let count: Int
    /// For the value cache, which needs finer invalidation than 1 stripe in 4096: a version per
    /// slot of key hashes (`keySlots` of them), moved by writes that name their key
    /// (`changed(_:in:)`), and a version per stripe moved only by writes that name just stripes
    /// (`changed(stripe:)`: EXEC, scripts, replicated batches, big writes, changes to every
    /// stripe). A plain SET then invalidates the few cached keys of its slot, not the 250 of
    /// its stripe. Written under the stripe's lock, like `versions`.
    private let keyVersions: UnsafeMutablePointer<Atomic<UInt32>>
    private let stripeOnlyVersions: UnsafeMutablePointer<Atomic<UInt32>>
    static let keySlots = 1 << 18

    /// Writes of at least this many keys claim them instead of holding their stripes.
    static let claimThreshold = 1024
    /// Blind writes claim only from this many keys: stripes held shared stop the writers that
    /// read first but not other blind writes, so a poller round of 400 ten-key MSETs holds its
    /// stripes. Kept low because those writers (INCR, HSET, EXEC) wait for the whole commit of
    /// what holds their stripe, and 4,096 keys cover 63% of the stripes for the whole commit.
    static let sharedClaimThreshold = 4096

    /// The keys of one big write, by family name, while it commits.
    private final class Claim {
        /// Keys as `ByteKey`s, hashed in one call each (`[UInt8]`'s own hashing takes a byte at
        /// a time: a poller round of 400 ten-key MSETs spent 17,000 instructions a request here).
        let keys: [ObjectIdentifier: Set<ByteKey>]
        /// Stripes whose keys the write changed (versions move when it ends).
        var changed = Set<Int>()
        var done = false

        init(_ keys: [(key: [UInt8], family: Family)]) {
            var byFamily: [ObjectIdentifier: Set<ByteKey>] = [:]
            for k in keys { byFamily[ObjectIdentifier(k.family), default: Set(minimumCapacity: keys.count)].insert(ByteKey(k.key)) }
            self.keys = byFamily
        }

        func covers(_ key: [UInt8], in family: Family) -> Bool {
            keys[ObjectIdentifier(family)]?.contains(ByteKey(key)) ?? false
        }
    }
    private var claims: [Claim] = []
    /// `claims.count`, read without `claimMutex` by every lock taker: almost always 0. Changed
    /// only while every stripe is held, so a taker that holds its stripes reads it exactly.
    private let claimCount = Atomic<Int>(0)
    private var claimMutex = pthread_mutex_t()
    private var claimEnded = pthread_cond_t()
    /// The claim the current thread commits under (its `changed` calls go to it).
    private var currentClaim = pthread_key_t()

    init(count: Int = 4096) {
        precondition(count > 0 && count & (count - 1) == 0, "stripe count must be a power of two")
        self.count = count
        stripeLocks = .allocate(capacity: count)
        versions = .allocate(capacity: count)
        for i in 0..<count { (versions + i).initialize(to: Atomic(0)) }
        keyVersions = .allocate(capacity: KeyLocks.keySlots)
        for i in 0..<KeyLocks.keySlots { (keyVersions + i).initialize(to: Atomic(0)) }
        stripeOnlyVersions = .allocate(capacity: count)
        for i in 0..<count { (stripeOnlyVersions + i).initialize(to: Atomic(0)) }
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        // Writer-preferring: an exclusive locker waiting on a stripe stops new shared holders.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        for i in 0..<count { pthread_rwlock_init(stripeLocks + i, &attributes) }
        pthread_rwlockattr_destroy(&attributes)
        pthread_mutex_init(&claimMutex, nil)
        pthread_cond_init(&claimEnded, nil)
        pthread_key_create(&currentClaim, nil)
    }

    deinit {
        for i in 0..<count { pthread_rwlock_destroy(stripeLocks + i) }
        stripeLocks.deallocate()
        versions.deinitialize(count: count)
        versions.deallocate()
        keyVersions.deinitialize(count: KeyLocks.keySlots)
        keyVersions.deallocate()
        stripeOnlyVersions.deinitialize(count: count)
        stripeOnlyVersions.deallocate()
    }

    func stripe(for key: some Sequence<UInt8>, in family: Family) -> Int {
        stripe(ofHash: KeyLocks.hash(key, in: family))
    }

    /// A key's FNV-1a hash, salted by its family: its stripe comes from it, and the value cache
    /// keys its table by it (one pass over the key for both).
    static func hash(_ key: some Sequence<UInt8>, in family: Family) -> UInt64 {
        var h = family.salt
        for b in key { h = (h ^ UInt64(b)) &* 1_099_511_628_211 }
        return h
    }

    func stripe(ofHash h: UInt64) -> Int {
        Int(truncatingIfNeeded: h ^ (h >> 29)) & (count - 1)
    }

    private func keySlot(ofHash h: UInt64) -> Int {
        Int(truncatingIfNeeded: (h &* 0x9E37_79B9_7F4A_7C15) >> 46) & (KeyLocks.keySlots - 1)
    }

    /// The value cache's version of a key (its hash's slot version and its stripe's
    /// stripe-only version), read without the stripe's lock: before a read from RocksDB whose
    /// result the cache will hold.
    func cacheVersion(ofHash h: UInt64) -> UInt64 {
        let stripeOnly = stripeOnlyVersions[stripe(ofHash: h)].load(ordering: .acquiring)
        return UInt64(stripeOnly) << 32 | UInt64(keyVersions[keySlot(ofHash: h)].load(ordering: .acquiring))
    }

    /// Runs `body` with the key's `cacheVersion` if no one holds its stripe now (a try-lock: a
    /// writer holding it, shared or not, may have landed a write it has not counted yet); nil
    /// when it is held.
    /// The value cache's check: nothing changes the key while `body` runs.
    func withKeyIfFree<R>(hash h: UInt64, _ body: (UInt64) -> R) -> R? {
        let index = stripe(ofHash: h)
        guard pthread_rwlock_trywrlock(stripeLocks + index) == 0 else { return nil }
        defer { pthread_rwlock_unlock(stripeLocks + index) }
        return body(cacheVersion(ofHash: h))
    }

    func version(ofStripe index: Int) -> UInt64 {
        // Exclusively: a shared holder may have landed a write it has not counted yet.
        pthread_rwlock_wrlock(stripeLocks + index)
        defer { pthread_rwlock_unlock(stripeLocks + index) }
        return versions[index].load(ordering: .relaxed)
    }

    /// Runs `body` holding the key's stripe.
    func withLock<R, E: Error>(_ key: [UInt8], in family: Family, _ body: () throws(E) -> R) throws(E) -> R {
        try withStripes([stripe(for: key, in: family)], keys: [(key, family)], body)
    }

    /// Runs `body` holding the stripes of all `keys` (taken in index order, so no deadlock), or
    /// claiming them when they are many.
    func withLocks<R, E: Error>(_ keys: [[UInt8]], in family: Family, _ body: () throws(E) -> R) throws(E) -> R {
        if keys.count == 1 { return try withLock(keys[0], in: family, body) }
        return try withLocks(keys.map { ($0, family) }, body)
    }

    /// Runs `body` holding the stripes of keys that may live in different families, or
    /// claiming them when they are many. `shared`: a blind write (see the type's comment),
    /// which reads no value of `keys` and calls `changed` for each key it wrote before `body`
    /// returns.
    func withLocks<R, E: Error>(
        _ keys: [(key: [UInt8], family: Family)], shared: Bool = false, _ body: () throws(E) -> R
    ) throws(E) -> R {
        if keys.count >= (shared ? KeyLocks.sharedClaimThreshold : KeyLocks.claimThreshold) { return try withClaim(keys, body) }
        return try withStripes(Array(Set(keys.map { stripe(for: $0.key, in: $0.family) })).sorted(), keys: keys, shared: shared, body)
    }

    /// Runs `body` holding the stripes of `keys` plus `stripes` (or every stripe when `all`),
    /// moving no version. Inside, `heldVersion(_:)` reads the version of a held stripe.
    func withLocks<R, E: Error>(
        _ keys: [[UInt8]], in family: Family, plus stripes: [Int], all: Bool, _ body: () throws(E) -> R
    ) throws(E) -> R {
        if all { return try withEveryStripe(body) }
        let stripes = Array(Set(keys.map { stripe(for: $0, in: family) } + stripes)).sorted()
        return try withStripes(stripes, keys: keys.map { ($0, family) }, body)
    }

    /// The version of a stripe the caller holds exclusively (no locking: it already has it).
    func heldVersion(_ index: Int) -> UInt64 { versions[index].load(ordering: .relaxed) }

    /// A stripe's version read without its lock, for a reader that reads a value before taking
    /// the lock and checks the version again under it: a write moves the version after it
    /// landed, so an unchanged version means the value read then is still the latest.
    func unlockedVersion(ofStripe index: Int) -> UInt64 { versions[index].load(ordering: .acquiring) }

    /// Records that a write changed `key`: WATCHes of its stripe fire. The caller holds the
    /// stripe and calls this after the write landed (a WATCH then sees the new version only
    /// together with the new value).
    func changed(_ key: [UInt8], in family: Family) {
        let h = KeyLocks.hash(key, in: family)
        let index = stripe(ofHash: h)
        if let claim = pthread_getspecific(currentClaim) {
            Unmanaged<Claim>.fromOpaque(claim).takeUnretainedValue().changed.insert(index)
            return
        }
        versions[index].wrappingAdd(1, ordering: .releasing)
        keyVersions[keySlot(ofHash: h)].wrappingAdd(1, ordering: .releasing)
    }

    /// Records a change to a key of stripe `index`, which the caller holds (or has claimed:
    /// then the version moves when the claim ends).
    func changed(stripe index: Int) {
        if let claim = pthread_getspecific(currentClaim) {
            Unmanaged<Claim>.fromOpaque(claim).takeUnretainedValue().changed.insert(index)
            return
        }
        versions[index].wrappingAdd(1, ordering: .releasing)
        stripeOnlyVersions[index].wrappingAdd(1, ordering: .releasing)
    }

    /// Records a change to unknown keys; the caller holds every stripe (`withEveryStripe`).
    func changedEveryStripe() {
        for i in 0..<count { changed(stripe: i) }
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
    /// everything and marks what it wrote with `changed`). Waits for every claim to end first:
    /// such writes may touch any key.
    func withEveryStripe<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try withStripes(Array(0..<count), keys: nil, body)
    }

    /// Runs `body` claiming `keys`, however few (a long collection command: LongWork.swift).
    func claiming<R, E: Error>(_ keys: [(key: [UInt8], family: Family)], _ body: () throws(E) -> R) throws(E) -> R {
        try withClaim(keys, body)
    }

    /// Claims `keys` for `body` (see the type's comment): waits for the writers in flight,
    /// registers the keys, runs `body` holding no stripe, then moves the versions of the
    /// stripes it changed.
    private func withClaim<R, E: Error>(_ keys: [(key: [UInt8], family: Family)], _ body: () throws(E) -> R) throws(E) -> R {
        let claim = Claim(keys)
        // Every stripe held: at normal priority, so no worker waits for a preempted thread of low priority.
        NormalPriorityThread.shared.run {
            withEveryStripe {
                pthread_mutex_lock(&claimMutex)
                claims.append(claim)
                claimCount.add(1, ordering: .relaxed)
                pthread_mutex_unlock(&claimMutex)
            }
        }
        pthread_setspecific(currentClaim, Unmanaged.passUnretained(claim).toOpaque())
        defer {
            pthread_setspecific(currentClaim, nil)
            NormalPriorityThread.shared.run {
                lockAll()
                for i in claim.changed {
                    versions[i].wrappingAdd(1, ordering: .releasing)
                    stripeOnlyVersions[i].wrappingAdd(1, ordering: .releasing)
                }
                pthread_mutex_lock(&claimMutex)
                claims.removeAll { $0 === claim }
                claimCount.subtract(1, ordering: .relaxed)
                claim.done = true
                pthread_cond_broadcast(&claimEnded)
                pthread_mutex_unlock(&claimMutex)
                unlockAll()
            }
        }
        return try body()
    }

    /// Whether some big write holds a claim now (a relaxed load: almost always false).
    var hasClaims: Bool { claimCount.load(ordering: .relaxed) > 0 }

    /// Whether the calling thread commits under a claim (`withClaim`'s body).
    var holdsClaim: Bool { pthread_getspecific(currentClaim) != nil }

    /// Whether a claim covers one of `keys`.
    func isClaimed(_ keys: [[UInt8]], in family: Family) -> Bool {
        guard hasClaims, !keys.isEmpty else { return false }
        return conflictingClaim(keys.map { ($0, family) }) != nil
    }

    /// Waits, holding no stripe, until no claim covers any of `keys`: a big write commits in
    /// pieces (`Engine.writeClaimed`), so a reader of its keys waits for the whole of it, as a
    /// writer does. The caller must hold no stripe (the claim's end takes them all).
    func awaitClaims(on keys: [[UInt8]], in family: Family) {
        let keys = keys.map { ($0, family) }
        while let claim = conflictingClaim(keys) { wait(for: claim) }
    }

    /// The claim that `keys` (nil: any key) would touch, if any. Takes `claimMutex`.
    private func conflictingClaim(_ keys: [(key: [UInt8], family: Family)]?) -> Claim? {
        guard claimCount.load(ordering: .relaxed) > 0 else { return nil }
        pthread_mutex_lock(&claimMutex)
        defer { pthread_mutex_unlock(&claimMutex) }
        guard !claims.isEmpty else { return nil }
        guard let keys else { return claims[0] }
        return claims.first { claim in keys.contains { claim.covers($0.key, in: $0.family) } }
    }

    private func wait(for claim: Claim) {
        pthread_mutex_lock(&claimMutex)
        while !claim.done { pthread_cond_wait(&claimEnded, &claimMutex) }
        pthread_mutex_unlock(&claimMutex)
    }

    /// Takes `indexes` (sorted, distinct; shared or exclusively) and runs `body`, unless a
    /// claim covers one of `keys` (nil: any claim at all): then lets go, waits for that claim
    /// to end and tries again.
    private func withStripes<R, E: Error>(
        _ indexes: [Int], keys: [(key: [UInt8], family: Family)]?, shared: Bool = false, _ body: () throws(E) -> R
    ) throws(E) -> R {
        while true {
            if shared {
                for i in indexes { pthread_rwlock_rdlock(stripeLocks + i) }
            } else {
                for i in indexes { pthread_rwlock_wrlock(stripeLocks + i) }
            }
            guard let claim = conflictingClaim(keys) else { break }
            for i in indexes.reversed() { pthread_rwlock_unlock(stripeLocks + i) }
            wait(for: claim)
        }
        defer {
            for i in indexes.reversed() { pthread_rwlock_unlock(stripeLocks + i) }
        }
        return try body()
    }

    private func lockAll() { for i in 0..<count { pthread_rwlock_wrlock(stripeLocks + i) } }
    private func unlockAll() { for i in (0..<count).reversed() { pthread_rwlock_unlock(stripeLocks + i) } }
}
