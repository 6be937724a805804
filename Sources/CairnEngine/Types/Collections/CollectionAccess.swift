import Rocks

/// The staged changes of one collection: member entries to write or delete and the metadata to
/// store with them, committed as one write batch (`Call.commit`). A collection whose size falls
/// to 0 is deleted, as Redis deletes an emptied hash, set, sorted set or list (not a stream:
/// `CollectionMetadata.isGone`).
struct CollectionChange {
    let key: [UInt8]
    var meta: CollectionMetadata
    /// Every member entry of this collection starts with it (`MemberKeys.prefix`).
    let prefix: [UInt8]
    /// Whether the key held this collection before (a new one that stays empty writes nothing).
    let existed: Bool
    /// The key held something else that this change replaces (a *STORE destination).
    var replaces = false
    /// The metadata changed without any member (XSETID): it is written all the same.
    var rewritesMetadata = false
    private(set) var puts: [([UInt8], [UInt8])] = []
    private(set) var deletes: [[UInt8]] = []

    init(key: [UInt8], meta: CollectionMetadata, family: String, existed: Bool) {
        self.init(key: key, meta: meta, prefix: meta.memberPrefix(family: family, key: key), existed: existed)
    }

    /// With the prefix of `meta.version` already known (a transaction's staged collection).
    init(key: [UInt8], meta: CollectionMetadata, prefix: [UInt8], existed: Bool) {
        self.key = key
        self.meta = meta
        self.prefix = prefix
        self.existed = existed
    }

    /// The members-family key of a sub-key of this collection.
    func entryKey(_ tag: MemberKeys.Tag, _ sub: some Collection<UInt8>) -> [UInt8] {
        MemberKeys.entryKey(prefix, tag, sub)
    }

    mutating func put(_ tag: MemberKeys.Tag, _ sub: some Collection<UInt8>, _ value: [UInt8]) {
        puts.append((entryKey(tag, sub), value))
    }

    mutating func delete(_ tag: MemberKeys.Tag, _ sub: some Collection<UInt8>) {
        deletes.append(entryKey(tag, sub))
    }

    /// Forgets the puts so far, once they are written (`NewCollection`).
    mutating func removePuts() { puts.removeAll(keepingCapacity: true) }

    var isEmpty: Bool { puts.isEmpty && deletes.isEmpty && !replaces && !rewritesMetadata }
}

/// Reads and writes of hashes, sets, sorted sets and lists for handlers: the metadata under the
/// user key, the members in the members family, through the connection's snapshot or the
/// running EXEC's overlay, like the string helpers in Keyspace.swift.
extension Call {
    var members: ColumnFamily { family.members }

    /// The live metadata of collection `key`, nil when the key is missing or expired;
    /// WRONGTYPE when it holds another type.
    func collection(_ key: [UInt8], _ type: KeyType) throws(CommandError) -> CollectionMetadata? {
        if let staged = try stagedCollection(key, type) { return staged.meta.isGone ? nil : staged.meta }
        return try withStored(key) { (stored: KeyType?, payload: UnsafeRawBufferPointer?, expiresAt: Int64?) throws(CommandError) -> CollectionMetadata? in
            guard let stored, let payload else { return nil }
            guard stored == type else { throw .wrongType }
            return CollectionMetadata(type: type, payload: payload, expiresAt: expiresAt)
        }
    }

    /// The change to make to collection `key`: its current metadata, or a new empty collection
    /// with a fresh version. WRONGTYPE when the key holds another type. Call under `locked`.
    func change(_ key: [UInt8], _ type: KeyType) throws(CommandError) -> CollectionChange {
        if let staged = try stagedCollection(key, type), !staged.meta.isGone {
            return CollectionChange(key: key, meta: staged.meta, prefix: staged.prefix, existed: true)
        }
        if let meta = try collection(key, type) {
            return CollectionChange(key: key, meta: meta, family: family.name, existed: true)
        }
        return fresh(key, type)
    }

