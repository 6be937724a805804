import RESP
import Rocks

/// The generic keys family: https://redis.io/docs/latest/commands/?group=generic
///
/// Cairn differs from Redis in one visible way: keys are kept in byte order, so KEYS and SCAN
/// return them sorted and a SCAN cursor resumes exactly after the last key returned.
enum KeyCommands {
    static let all: [Command] = [
        Command("del", handler: delete),
        Command("unlink", handler: delete),
        Command("exists") { call, out throws(CommandError) in
            out.integer(try call.existMany(Array(call.argv.dropFirst())).filter { $0 }.count)
        },
        Command("touch") { call, out throws(CommandError) in
            var n = 0
            for i in 1..<call.count where try call.exists(call[i]) { n += 1 }
            out.integer(n)
        },
        Command("type") { call, out throws(CommandError) in
            out.simpleString(try call.withStored(call[1]) { type, _, _ in type?.name ?? "none" })
        },
        Command("rename") { call, out throws(CommandError) in
            _ = try rename(call, onlyIfNew: false)
            out.simpleString("OK")
        }.measuringMembers(),
        Command("renamenx") { call, out throws(CommandError) in
            out.integer(try rename(call, onlyIfNew: true) ? 1 : 0)
        }.measuringMembers(),
        Command("copy", handler: copy).measuringMembers(),
        Command("keys") { call, out throws(CommandError) in
            let pattern = call[1]
            var found: [[UInt8]] = []
            try call.forEachKey(prefix: Glob.literalPrefix(pattern)) { key, _, _ in
                if Glob.matches(pattern, key) { found.append(key) }
                return true
            }
            out.arrayHeader(found.count)
            for k in found { out.bulk(k) }
        },
        Command("scan", handler: scan),
        Command("randomkey", handler: randomKey),
        Command("dbsize") { call, out throws(CommandError) in
            var n = 0
            try call.forEachKey { _, _, _ in n += 1; return true }
            out.integer(n)
        },
        Command("flushdb") { call, out throws(CommandError) in
            try flush(call, families: [call.family], &out)
        }.reachingEverything(write: true),
        Command("flushall") { call, out throws(CommandError) in
            try flush(call, families: call.engine.allFamilies, &out)
        }.reachingEverything(write: true),
        expireCommand("expire", .seconds, absolute: false),
        expireCommand("pexpire", .milliseconds, absolute: false),
        expireCommand("expireat", .seconds, absolute: true),
        expireCommand("pexpireat", .milliseconds, absolute: true),
        ttlCommand("ttl") { at, now in (at - now + 500) / 1000 },
        ttlCommand("pttl") { at, now in at - now },
        ttlCommand("expiretime") { at, _ in at / 1000 },
        ttlCommand("pexpiretime") { at, _ in at },
        Command("persist") { call, out throws(CommandError) in
            let changed = try call.locked(call[1]) { () throws(CommandError) -> Bool in
                guard var entry = try call.readEntry(call[1]), entry.expiresAt != nil else { return false }
                entry.expiresAt = nil
                try call.writeEntry(call[1], entry)
                call.notify(.generic, "persist", call[1])
                return true
            }
            out.integer(changed ? 1 : 0)
        },
    ]

