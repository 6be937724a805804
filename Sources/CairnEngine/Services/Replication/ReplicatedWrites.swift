import Rocks

/// The WATCHes a replicated batch fires: the lock stripes (`KeyLocks`) of the user keys it
/// writes, so that on a replica, as in Redis, an EXEC whose watched key the primary changed
/// returns nil.
///
/// A record in a user family names its key; one in the members family names the collection's
/// key in its own family (`MemberKeys`), so HSET of one field fires a WATCH of the hash. A range
/// deletion (DELRANGE, FLUSHDB, CF.DROP) covers unknown keys and fires every WATCH, as it does
/// on the primary; so does a batch this reader cannot read to its end. Records in the meta
/// family are not user keys (a dropped family fires every WATCH when it is dropped).
struct ReplicatedWrites: Equatable {
    /// Sorted, distinct.
    var stripes: [Int] = []
    /// Every stripe, instead of `stripes`.
    var all = false
    /// The user keys the batch puts, per family, when clients are blocked (`wakeBlocked`): an
    /// XREAD BLOCK on a replica is served by the primary's XADD, as in Redis.
    var put: [String: [[UInt8]]] = [:]

    static func find(in data: [UInt8], engine: Engine) -> ReplicatedWrites {
        let database = engine.database
        var byID: [UInt32: Family] = [:]
        var byName: [String: Family] = [:]
        for family in engine.allFamilies {
            byName[family.name] = family
            if let id = try? database.familyID(family.handle) { byID[id] = family }
        }
        let membersID = try? database.familyID(engine.defaultFamily.members)
        let locks = engine.locks
        var stripes = Set<Int>()
        var put: [String: [[UInt8]]] = [:]
        let anyBlocked = engine.blocking.count > 0
        var reader = BatchReader(data)
        while let record = reader.next() {
            if record.kind == .logData { continue }
            if let family = byID[record.family] {
                if record.kind == .rangeDeletion { return ReplicatedWrites(all: true) }
                stripes.insert(locks.stripe(for: record.key, in: family))
                if anyBlocked && record.kind == .put { put[family.name, default: []].append(Array(record.key)) }
            } else if record.family == membersID {
                if record.kind == .rangeDeletion { return ReplicatedWrites(all: true) }
                let parsed = record.key.withUnsafeBytes { MemberKeys.parse($0) }
                // A family no longer here has no watchers left to fire.
                guard let parsed, let family = byName[parsed.family] else { continue }
                stripes.insert(locks.stripe(for: parsed.key, in: family))
            }
        }
        guard reader.readAll else { return ReplicatedWrites(all: true) }
        return ReplicatedWrites(stripes: stripes.sorted(), put: put)
    }

    /// Wakes the clients blocked on the keys the batch put, once it is written.
    func wakeBlocked(_ engine: Engine) {
        for (family, keys) in put { engine.blocking.signal(family: family, keys: keys) }
    }
}