    /// A new empty collection at `key`, replacing whatever the key holds once committed (the
    /// destination of SUNIONSTORE, ZRANGESTORE...). Call under `locked`.
    func fresh(_ key: [UInt8], _ type: KeyType) -> CollectionChange {
        var c = CollectionChange(key: key, meta: CollectionMetadata(type: type, version: engine.collectionVersions.next()),
                                 family: family.name, existed: false)
        c.replaces = true
        return c
    }

    /// The collection the running transaction staged at `key` (size 0: deleted), decoded, when
    /// it does not expire: what `withStored` would decode from the staged bytes, without
    /// encoding them first. Expiring ones take the general path (its expiry check). WRONGTYPE
    /// when the staged collection is of another type.
    private func stagedCollection(_ key: [UInt8], _ type: KeyType) throws(CommandError) -> Transaction.StagedCollection? {
        guard let tx = session.transaction, let staged = tx.stagedCollection(key, in: family.name), staged.meta.expiresAt == nil else { return nil }
        if !staged.meta.isGone && staged.meta.type != type { throw .wrongType }
        return staged
    }

    /// The value of one member entry, or nil.
    func member(_ meta: CollectionMetadata, of key: [UInt8], _ tag: MemberKeys.Tag, _ sub: [UInt8]) throws(CommandError) -> [UInt8]? {
        try memberValue(MemberKeys.entryKey(meta.memberPrefix(family: family.name, key: key), tag, sub))
    }

    /// The value of one member entry of the collection `change` stages, or nil.
    func member(_ change: CollectionChange, _ tag: MemberKeys.Tag, _ sub: [UInt8]) throws(CommandError) -> [UInt8]? {
        try memberValue(change.entryKey(tag, sub))
    }

    /// The values of several member entries, read at one sequence number.
    func members(_ meta: CollectionMetadata, of key: [UInt8], _ tag: MemberKeys.Tag, _ subs: [[UInt8]]) throws(CommandError) -> [[UInt8]?] {
        let prefix = meta.memberPrefix(family: family.name, key: key)
        return try memberValues(subs.map { MemberKeys.entryKey(prefix, tag, $0) })
    }

    /// The values of several member entries of the collection `change` stages.
    func members(_ change: CollectionChange, _ tag: MemberKeys.Tag, _ subs: [[UInt8]]) throws(CommandError) -> [[UInt8]?] {
        try memberValues(subs.map { change.entryKey(tag, $0) })
    }

    /// The live collection at `key` as a change to make (nil when missing); WRONGTYPE when the
    /// key holds another type. Call under `locked`.
    func existing(_ key: [UInt8], _ type: KeyType) throws(CommandError) -> CollectionChange? {
        if let staged = try stagedCollection(key, type) {
            return staged.meta.isGone ? nil : CollectionChange(key: key, meta: staged.meta, prefix: staged.prefix, existed: true)
        }
        return try collection(key, type).map { CollectionChange(key: key, meta: $0, family: family.name, existed: true) }
    }

    private func memberValue(_ k: [UInt8]) throws(CommandError) -> [UInt8]? {
        if let tx = session.transaction, let staged = tx.stagedMember(k) { return staged }
        let handle = members
        let options = readOptions
        return try engine.storage("read") { try database.get(k, in: handle, options: options) }
    }

    /// Inside a transaction, the entries it staged come from its overlay and the others from one
    /// MultiGet, as outside.
    private func memberValues(_ keys: [[UInt8]]) throws(CommandError) -> [[UInt8]?] {
        if keys.count == 1 { return [try memberValue(keys[0])] }
        var values = [[UInt8]?](repeating: nil, count: keys.count)
        var unstaged = Array(keys.indices)
        if let tx = session.transaction {
            unstaged.removeAll { i in
                guard let staged = tx.stagedMember(keys[i]) else { return false }
                values[i] = staged
                return true
            }
        }
        guard !unstaged.isEmpty else { return values }
        let handle = members
        let options = readOptions
        let read = unstaged.count == keys.count ? keys : unstaged.map { keys[$0] }
        let stored: [[UInt8]?] = try engine.storage("read") {
            try database.withValues(forKeys: read, in: handle, options: options) { found in found.map { $0.map { Array($0) } } }
        }
        for (i, v) in zip(unstaged, stored) { values[i] = v }
        return values
    }

