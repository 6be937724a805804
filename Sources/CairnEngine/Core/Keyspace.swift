import Rocks

/// A live string value as handlers see it: the payload and its expiry.
struct StoredValue {
    var payload: [UInt8]
    var expiresAt: Int64?
}

/// A live value of any type: a string's bytes or a collection's metadata (`CollectionMetadata`).
struct StoredEntry {
    var type: KeyType
    var payload: [UInt8]
    var expiresAt: Int64?
}

/// Key-level storage operations for handlers: expiry-aware reads, locked writes, and
/// transparent batching while EXEC runs.
extension Call {
    var database: Database { engine.database }
    var family: Family { session.family }

    /// Reads go through the connection's snapshot when SNAPSHOT.USE chose one.
    var readOptions: ReadOptions {
        guard let snap = session.readSnapshot else { return .default }
        var o = ReadOptions()
        o.snapshot = snap.snapshot
        return o
    }

    /// Runs `body` holding the write locks of `keys` (already held inside EXEC). A write in
    /// `body` that changes a key records it (`KeyLocks.changed`), which fires WATCHes.
    func locked<R>(_ keys: [[UInt8]], _ body: () throws(CommandError) -> R) throws(CommandError) -> R {
        if session.transaction != nil || session.holdsKeyLocks { return try body() }
        session.holdsKeyLocks = true
        defer { session.holdsKeyLocks = false }
        // Running long, the keys are claimed: no stripe held, so no other key waits (LongWork.swift).
        if session.runsLong { return try engine.locks.claiming(keys.map { ($0, family) }, body) }
        return try engine.locks.withLocks(keys, in: family, body)
    }

    func locked<R>(_ key: [UInt8], _ body: () throws(CommandError) -> R) throws(CommandError) -> R {
        try locked([key], body)
    }

    /// Calls `body` with the type, payload and expiry of `key`'s live value, or nils when it is
    /// missing or expired (or of a type this version does not know). Any type: key commands
    /// (TYPE, TTL, EXPIRE...) and the collection helpers read through it. Zero-copy outside
    /// transactions: the buffer is RocksDB's pinned value.
    func withStored<R>(_ key: [UInt8], _ body: (KeyType?, UnsafeRawBufferPointer?, Int64?) throws(CommandError) -> R) throws(CommandError) -> R {
        let family = self.family  // once: the session's family is read under its record's lock
        if let tx = session.transaction, let staged = tx.staged(key, in: family.name) {
            guard let staged else {
                missed(key)
                return try body(nil, nil, nil)
            }
            let now = now
            let result = staged.withUnsafeBytes { raw in
                Result { () throws(CommandError) -> R in
                    guard let h = ValueFormat.header(of: raw), !h.isExpired(now: now), let type = KeyType(rawValue: h.type) else {
                        missed(key)
                        return try body(nil, nil, nil)
                    }
                    return try body(type, UnsafeRawBufferPointer(rebasing: raw[h.payloadOffset...]), h.expiresAt)
                }
            }
            return try result.get()
        }
        var expired = false
        var missing = false
        let handle = family.handle
        let readOptions = self.readOptions
        let now = now
        // The value cache, for a plain read: not through a snapshot, not by a writer holding
        // key locks (its own stripe's try-lock would fail; it is about to write anyway).
        let cache = engine.valueCache
        var fill: (hash: UInt64, version: UInt64)? = nil
        if cache.isEnabled && readOptions.snapshot == nil && !session.holdsKeyLocks {
            let hash = KeyLocks.hash(key, in: family)
            switch cache.lookup(key, in: family, hash: hash, locks: engine.locks, now: now) {
            case .hit(let stored):
                let result = stored.withUnsafeBytes { raw in
                    Result { () throws(CommandError) -> R in
                        guard let h = ValueFormat.header(of: raw), let type = KeyType(rawValue: h.type) else {
                            missed(key)
                            return try body(nil, nil, nil)
                        }
                        return try body(type, UnsafeRawBufferPointer(rebasing: raw[h.payloadOffset...]), h.expiresAt)
                    }
                }
                return try result.get()
            case .miss:
                fill = (hash, engine.locks.cacheVersion(ofHash: hash))
            case .busy:
                break
            }
        }
        let result: R = try engine.storage("read") {
            try database.withValue(forKey: key, in: handle, options: readOptions) { raw throws -> R in
                guard let raw, let h = ValueFormat.header(of: raw), let type = KeyType(rawValue: h.type) else {
                    if raw == nil, let fill { cache.fill(key, in: family, hash: fill.hash, version: fill.version, raw: nil, locks: engine.locks) }
                    missing = true
                    return try body(nil, nil, nil)
                }
                if h.isExpired(now: now) {
                    expired = true
                    missing = true
                    return try body(nil, nil, nil)
                }
                if let fill { cache.fill(key, in: family, hash: fill.hash, version: fill.version, raw: raw, locks: engine.locks) }
                return try body(type, UnsafeRawBufferPointer(rebasing: raw[h.payloadOffset...]), h.expiresAt)
            }
        }
        if expired && session.readSnapshot == nil { reapExpired(key) }
        // After the reap: Redis publishes `expired` before `keymiss`.
        if missing { missed(key) }
        return result
    }

