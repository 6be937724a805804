import Rocks
import Synchronization

/// Deletes expired keys in the background, within a time budget per step, so space comes back
/// without anyone reading the keys or running COMPACT.
///
/// A pass walks every family in key order, a slice per step, resuming where the previous step
/// stopped. Expired keys of a slice are deleted in one write batch, each re-checked under its key
/// lock (it may have been rewritten since). Passes are scheduled, not continuous: the next one
/// starts when the earliest expiry the last pass saw (or a TTL written since) falls due, and at
/// most once a second; with no TTL anywhere the sweep rests until one is written. When a pass
/// deletes a large share of a family, it compacts the deleted range, so the data directory
/// shrinks without waiting for RocksDB's own compactions to reach those files; the
/// `ExpiryCompactionFilter` drops expired values that compaction meets in any case.
///
/// Follows Redis's active expiry: https://redis.io/docs/latest/commands/expire/#how-redis-expires-keys
public final class ExpirySweep: Sendable {
    private struct Position {
        var family = "default"
        var after: [UInt8]? = nil
        var inPass = false
        var passStartedAt: Int64 = 0
        /// When the next pass may start; `Int64.max` rests until a TTL is written.
        var nextPassAt: Int64 = 0
        /// The earliest expiry met in this pass among keys not yet expired.
        var earliestPending = Int64.max
        /// The earliest expiry written before this pass started. Its key may have reached
        /// storage after the pass walked past its position (writes note their expiry first), so
        /// the next pass is scheduled for it too.
        var writtenBeforePass = Int64.max
        var familyProgress = FamilyProgress()
    }

    /// What the pass did in the family it is walking; decides whether to compact it.
    private struct FamilyProgress {
        var examined = 0
        var deleted = 0
        var firstDeleted: [UInt8]? = nil
        var lastDeleted: [UInt8]? = nil
    }

    /// Passes start at most this often (milliseconds).
    static let minimumPassInterval: Int64 = 1000
    /// Deleted keys in one family's pass that make it worth compacting the deleted range: at
    /// least this many, and at least a quarter of the keys examined.
    static let compactionThreshold = 10_000
    /// Keys deleted per write batch (and locked together).
    static let batchSize = 1000

    private let position = Mutex(Position())
    /// Off by `DEBUG SET-ACTIVE-EXPIRE 0`, as in Redis: expired keys then go only when read
    /// (tests of lazy expiry need the sweep out of the way).
    let active = Atomic<Bool>(true)
    /// The earliest expiry written since the current pass started (`Int64.max`: none).
    private let earliestWrittenExpiry = Atomic<Int64>(Int64.max)

    init() {}