    /// Visits the entries of `tag` of a collection in order (backward when `reverse`), from
    /// sub-key `lower` (inclusive) to `upper` (exclusive), while `body` returns true. Inside
    /// EXEC, what the transaction staged is merged in.
    func scanMembers(
        _ meta: CollectionMetadata, of key: [UInt8], _ tag: MemberKeys.Tag,
        from lower: [UInt8]? = nil, to upper: [UInt8]? = nil, reverse: Bool = false,
        _ body: (_ sub: [UInt8], _ value: [UInt8]) throws(CommandError) -> Bool
    ) throws(CommandError) {
        try scanMembers(collection: meta.memberPrefix(family: family.name, key: key), tag,
                        from: lower, to: upper, reverse: reverse, body)
    }

    /// `scanMembers` of the collection `change` stages (its prefix already known).
    func scanMembers(
        _ change: CollectionChange, _ tag: MemberKeys.Tag,
        from lower: [UInt8]? = nil, to upper: [UInt8]? = nil, reverse: Bool = false,
        _ body: (_ sub: [UInt8], _ value: [UInt8]) throws(CommandError) -> Bool
    ) throws(CommandError) {
        try scanMembers(collection: change.prefix, tag, from: lower, to: upper, reverse: reverse, body)
    }

    private func scanMembers(
        collection: [UInt8], _ tag: MemberKeys.Tag, from lower: [UInt8]?, to upper: [UInt8]?, reverse: Bool,
        _ body: (_ sub: [UInt8], _ value: [UInt8]) throws(CommandError) -> Bool
    ) throws(CommandError) {
        let prefix = collection + [tag.rawValue]
        let lowerKey = prefix + (lower ?? [])
        let upperKey = upper.map { prefix + $0 } ?? Call.prefixEnd(prefix)
        guard let tx = session.transaction else {
            // Nothing staged to lay over: each entry's sub-key and value straight from the cursor.
            try visitStored(lowerKey, upperKey, reverse: reverse) { k, v throws(CommandError) in
                try body(Array(k[prefix.count...]), Array(v))
            }
            return
        }
        let staged = tx.stagedMembers(of: collection, from: lowerKey, to: upperKey)
        try scanStored(lowerKey, upperKey, reverse: reverse, index: prefix, laying: staged, from: tx) { k, v throws(CommandError) in
            try body(Array(k[prefix.count...]), v)
        }
    }