    /// Calls `body` with the live string payload of `key`, or nil when missing or expired;
    /// WRONGTYPE when the key holds a collection.
    func withPayload<R>(_ key: [UInt8], _ body: (UnsafeRawBufferPointer?, Int64?) throws(CommandError) -> R) throws(CommandError) -> R {
        try withStored(key) { (type: KeyType?, payload: UnsafeRawBufferPointer?, expiresAt: Int64?) throws(CommandError) -> R in
            if let type, type != .string { throw .wrongType }
            return try body(payload, expiresAt)
        }
    }

    /// The live value of `key` whatever its type, copied: what RENAME, COPY, EXPIRE and
    /// PERSIST carry over.
    func readEntry(_ key: [UInt8]) throws(CommandError) -> StoredEntry? {
        try withStored(key) { type, payload, expiresAt in
            guard let type, let payload else { return nil }
            return StoredEntry(type: type, payload: Array(payload), expiresAt: expiresAt)
        }
    }

    /// Stores a value of any type, as `readEntry` gave it (with a new expiry, say).
    func writeEntry(_ key: [UInt8], _ entry: StoredEntry) throws(CommandError) {
        if entry.type == .string { return try write(key, entry.payload, expiresAt: entry.expiresAt) }
        try put(key, stored: Self.encode(entry), expiresAt: entry.expiresAt)
    }

    static func encode(_ entry: StoredEntry) -> [UInt8] {
        var out: [UInt8] = []
        ValueFormat.appendHeader(to: &out, type: entry.type.rawValue, expiresAt: entry.expiresAt)
        out += entry.payload
        return out
    }

    /// The live value of `key`, copied.
    func read(_ key: [UInt8]) throws(CommandError) -> StoredValue? {
        try withPayload(key) { payload, expiresAt in
            payload.map { StoredValue(payload: Array($0), expiresAt: expiresAt) }
        }
    }

    /// The live payloads of several keys, read at one sequence number (RocksDB's MultiGet), so
    /// a concurrent EXEC is seen whole or not at all, as Redis's MGET promises.
    func readMany(_ keys: [[UInt8]]) throws(CommandError) -> [[UInt8]?] {
        if session.transaction != nil {
            return try keys.map { (k: [UInt8]) throws(CommandError) -> [UInt8]? in
                try readEntry(k).flatMap { $0.type == .string ? $0.payload : nil }
            }
        }
        let handle = family.handle
        let options = readOptions
        let now = now
        // With keyspace events on, each key's state: expired keys are reaped here, as a GET
        // would (`expired`), and missing ones are key misses, in the keys' order.
        let notifying = engine.activeEventClasses != 0
        var states: [(missing: Bool, expired: Bool)] = []
        let found = try engine.storage("MGET") {
            try database.withValues(forKeys: keys, in: handle, options: options) { values in
                if notifying {
                    states = values.map { v in
                        let live = ValueFormat.livePayload(of: v, now: now) != nil
                        return (!live, !live && v != nil)
                    }
                }
                // MGET answers nil for a key of another type, as Redis does.
                return values.map { v in ValueFormat.liveString(of: v, now: now).map { Array($0) } }
            }
        }
        for (k, state) in zip(keys, states) where state.missing {
            if state.expired && session.readSnapshot == nil { reapExpired(k) }
            missed(k)
        }
        return found
    }