    /// Records a write with an expiry, so a resting sweep knows when to run again.
    func noteExpiringWrite(expiresAt: Int64) {
        var current = earliestWrittenExpiry.load(ordering: .relaxed)
        while expiresAt < current {
            let (exchanged, original) = earliestWrittenExpiry.compareExchange(
                expected: current, desired: expiresAt, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Starts a new pass at the next step: after a restore, keys with TTLs may have appeared
    /// without any write.
    public func wake() {
        position.withLock {
            $0.inPass = false
            $0.nextPassAt = 0
        }
    }

    /// True when no key with an expiry is known: the sweep does nothing until one is written.
    public var isResting: Bool {
        position.withLock { !$0.inPass && $0.nextPassAt == Int64.max }
            && earliestWrittenExpiry.load(ordering: .relaxed) == Int64.max
    }

    /// The share of one core a step may use at `effort` 1...10 (Redis's `active-expire-effort`:
    /// 25% at 1, up to 43% at 10), as milliseconds of each 100 ms tick.
    public static func stepMilliseconds(effort: Int) -> Int {
        25 + 2 * (min(max(effort, 1), 10) - 1)
    }

    /// Examines keys for up to `milliseconds` (and at most `budget` keys), deleting expired ones.
    /// Returns how many it deleted. Called from one queue at a time (the server's sweep timer).
    /// `now` fixes the clock the step judges expiry and scheduling by (tests); the time budget
    /// then no longer ends the step, only `budget` and the end of a pass do.
    @discardableResult
    public func step(_ engine: Engine, budget: Int = .max, milliseconds: Int = 25, now fixedNow: Int64? = nil) -> Int {
        // A replica's expired keys go when its primary's deletes arrive.
        guard !engine.replication.isReplica, active.load(ordering: .relaxed) else { return 0 }
        var pos = position.withLock { $0 }
        let startedAt = fixedNow ?? Clock.milliseconds()
        if !pos.inPass {
            // Due at the earliest known expiry, but at most one pass a second (at once after wake()).
            let known = min(pos.nextPassAt, earliestWrittenExpiry.load(ordering: .relaxed))
            let due = pos.nextPassAt == 0 ? 0 : max(known, pos.passStartedAt + ExpirySweep.minimumPassInterval)
            guard known != Int64.max, startedAt >= due else { return 0 }
            // Expiries written from here on count for the next pass.
            let written = earliestWrittenExpiry.exchange(Int64.max, ordering: .relaxed)
            pos = Position(family: "default", inPass: true, passStartedAt: startedAt, writtenBeforePass: written)
        }
        let families = engine.allFamilies
        guard var familyIndex = families.firstIndex(where: { $0.name == pos.family }) ?? families.indices.first else { return 0 }
        let deadline = startedAt + Int64(milliseconds)
        var examined = 0
        var deleted = 0
        var now = startedAt
        while examined < budget && now < deadline {
            let family = families[familyIndex]
            var expired: [[UInt8]] = []
            var last: [UInt8]? = nil
            let examinedBefore = examined
            var finishedFamily = false
            var options = ReadOptions()
            options.fillCache = false
            do {
                try engine.database.withCursor(in: family.handle, options: options) { c in
                    if let after = pos.after { c.seek(after + [0]) } else { c.seekToFirst() }
                    while c.isValid && examined < budget && expired.count < ExpirySweep.batchSize {
                        examined += 1
                        if let expiresAt = c.withValue({ ValueFormat.header(of: $0) })?.expiresAt {
                            if expiresAt <= now {
                                expired.append(c.key)
                            } else {
                                pos.earliestPending = min(pos.earliestPending, expiresAt)
                            }
                        }
                        last = c.key
                        c.next()
                        if examined & 127 == 0 {
                            now = fixedNow ?? Clock.milliseconds()
                            if now >= deadline { break }
                        }
                    }
                    finishedFamily = !c.isValid
                    if finishedFamily { try c.check() }
                }
            } catch {
                engine.logger.warning("expiry sweep stopped in family \(family.name): \(error)")
                break
            }
            pos.familyProgress.examined += examined - examinedBefore
            let reaped = reap(expired, in: family, engine: engine, now: now)
            deleted += reaped
            if reaped > 0 {
                // Counted now, not at the end of the step: a compaction below can take seconds.
                engine.stats.expiredKeys.increment(by: reaped)
                pos.familyProgress.deleted += reaped
                if pos.familyProgress.firstDeleted == nil { pos.familyProgress.firstDeleted = expired.first }
                pos.familyProgress.lastDeleted = expired.last
            }
            if finishedFamily {
                compactIfWorthIt(pos.familyProgress, family: family, engine: engine)
                pos.familyProgress = FamilyProgress()
                pos.after = nil
                familyIndex += 1
                if familyIndex == families.count {
                    pos.inPass = false
                    pos.nextPassAt = min(pos.earliestPending, pos.writtenBeforePass)
                    pos.family = families[0].name
                    break
                }
                pos.family = families[familyIndex].name
            } else {
                pos.after = last
            }
            now = fixedNow ?? Clock.milliseconds()
        }
        let final = pos
        position.withLock { $0 = final }
        return deleted
    }

    /// Deletes the keys that are still expired, in one batch, under their key locks.
    private func reap(_ keys: [[UInt8]], in family: Family, engine: Engine, now: Int64) -> Int {
        guard !keys.isEmpty else { return 0 }
        return engine.locks.withLocks(keys, in: family) { () -> Int in
            var batch = WriteBatch()
            var count = 0
            let notifying = engine.activeEventClasses != 0
            var reaped: [[UInt8]] = []
            let checked: Void? = try? engine.database.withValues(forKeys: keys, in: family.handle) { values in
                for (key, value) in zip(keys, values) where value.flatMap({ ValueFormat.header(of: $0) })?.isExpired(now: now) ?? false {
                    batch.delete(key, in: family.handle)
                    count += 1
                    if notifying { reaped.append(key) }
                }
            }
            guard checked != nil else { return 0 }
            guard count > 0 else { return 0 }
            // In disk-full mode nothing may write; the next pass after it ends deletes them.
            guard !engine.diskGuard.refusesWrites else { return 0 }
            do {
                // No `KeyLocks.changed`: expired keys were already gone for readers, and a WATCH
                // taken before they expired fires on their expiry (WatchedKey.expiresAt).
                if notifying { engine.addExpiryEvents(reaped, to: &batch) }
                try engine.database.write(batch, options: engine.writeOptions)
                if notifying { engine.publishExpired(reaped) }
                return count
            } catch {
                engine.logger.warning("expiry sweep could not delete \(count) keys in \(family.name): \(error)")
                return 0
            }
        }
    }

    /// Compacts the range a pass emptied when it emptied enough of it: the tombstones and the
    /// values under them go now, not when RocksDB's own compactions happen to reach them.
    private func compactIfWorthIt(_ progress: FamilyProgress, family: Family, engine: Engine) {
        guard progress.deleted >= ExpirySweep.compactionThreshold, progress.deleted * 4 >= progress.examined,
            let first = progress.firstDeleted, let last = progress.lastDeleted
        else { return }
        engine.logger.info("expiry sweep deleted \(progress.deleted) of \(progress.examined) keys in \(family.name); compacting that range")
        do {
            try engine.database.compactRange(from: first, to: last + [0], in: family.handle)
            engine.stats.sweepCompactions.increment()
        } catch {
            engine.logger.warning("expiry sweep could not compact \(family.name): \(error)")
        }
    }
}