    /// `scanMembers` for a reader that uses each entry only while visiting it (LRANGE): outside
    /// a transaction the sub-key and value are the cursor's own buffers, valid during the call
    /// only, so a 100-element LRANGE allocates nothing per element. Inside one, what the
    /// transaction staged is laid over, through `scanMembers`.
    func visitMembers(
        _ meta: CollectionMetadata, of key: [UInt8], _ tag: MemberKeys.Tag,
        from lower: [UInt8]? = nil, to upper: [UInt8]? = nil, reverse: Bool = false,
        _ body: (_ sub: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws(CommandError) -> Bool
    ) throws(CommandError) {
        guard session.transaction == nil else {
            try scanMembers(meta, of: key, tag, from: lower, to: upper, reverse: reverse) { sub, value throws(CommandError) in
                var result: Result<Bool, CommandError> = .success(false)
                sub.withUnsafeBytes { s in value.withUnsafeBytes { v in result = Result { () throws(CommandError) in try body(s, v) } } }
                return try result.get()
            }
            return
        }
        let prefix = meta.memberPrefix(family: family.name, key: key) + [tag.rawValue]
        let lowerKey = prefix + (lower ?? [])
        let upperKey = upper.map { prefix + $0 } ?? Call.prefixEnd(prefix)
        try visitStored(lowerKey, upperKey, reverse: reverse) { k, v throws(CommandError) in
            try body(UnsafeRawBufferPointer(rebasing: k[prefix.count...]), v)
        }
    }

    /// Visits the stored member entries in `[lowerKey, upperKey)` in order (backward when
    /// `reverse`), through the session's snapshot if any, while `body` returns true; the
    /// buffers are the cursor's, valid during the call only. No transaction is involved.
    private func visitStored(
        _ lowerKey: [UInt8], _ upperKey: [UInt8]?, reverse: Bool,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(CommandError) -> Bool
    ) throws(CommandError) {
        var failure: CommandError? = nil
        var options = readOptions
        options.lowerBound = lowerKey
        options.upperBound = upperKey
        try engine.storage("scan") {
            try database.withCursor(in: members, options: options) { cursor in
                if reverse { cursor.seekToLast() } else { cursor.seek(lowerKey) }
                while cursor.isValid {
                    let goOn = cursor.withKey { k in
                        cursor.withValue { v in
                            do throws(CommandError) {
                                return try body(k, v)
                            } catch {
                                failure = error
                                return false
                            }
                        }
                    }
                    guard goOn else { return }
                    if reverse { cursor.prev() } else { cursor.next() }
                }
                try cursor.check()
            }
        }
        if let failure { throw failure }
    }

    /// Visits the stored entries in `[lowerKey, upperKey)` in order, with the entries `staged`
    /// (keys in that range, in order; their values in `tx`) laid over them: a staged value
    /// replaces the stored one, a staged deletion hides it. Stops as soon as `body` returns
    /// false, so a pop inside a batch reads no more than a pop alone.
    ///
    /// Inside a transaction the cursor over the collection's `index` (its prefix and tag) is
    /// kept for the transaction's later scans of it (`Transaction.IndexCursor`): the next of a
    /// run of pops, which starts where the last one stopped, steps on instead of seeking again
    /// and no iterator is made per pop. What the cursor reads cannot change meanwhile: the
    /// transaction holds the collection's lock until it commits, and writes nothing before.
    private func scanStored(
        _ lowerKey: [UInt8], _ upperKey: [UInt8]?, reverse: Bool, index: [UInt8]? = nil,
        laying staged: ArraySlice<[UInt8]> = [], from tx: Transaction? = nil,
        _ body: ([UInt8], [UInt8]) throws(CommandError) -> Bool
    ) throws(CommandError) {
        let handle = members
        var failure: CommandError? = nil
        // Visits from where `cursor` stands; returns where the cursor stepped last (nil: nowhere).
        func walk(_ cursor: Cursor) -> [UInt8]? {
            var passed: [UInt8]? = nil
            var next = reverse ? staged.endIndex - 1 : staged.startIndex  // the next staged key
            while true {
                let stagedKey: [UInt8]? = staged.indices.contains(next) ? staged[next] : nil
                var key: [UInt8]
                var value: [UInt8]?
                var stored: [UInt8]? = nil
                if cursor.isValid {
                    stored = cursor.key
                    // A shared cursor is bounded by the whole index, not by this scan's range.
                    if reverse ? Bytes.compare(stored!, lowerKey) < 0 : upperKey.map({ Bytes.compare(stored!, $0) >= 0 }) ?? false { stored = nil }
                }
                if let storedKey = stored {
                    key = storedKey
                    let order = stagedKey.map { Bytes.compare($0, storedKey) } ?? 0
                    if let stagedKey, order == 0 || (order < 0) != reverse {
                        // The staged entry comes first, or replaces this stored one.
                        if order == 0 {
                            passed = storedKey
                            if reverse { cursor.prev() } else { cursor.next() }
                        }
                        key = stagedKey
                        value = tx?.stagedMember(stagedKey) ?? nil
                        next += reverse ? -1 : 1
                    } else {
                        value = cursor.value
                        passed = storedKey
                        if reverse { cursor.prev() } else { cursor.next() }
                    }
                } else if let stagedKey {
                    key = stagedKey
                    value = tx?.stagedMember(stagedKey) ?? nil
                    next += reverse ? -1 : 1
                } else {
                    break
                }
                guard let value else { continue }  // deleted in the transaction
                do throws(CommandError) {
                    if try !body(key, value) { return passed }
                } catch {
                    failure = error
                    return passed
                }
            }
            return passed
        }
        try engine.storage("scan") {
            guard let tx, let index, session.readSnapshot == nil else {
                var options = readOptions
                options.lowerBound = lowerKey
                options.upperBound = upperKey
                try database.withCursor(in: handle, options: options) { cursor in
                    if reverse { cursor.seekToLast() } else { cursor.seek(lowerKey) }
                    _ = walk(cursor)
                    try cursor.check()
                }
                return
            }
            let kept = try tx.cursor(over: index) { () throws -> Cursor in
                var options = ReadOptions()
                options.lowerBound = index
                options.upperBound = Call.prefixEnd(index)
                return try database.makeCursor(in: handle, options: options)
            }
            let cursor = kept.cursor
            if !kept.standsAtFirst(reverse ? nil : lowerKey, before: reverse ? upperKey : nil, reverse: reverse) {
                if !reverse {
                    cursor.seek(lowerKey)
                } else if let upperKey {
                    cursor.seekForPrev(upperKey)
                    if cursor.isValid && cursor.withKey({ $0.elementsEqual(upperKey) }) { cursor.prev() }
                } else {
                    cursor.seekToLast()
                }
                kept.passed = nil
            }
            let passed = walk(cursor)
            kept.moved(reverse: reverse, passed: passed)
            try cursor.check()
        }
        if let failure { throw failure }
    }

    /// Commits changes of one or more collections as one write batch (or stages them in the
    /// running EXEC): member entries, then each collection's metadata, deleted when its size is
    /// 0. Call under the keys' locks.
    func commit(_ changes: CollectionChange...) throws(CommandError) {
        try commit(changes)
    }

    /// One collection's change, staged without copying it (the common case inside a batch).
    func commit(_ change: borrowing CollectionChange) throws(CommandError) {
        guard let tx = session.transaction else { return try commit([copy change]) }
        guard Self.writes(change) else { return }
        stage(change, in: tx)
    }

    /// Whether committing `c` writes anything (a new collection left empty writes nothing).
    private static func writes(_ c: borrowing CollectionChange) -> Bool {
        !c.isEmpty || (c.existed && c.meta.isGone)
    }

    private func stage(_ c: borrowing CollectionChange, in tx: Transaction) {
        if !c.existed && !c.meta.isGone { notifyIfNew(c.key) }
        for (k, v) in c.puts { tx.putMember(k, v, collection: c.prefix, in: members) }
        for k in c.deletes { tx.deleteMember(k, collection: c.prefix, in: members) }
        // Written once, at commit, however many commands of the transaction change it.
        tx.stage(c.key, c.meta, prefix: c.prefix, in: family)
        tx.changed(stripe: engine.locks.stripe(for: c.key, in: family))
    }

    /// `inFlight`: the first change is a new collection whose members went ahead in pieces
    /// (`NewCollection`); this write deletes its in-flight record with its metadata.
    func commit(_ changes: [CollectionChange], inFlight: Bool = false) throws(CommandError) {
        let changes = changes.filter { Self.writes($0) }
        guard !changes.isEmpty else { return }
        if let tx = session.transaction {
            for c in changes { stage(c, in: tx) }
            return
        }
        if engine.activeEventClasses != 0 { for c in changes where !c.existed && !c.meta.isGone { notifyIfNew(c.key) } }
        var batch = WriteBatch()
        for c in changes {
            for (k, v) in c.puts { batch.put(k, v, in: members) }
            for k in c.deletes { batch.delete(k, in: members) }
            if c.meta.isGone { batch.delete(c.key, in: family.handle) } else { batch.put(c.key, c.meta.stored, in: family.handle) }
        }
        if inFlight, let meta = database.family(named: Engine.metaFamilyName) {
            batch.delete(Engine.inFlightKey(changes[0].prefix), in: meta)
        }
        let options = engine.writeOptions
        // In pieces behind a journal entry when it is big and its keys are claimed (a long
        // command: LongWork.swift).
        try engine.storage("write") { try engine.writeClaimed(batch, options: options) }
        if inFlight { engine.stats.piecewiseWrites.increment() }
        for c in changes { engine.locks.changed(c.key, in: family) }
        engine.blocking.signal(family: family.name, keys: changes.lazy.filter { !$0.meta.isGone }.map(\.key))
    }
}