    static func delete(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var seen = Set<[UInt8]>()
        let keys = call.argv.dropFirst().filter { seen.insert($0).inserted }
        let locks = call.engine.locks
        let stripes = keys.map { locks.stripe(for: $0, in: call.family) }
        // Many keys: read which exist before taking their locks, so writers of those stripes wait
        // only for the delete itself (a 500,000-key DEL held them 2.4 s, now about a fifth);
        // keys of a stripe whose version moved meanwhile are read again under the lock.
        var early: (versions: [Int: UInt64], live: [Bool])? = nil
        // (From `KeyLocks.claimThreshold` keys on, the keys are claimed rather than their
        // stripes held, so no other writer waits unless it writes one of them.)
        if keys.count > 64 && keys.count < KeyLocks.claimThreshold && call.session.transaction == nil && !call.session.holdsKeyLocks {
            let versions = Dictionary(uniqueKeysWithValues: Set(stripes).map { ($0, locks.unlockedVersion(ofStripe: $0)) })
            early = (versions, try call.existMany(keys))
        }
        let n = try call.locked(keys) { () throws(CommandError) -> Int in
            var live: [Bool]
            if let early {
                live = early.live
                let stale = keys.indices.filter { locks.heldVersion(stripes[$0]) != early.versions[stripes[$0]] }
                if !stale.isEmpty {
                    for (i, now) in zip(stale, try call.existMany(stale.map { keys[$0] })) { live[i] = now }
                }
            } else {
                live = try call.existMany(keys)
            }
            let present = zip(keys, live).filter(\.1).map(\.0)
            if !present.isEmpty { try call.writeBatch([], deletes: present) }
            for k in present { call.notify(.generic, "del", k) }
            return present.count
        }
        out.integer(n)
    }

    static func rename(_ call: Call, onlyIfNew: Bool) throws(CommandError) -> Bool {
        let (from, to) = (call[1], call[2])
        return try call.locked([from, to]) { () throws(CommandError) -> Bool in
            guard let entry = try call.readEntry(from) else { throw .noSuchKey }
            if from == to { return !onlyIfNew }
            if onlyIfNew, try call.exists(to) { return false }
            if call.session.transaction == nil, let meta = CollectionMetadata(type: entry.type, payload: entry.payload, expiresAt: entry.expiresAt) {
                try move(call, meta, from: from, to: to)
            } else {
                try place(call, entry, of: from, at: to, removingSource: true)
            }
            // Redis deletes the destination and adds it again: always a new key.
            call.notifyNew(to)
            call.notify(.generic, "rename_from", from)
            call.notify(.generic, "rename_to", to)
            return true
        }
    }

    /// RENAME of a collection: its metadata moves to `to` and its members stay where they are
    /// (O(1), as Redis's RENAME), with a record of where it went (`CollectionMoves`), all in one
    /// batch. Inside EXEC or a script it is copied instead (`place`), within the transaction.
    static func move(_ call: Call, _ meta: CollectionMetadata, from: [UInt8], to: [UInt8]) throws(CommandError) {
        let family = call.family
        guard let metaFamily = call.database.family(named: Engine.metaFamilyName) else {
            throw CommandError("ERR", "internal error; see the server log")
        }
        let home = meta.home ?? from
        var moved = meta
        moved.home = home == to ? nil : home
        var batch = WriteBatch()
        // A collection `to` held that was itself moved: its record goes with it.
        if let old = try call.readEntry(to), let oldMeta = CollectionMetadata(type: old.type, payload: old.payload, expiresAt: old.expiresAt),
           let oldHome = oldMeta.home {
            batch.delete(CollectionMoves.recordKey(family: family.name, home: oldHome, version: oldMeta.version), in: metaFamily)
        }
        batch.put(to, moved.stored, in: family.handle)
        batch.delete(from, in: family.handle)
        let record = CollectionMoves.recordKey(family: family.name, home: home, version: meta.version)
        if moved.home == nil { batch.delete(record, in: metaFamily) } else { batch.put(record, to, in: metaFamily) }
        let options = call.engine.writeOptions
        try call.engine.storage("rename") { try call.database.write(batch, options: options) }
        call.engine.locks.changed(to, in: family)
        call.engine.locks.changed(from, in: family)
        if let at = meta.expiresAt { call.engine.expirySweep.noteExpiringWrite(expiresAt: at) }
        call.engine.blocking.signal(family: family.name, keys: [to])
    }