    /// Whether each of `keys` holds a live value, read as `readMany` reads (one MultiGet, one
    /// sequence number) without copying any value: DEL and EXISTS of many keys.
    func existMany(_ keys: [[UInt8]]) throws(CommandError) -> [Bool] {
        if session.transaction != nil { return try keys.map { (k: [UInt8]) throws(CommandError) -> Bool in try exists(k) } }
        let handle = family.handle
        let options = readOptions
        let now = now
        // With keyspace events on, expired keys are reaped here, as `readMany` does.
        let notifying = engine.activeEventClasses != 0
        var expired: [Bool] = []
        let found = try engine.storage("EXISTS") {
            try database.withValues(forKeys: keys, in: handle, options: options) { values in
                if notifying { expired = values.map { $0 != nil && ValueFormat.livePayload(of: $0, now: now) == nil } }
                return values.map { ValueFormat.livePayload(of: $0, now: now) != nil }
            }
        }
        guard notifying else { return found }
        for (i, k) in keys.enumerated() where !found[i] {
            if expired[i] && session.readSnapshot == nil { reapExpired(k) }
            missed(k)
        }
        return found
    }

    /// Whether `key` holds a live value of any type.
    func exists(_ key: [UInt8]) throws(CommandError) -> Bool {
        try withStored(key) { type, _, _ in type != nil }
    }

    /// Stores a string value.
    func write(_ key: [UInt8], _ payload: some Collection<UInt8>, expiresAt: Int64? = nil) throws(CommandError) {
        try put(key, stored: ValueFormat.encode(payload, expiresAt: expiresAt), expiresAt: expiresAt)
    }

    /// Stores a string value without the `new` event (`notifyIfNew`): for a command that
    /// publishes it itself, in Redis's place among its other events (MSET).
    func writeAnnounced(_ key: [UInt8], _ payload: some Collection<UInt8>) throws(CommandError) {
        try put(key, stored: ValueFormat.encode(payload, expiresAt: nil), expiresAt: nil, newEvent: false)
    }

    /// Stores an encoded value (header included) under `key`.
    private func put(_ key: [UInt8], stored: [UInt8], expiresAt: Int64?, newEvent: Bool = true) throws(CommandError) {
        if let expiresAt { engine.expirySweep.noteExpiringWrite(expiresAt: expiresAt) }
        if newEvent { notifyIfNew(key) }
        let family = self.family  // once: the session's family is read under its record's lock
        if let tx = session.transaction {
            tx.put(key, stored, in: family)
            tx.changed(stripe: engine.locks.stripe(for: key, in: family))
            return
        }
        let handle = family.handle
        let options = engine.writeOptions
        try engine.storage("write") { try database.put(key, stored, in: handle, options: options) }
        engine.locks.changed(key, in: family)
    }

    func remove(_ key: [UInt8]) throws(CommandError) {
        let family = self.family  // once: the session's family is read under its record's lock
        if let tx = session.transaction {
            tx.delete(key, in: family)
            tx.changed(stripe: engine.locks.stripe(for: key, in: family))
            return
        }
        let handle = family.handle
        let options = engine.writeOptions
        try engine.storage("delete") { try database.delete(key, in: handle, options: options) }
        engine.locks.changed(key, in: family)
    }

