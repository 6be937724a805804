import Rocks
import Synchronization

/// Deletes expired keys in the background, a bounded number of keys per step, so space comes
/// back without anyone reading the keys or running COMPACT.
///
/// It walks every family in key order, resuming where the previous step stopped. After a full
/// pass that met no key with an expiry, it rests until a write with a TTL arrives (so a
/// database without TTLs costs nothing). Compaction's expiry filter (`ExpiryCompactionFilter`)
/// then drops the tombstoned space as usual.
public final class ExpirySweep: Sendable {
    private struct Position {
        var family: String = "default"
        var after: [UInt8]? = nil
        /// Whether the current pass has met any key with an expiry.
        var sawExpiring = true
        var expiringWritesAtPassStart = 0
        var resting = false
    }

    private let position = Mutex(Position())
    private let expiringWrites = Atomic<Int>(0)

    init() {}

    func noteExpiringWrite() { expiringWrites.add(1, ordering: .relaxed) }

    /// Whether the last full pass found nothing to watch and no TTL write came since.
    public var isResting: Bool {
        position.withLock { $0.resting && $0.expiringWritesAtPassStart == expiringWrites.load(ordering: .relaxed) }
    }

    /// Examines up to `budget` keys; returns how many expired keys it deleted.
    @discardableResult
    public func step(_ engine: Engine, budget: Int = 2000) -> Int {
        var pos = position.withLock { $0 }
        let writes = expiringWrites.load(ordering: .relaxed)
        if pos.resting {
            guard writes != pos.expiringWritesAtPassStart else { return 0 }
            pos = Position(family: "default", after: nil, sawExpiring: false, expiringWritesAtPassStart: writes, resting: false)
        }
        let families = engine.allFamilies
        guard var familyIndex = families.firstIndex(where: { $0.name == pos.family }) ?? families.indices.first else { return 0 }
        var examined = 0
        var deleted = 0
        let now = Clock.milliseconds()
        while examined < budget {
            let family = families[familyIndex]
            var expired: [[UInt8]] = []
            var last: [UInt8]? = nil
            var finishedFamily = false
            var options = ReadOptions()
            options.fillCache = false
            do {
                try engine.database.withCursor(in: family.handle, options: options) { c in
                    if let after = pos.after { c.seek(after + [0]) } else { c.seekToFirst() }
                    while c.isValid && examined < budget {
                        examined += 1
                        let header = c.withValue { ValueFormat.header(of: $0) }
                        if let header, header.expiresAt != nil {
                            pos.sawExpiring = true
                            if header.isExpired(now: now) { expired.append(c.key) }
                        }
                        last = c.key
                        c.next()
                    }
                    finishedFamily = !c.isValid
                }
            } catch {
                engine.logger.warning("expiry sweep stopped in family \(family.name): \(error)")
                return deleted
            }
            for key in expired where reap(key, in: family, engine: engine, now: now) { deleted += 1 }
            if finishedFamily {
                familyIndex += 1
                pos.after = nil
                if familyIndex == families.count {
                    // A full pass ended.
                    familyIndex = 0
                    pos.resting = !pos.sawExpiring
                    pos.expiringWritesAtPassStart = writes
                    pos.sawExpiring = false
                    pos.family = families[0].name
                    if pos.resting { break }
                }
                pos.family = families[familyIndex].name
            } else {
                pos.after = last
            }
        }
        let final = pos
        position.withLock { $0 = final }
        if deleted > 0 { engine.stats.expiredKeys.increment(by: deleted) }
        return deleted
    }

    /// Deletes `key` if it is still expired, under its lock (it may have been rewritten).
    private func reap(_ key: [UInt8], in family: Family, engine: Engine, now: Int64) -> Bool {
        engine.locks.withLock(key, in: family) { () -> Bool in
            let stillExpired = (try? engine.database.withValue(forKey: key, in: family.handle) { raw in
                raw.flatMap { ValueFormat.header(of: $0) }?.isExpired(now: now) ?? false
            }) ?? false
            guard stillExpired else { return false }
            return (try? engine.database.delete(key, in: family.handle, options: engine.writeOptions)) != nil
        }
    }
}