    /// Writes `entry` (read from `from`) at `to`, replacing what `to` holds, in one batch with
    /// the deletion of `from` when `removingSource` (RENAME inside a transaction). A
    /// collection's members are copied under a new version (COPY; RENAME elsewhere: `move`).
    static func place(_ call: Call, _ entry: StoredEntry, of from: [UInt8], at to: [UInt8], removingSource: Bool) throws(CommandError) {
        guard let meta = CollectionMetadata(type: entry.type, payload: entry.payload, expiresAt: entry.expiresAt) else {
            if let tx = call.session.transaction {
                _ = tx
                try call.write(to, entry.payload, expiresAt: entry.expiresAt)
                if removingSource { try call.remove(from) }
                return
            }
            var batch = WriteBatch()
            batch.put(to, ValueFormat.encode(entry.payload, expiresAt: entry.expiresAt), in: call.family.handle)
            if removingSource { batch.delete(from, in: call.family.handle) }
            let options = call.engine.writeOptions
            try call.engine.storage("rename") { try call.database.write(batch, options: options) }
            call.engine.locks.changed(to, in: call.family)
            if removingSource { call.engine.locks.changed(from, in: call.family) }
            return
        }
        if let at = meta.expiresAt { call.engine.expirySweep.noteExpiringWrite(expiresAt: at) }
        var source = CollectionChange(key: from, meta: meta, family: call.family.name, existed: true)
        source.meta.removeKey()  // its members become unreachable
        try call.writeNew(to, entry.type, also: removingSource ? [source] : []) { (copy: inout NewCollection) throws(CommandError) in
            copy.meta.size = meta.size
            copy.meta.head = meta.head
            copy.meta.tail = meta.tail
            copy.meta.stream = meta.stream
            copy.meta.expiresAt = meta.expiresAt
            try call.copyMembers(meta, of: from, into: &copy)
        }
    }

    static func copy(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var replace = false
        var i = 3
        while i < call.count {
            if call[i].isKeyword("REPLACE") {
                replace = true
            } else if call[i].isKeyword("DB"), i + 1 < call.count {
                guard try call.int32(i + 1) == 0 else { throw CommandError("ERR", "DB index is out of range") }
                i += 1
            } else {
                throw .syntax
            }
            i += 1
        }
        let (from, to) = (call[1], call[2])
        // Redis checks this before looking the source up, so a missing key errs too.
        guard from != to else { throw CommandError("ERR", "source and destination objects are the same") }
        let copied = try call.locked([from, to]) { () throws(CommandError) -> Bool in
            guard let entry = try call.readEntry(from) else { return false }
            if !replace, try call.exists(to) { return false }
            try place(call, entry, of: from, at: to, removingSource: false)
            call.notifyNew(to)
            call.notify(.generic, "copy_to", to)
            return true
        }
        out.integer(copied ? 1 : 0)
    }

    static func scan(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let cursor = try call.scanCursor(1)
        var pattern: [UInt8]? = nil
        var count = 10
        var typeFilter: [UInt8]? = nil
        var i = 2
        while i < call.count {
            guard i + 1 < call.count else { throw .syntax }
            if call[i].isKeyword("MATCH") {
                pattern = call[i + 1]
            } else if call[i].isKeyword("COUNT") {
                let c = try call.integer(i + 1)
                guard c >= 1 else { throw .syntax }
                count = Int(min(c, 1_000_000))
            } else if call[i].isKeyword("TYPE") {
                typeFilter = call[i + 1]
            } else {
                throw .syntax
            }
            i += 2
        }
        var start: [UInt8] = []
        if cursor != 0 {
            guard let after = call.engine.scanCursors.resume(cursor, family: call.family.name) else {
                throw CommandError("ERR", "invalid cursor")
            }
            start = after + [0]  // the smallest key after `after`
        }
        var found: [[UInt8]] = []
        var visited = 0
        var last: [UInt8]? = nil
        var more = false
        let prefix = pattern.map(Glob.literalPrefix) ?? []
        // An unknown type matches nothing, as in Redis.
        let wanted: KeyType?? = typeFilter.map { KeyType(name: $0) }
        try call.forEachKey(from: start, prefix: prefix) { key, _, type in
            if visited == count {
                more = true
                return false
            }
            visited += 1
            last = key
            if wanted.map({ $0 == type }) ?? true, pattern.map({ Glob.matches($0, key) }) ?? true { found.append(key) }
            return true
        }
        out.arrayHeader(2)
        if more, let last {
            out.bulk(String(call.engine.scanCursors.save(family: call.family.name, after: last, owner: call.session.id)))
        } else {
            out.bulk("0")
        }
        out.arrayHeader(found.count)
        for k in found { out.bulk(k) }
    }