    /// Applies several puts and deletes atomically (MSET, DEL of many keys, RENAME). Publishes
    /// no `new`: MSET does, between its `set` events, as Redis (`notifySets`).
    func writeBatch(_ puts: [([UInt8], [UInt8])], deletes: [[UInt8]] = []) throws(CommandError) {
        if session.transaction != nil {
            for (k, v) in puts { try writeAnnounced(k, v) }
            for k in deletes { try remove(k) }
            return
        }
        var batch = WriteBatch()
        for (k, v) in puts { batch.put(k, ValueFormat.encode(v), in: family.handle) }
        for k in deletes { batch.delete(k, in: family.handle) }
        let options = engine.writeOptions
        try engine.storage("batch write") { try engine.writeClaimed(batch, options: options) }
        for (k, _) in puts { engine.locks.changed(k, in: family) }
        for k in deletes { engine.locks.changed(k, in: family) }
    }

    /// Deletes a key found expired on read, unless it was rewritten meanwhile.
    func reapExpired(_ key: [UInt8]) {
        // Under a key lock (a write is about to replace the value) or in EXEC, leave it: the
        // locks are not re-entrant, and compaction drops it anyway. With keyspace events on,
        // a key of this command (whose lock is held) goes now, with its `expired` event.
        guard session.transaction == nil && !session.holdsKeyLocks else {
            if engine.activeEventClasses != 0 { expireHeld(key) }
            return
        }
        engine.reapExpired(key, in: family)
    }

    /// A write's lookup found its own `key` expired: deleted in the write's transaction (or
    /// now, its lock being held), with `expired` here and `del` for replicas before the
    /// write's own events, as Redis's `lookupKeyWrite` does. Keys the command does not name
    /// (SORT's patterns) are left to a read or the sweep: their locks may not be held.
    private func expireHeld(_ key: [UInt8]) {
        guard !engine.replication.isReplica, !engine.diskGuard.refusesWrites,
              let command = engine.table.named(Array(name.utf8)), command.keys(in: argv).contains(key) else { return }
        let family = self.family
        if let tx = session.transaction {
            tx.delete(key, in: family)
            let on = engine.activeEventClasses
            if on & KeyspaceEvents.Classes.expired.rawValue != 0 { record(.init(type: .expired, name: "expired", key: key, scope: .local)) }
            if on & KeyspaceEvents.Classes.generic.rawValue != 0 { record(.init(type: .generic, name: "del", key: key, scope: .replicas)) }
            engine.stats.expiredKeys.increment()
            return
        }
        var batch = WriteBatch()
        batch.delete(key, in: family.handle)
        engine.addExpiryEvents([key], to: &batch)
        let options = engine.writeOptions
        guard (try? database.write(batch, options: options)) != nil else { return }
        engine.stats.expiredKeys.increment()
        engine.publishExpired([key])
    }

    /// Visits live keys of the current family in order from `start`, while `body` returns true.
    /// Reads the database directly (not a transaction's staged writes).
    func forEachKey(from start: [UInt8] = [], prefix: [UInt8] = [], _ body: ([UInt8], Int64?, KeyType) throws(CommandError) -> Bool) throws(CommandError) {
        let handle = family.handle
        let now = now
        var options = readOptions
        options.fillCache = false
        if !prefix.isEmpty {
            options.lowerBound = prefix
            options.upperBound = Call.prefixEnd(prefix)
        }
        let seekKey = start.lexicographicallyPrecedes(prefix) ? prefix : start
        var failure: CommandError? = nil
        try engine.storage("scan") {
            try database.withCursor(in: handle, options: options) { cursor in
                if seekKey.isEmpty { cursor.seekToFirst() } else { cursor.seek(seekKey) }
                while cursor.isValid {
                    let live: (expiresAt: Int64?, type: KeyType)? = cursor.withValue { raw in
                        guard let h = ValueFormat.header(of: raw), !h.isExpired(now: now), let type = KeyType(rawValue: h.type) else { return nil }
                        return (h.expiresAt, type)
                    }
                    if let live {
                        do throws(CommandError) {
                            if try !body(cursor.key, live.expiresAt, live.type) { return }
                        } catch {
                            failure = error
                            return
                        }
                    }
                    cursor.next()
                }
                try cursor.check()
            }
        }
        if let failure { throw failure }
    }

    /// The smallest key greater than every key starting with `prefix` (nil when none exists).
    static func prefixEnd(_ prefix: [UInt8]) -> [UInt8]? {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return nil
    }
}