    static func randomKey(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        // Seek to a random point of the key space, wrapping to the start once.
        var probe = [UInt8](repeating: 0, count: 8)
        for i in probe.indices { probe[i] = UInt8.random(in: 0...255) }
        var found: [UInt8]? = nil
        try call.forEachKey(from: probe) { key, _, _ in found = key; return false }
        if found == nil { try call.forEachKey { key, _, _ in found = key; return false } }
        if let found { out.bulk(found) } else { out.null() }
    }

    /// True for FLUSHDB/FLUSHALL ASYNC; throws on anything but ASYNC or SYNC.
    static func flushIsAsync(_ call: Call) throws(CommandError) -> Bool {
        if call.count > 2 || (call.count == 2 && !call[1].isKeyword("ASYNC") && !call[1].isKeyword("SYNC")) {
            throw .syntax
        }
        return call.count == 2 && call[1].isKeyword("ASYNC")
    }

    /// Deletes every key of the families: one range tombstone each, so it is O(1) in the
    /// number of keys; then compacts each emptied range, off the worker.
    ///
    /// Until compacted, every read that walks the key space (SCAN 0, RANGE, RANDOMKEY, DBSIZE)
    /// steps over each deleted key under the tombstone: 0.7 s after FLUSHALL of a million keys.
    /// So, as Redis's FLUSHALL frees the memory before it answers, the reply waits for the
    /// compaction (off the connection's queue: other clients are served meanwhile); with ASYNC
    /// it comes at once and the compaction runs in the background. Inside EXEC the tombstones
    /// are left to RocksDB's own compactions.
    static func flush(_ call: Call, families: [Family], _ out: inout RESPWriter) throws(CommandError) {
        let async = try flushIsAsync(call)
        var emptied: [(family: Family, end: [UInt8])] = []
        for family in families {
            let handle = family.handle
            let last: [UInt8]? = try call.engine.storage("flush") {
                try call.database.withCursor(in: handle) { cursor in
                    cursor.seekToLast()
                    return cursor.isValid ? cursor.key : nil
                }
            }
            if let tx = call.session.transaction {
                tx.clear(family, storedEnd: last.map { $0 + [0] })
                continue
            }
            guard let last else { continue }
            let options = call.engine.writeOptions
            // Every stripe: any watched key of the family may be among those deleted.
            let members = MemberKeys.familyRange(family.name)
            try call.engine.locks.withAll { () throws(CommandError) in
                try call.engine.storage("flush") {
                    var batch = WriteBatch()
                    batch.deleteRange(from: [], to: last + [0], in: handle)
                    batch.deleteRange(from: members.lower, to: members.upper, in: family.members)
                    try call.database.write(batch, options: options)
                }
            }
            emptied.append((family, last + [0]))
        }
        if call.session.transaction == nil {
            // INFO keyspace shows the emptied families' zero at once, not after the next count.
            let names = families.map(\.name)
            call.engine.keyspaceCount.emptied(names, all: Set(call.engine.allFamilies.map(\.name)).isSubset(of: names))
        }
        guard !emptied.isEmpty else {
            out.simpleString("OK")
            return
        }
        let engine = call.engine
        let database = call.database
        let ranges = emptied.flatMap { e in
            [(name: e.family.name, handle: e.family.handle, from: [UInt8]?.none, end: e.end),
             (name: Engine.membersFamilyName, handle: e.family.members, from: MemberKeys.familyRange(e.family.name).lower,
              end: MemberKeys.familyRange(e.family.name).upper)]
        }
        let compact: @Sendable () -> Void = { compactFlushed(ranges, of: database, engine: engine) }
        if async, let hooks = engine.hooks {
            hooks.runInBackground(compact)
            out.simpleString("OK")
        } else {
            call.deferReply(&out) { (w: inout RESPWriter) throws(CommandError) in
                compact()
                w.simpleString("OK")
            }
        }
    }

    /// Compacts the flushed ranges, so the keys and their tombstones are gone from the files.
    /// Serialised with backups and restores (`Backups.withJob`): a restore swaps the database,
    /// and then the old one's compaction is skipped (it is closed). Failures are logged only:
    /// RocksDB's own compactions reclaim the range later.
    static func compactFlushed(_ ranges: [(name: String, handle: ColumnFamily, from: [UInt8]?, end: [UInt8])], of database: Database, engine: Engine) {
        try? engine.backups.withJob { () throws(CommandError) in
            for r in ranges where !database.isClosed {
                do {
                    try database.compactRange(from: r.from, to: r.end, in: r.handle)
                } catch {
                    engine.logger.info("compacting \(r.name) after a flush: \(error)")
                }
            }
        }
    }

    static func expireCommand(_ name: String, _ unit: ExpiryUnit, absolute: Bool) -> Command {
        Command(name) {
            call, out throws(CommandError) in
            out.integer(try expire(call, unit, absolute: absolute) ? 1 : 0)
        }
    }

    /// EXPIRE and friends with NX, XX, GT, LT: https://redis.io/docs/latest/commands/expire/
    static func expire(_ call: Call, _ unit: ExpiryUnit, absolute: Bool) throws(CommandError) -> Bool {
        var nx = false, xx = false, gt = false, lt = false
        for i in 3..<call.count {
            let a = call[i]
            if a.isKeyword("NX") { nx = true }
            else if a.isKeyword("XX") { xx = true }
            else if a.isKeyword("GT") { gt = true }
            else if a.isKeyword("LT") { lt = true }
            else { throw CommandError("ERR", "Unsupported option \(call.text(i))") }
        }
        if nx && (xx || gt || lt) { throw CommandError("ERR", "NX and XX, GT or LT options at the same time are not compatible") }
        if gt && lt { throw CommandError("ERR", "GT and LT options at the same time are not compatible") }
        let value = try call.integer(2)
        let at = try call.expiry(value, unit, absolute: absolute, allowNonPositive: true)
        return try call.locked(call[1]) { () throws(CommandError) -> Bool in
            guard var old = try call.readEntry(call[1]) else { return false }
            if nx && old.expiresAt != nil { return false }
            if xx && old.expiresAt == nil { return false }
            if gt && (old.expiresAt.map { at <= $0 } ?? true) { return false }
            if lt, let current = old.expiresAt, at >= current { return false }
            if at <= call.now {
                try call.remove(call[1])
                call.engine.stats.expiredKeys.increment()
                call.notify(.generic, "del", call[1])
            } else {
                old.expiresAt = at
                try call.writeEntry(call[1], old)
                call.notify(.generic, "expire", call[1])
            }
            return true
        }
    }

    static func ttlCommand(_ name: String, _ transform: @escaping @Sendable (Int64, Int64) -> Int64) -> Command {
        Command(name) {
            call, out throws(CommandError) in
            let now = call.now
            try call.withStored(call[1]) { type, _, expiresAt in
                if type == nil { out.integer(-2) }
                else if let expiresAt { out.integer(max(0, transform(expiresAt, now))) }
                else { out.integer(-1) }
            }
        }
    }
}
