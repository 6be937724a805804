public import RESP
import Rocks

/// Plain SETs, MSETs and counter increments of many connections, written as one RocksDB batch.
///
/// The server hands the engine every such request its connections read in one poller round
/// (`writePlainWrites`). None of them has been answered yet, so any order between connections
/// is one they could have seen; each connection's own requests keep their order. One write
/// batch (one WAL append) then covers the round instead of one write per request, and the
/// increments of the round read their counters with one MultiGet per family.
extension Engine {
    /// Consecutive plain writes of one connection (`grouping` said `.write`), waiting to be written.
    public struct PlainWrites {
        public let session: Session
        public let requests: [[[UInt8]]]

        public init(session: Session, requests: [[[UInt8]]]) {
            self.session = session
            self.requests = requests
        }
    }

    /// The answer to one plain write.
    public enum PlainReply {
        case ok
        case integer(Int64)
        case error(CommandError)
    }

    /// What one plain write does, parsed from its arguments.
    private enum PlainWrite {
        /// SET or MSET: the argument indexes of the pairs are 1, 3, ...
        case set
        case increment(key: [UInt8], by: Result<Int64, CommandError>)

        /// A counter's delta comes from the command's own rule (`Command.counting`), the one
        /// its handler uses: INCRBY's parsing and DECRBY's overflow check exist once.
        init(_ argv: [[UInt8]], engine: Engine, session: Session) {
            // SET and most MSETs are told apart by shape, without a table lookup on the hot path.
            guard argv.count <= 3, argv[0].count >= 4, case .success(let command) = engine.lookup(argv, first: argv[0]),
                  let delta = command.delta
            else {
                self = .set
                return
            }
            let call = Call(engine: engine, session: session, argv: argv, name: command.name)
            self = .increment(key: argv[1], by: Result { () throws(CommandError) -> Int64 in try delta(call) })
        }
    }

    /// Writes the plain writes of one or more connections as one batch, each in its connection's
    /// family, under the locks of all their keys. Returns the replies of each group, in order.
    /// When the batch fails, each group is tried alone, so one connection's failure (say, its
    /// family was dropped) is not every connection's.
    public func writePlainWrites(_ groups: [PlainWrites]) -> [[PlainReply]] {
        // Each request passed the door (`grouping`) when its connection staged it.
        for g in groups {
            admitted(Bytes.lowercased(g.requests[g.requests.count - 1][0]), session: g.session, count: g.requests.count)
        }
        let started = MonotonicClock.nanoseconds()
        let replies = writeAdmitted(groups)
        completedWrites(groups, replies, nanoseconds: MonotonicClock.nanoseconds() - started)
        return replies
    }

    /// Reports a grouped write to `completed`: each run of one command within a group at the
    /// batch's average time per request (every request of the batch waited for all of it).
    private func completedWrites(_ groups: [PlainWrites], _ replies: [[PlainReply]], nanoseconds: Int) {
        let total = groups.reduce(0) { $0 + $1.requests.count }
        guard total > 0 else { return }
        let each = nanoseconds / total
        for (g, r) in zip(groups, replies) {
            var start = 0
            while start < g.requests.count {
                // Requests of one name in a row share a table lookup.
                let name = g.requests[start][0]
                var end = start + 1
                while end < g.requests.count && g.requests[end][0] == name { end += 1 }
                if let command = table.commands[Bytes.lowercased(name)] {
                    let failed = r[start..<end].reduce(0) { if case .error = $1 { $0 + 1 } else { $0 } }
                    completed(command, g.requests[start..<end], session: g.session, nanoseconds: each * (end - start), failed: failed)
                }
                start = end
            }
        }
    }

    private func writeAdmitted(_ groups: [PlainWrites]) -> [[PlainReply]] {
        let bytes = groups.reduce(0) { sum, g in g.requests.reduce(sum) { $0 + $1.reduce(0) { $0 + $1.count } } }
        guard diskGuard.admit(bytes, engine: self) else {
            return groups.map { $0.requests.map { _ in .error(.diskFull) } }
        }
        switch write(groups) {
        case .success(let replies): return replies
        case .failure(let failure) where groups.count == 1: return [groups[0].requests.map { _ in .error(failure) }]
        case .failure:
            return groups.map { g in
                switch write([g]) {
                case .success(let replies): replies[0]
                case .failure(let failure): g.requests.map { _ in .error(failure) }
                }
            }
        }
    }

    /// Appends the replies of one group; the outcome says whether any wrote (its replies wait
    /// for a sync under `appendfsync always`).
    @discardableResult
    public func reply(_ replies: [PlainReply], session: Session, out: inout RESPWriter) -> Outcome {
        var outcome = Outcome()
        for r in replies {
            switch r {
            case .ok:
                out.simpleString("OK")
                outcome.wroteToWAL = true
            case .integer(let n):
                out.integer(n)
                outcome.wroteToWAL = true
            case .error(let e):
                reply(e, to: &out)
            }
        }
        return outcome
    }

    /// The puts of one batch, handed to RocksDB in key order. The memtable inserts each key by
    /// searching its skip list, remembering the path of the previous insert: after a nearby key
    /// only the lowest levels need searching again, while keys in arrival order (random, from
    /// many clients) make nearly every insert a full search with a cache miss per level. Equal
    /// keys keep their arrival order, so the last write of a key still gets the newest sequence
    /// number and wins.
    private struct SortedPuts {
        private var entries: [(family: Family, key: [UInt8], value: [UInt8])] = []

        mutating func put(_ key: [UInt8], _ value: [UInt8], in family: Family) {
            entries.append((family, key, value))
        }

        func batch() -> WriteBatch {
            let order = entries.indices.sorted { a, b in
                let x = entries[a], y = entries[b]
                if x.family !== y.family { return ObjectIdentifier(x.family) < ObjectIdentifier(y.family) }
                let c = Bytes.compare(x.key, y.key)
                return c != 0 ? c < 0 : a < b
            }
            var batch = WriteBatch()
            for i in order { batch.put(entries[i].key, entries[i].value, in: entries[i].family.handle) }
            return batch
        }

        /// Fires the WATCHes of the written keys, once the batch landed (their stripes are held).
        func markChanged(in locks: KeyLocks) {
            for e in entries { locks.changed(e.key, in: e.family) }
        }
    }

    /// A key in one family, for the values the batch reads and writes.
    private struct FamilyKey: Hashable {
        let family: ObjectIdentifier
        let key: [UInt8]

        // The key's bytes in one call (see `ByteKey`).
        func hash(into hasher: inout Hasher) {
            hasher.combine(family)
            key.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// A counter's value as the batch sees it: its payload (nil when missing) and expiry.
    private struct Current {
        var payload: [UInt8]?
        var expiresAt: Int64?
        /// The key holds a collection: INCR answers WRONGTYPE.
        var isCollection = false
    }

    /// One write batch of `groups`, or why it failed.
    private func write(_ groups: [PlainWrites]) -> Result<[[PlainReply]], CommandError> {
        var lockKeys: [(key: [UInt8], family: Family)] = []
        var counters: [ObjectIdentifier: (family: Family, keys: Set<ByteKey>)] = [:]
        for g in groups {
            let family = g.session.family
            for r in g.requests {
                switch PlainWrite(r, engine: self, session: g.session) {
                case .set:
                    for i in stride(from: 1, to: r.count - 1, by: 2) { lockKeys.append((r[i], family)) }
                case .increment(let key, _):
                    lockKeys.append((key, family))
                    counters[ObjectIdentifier(family), default: (family, [])].keys.insert(ByteKey(key))
                }
            }
        }
        let options = writeOptions
        do {
            // The counters are read before the locks are taken, so two workers incrementing
            // keys of shared stripes overlap their reads and wait for each other's writes only;
            // a counter whose stripe moved meanwhile is read again under the lock.
            let early = try readCountersEarly(counters)
            let replies = try locks.withLocks(lockKeys) { () throws(CommandError) -> [[PlainReply]] in
                var current = try recheck(early, counters)
                var puts = SortedPuts()
                var replies: [[PlainReply]] = []
                replies.reserveCapacity(groups.count)
                for g in groups {
                    let family = g.session.family
                    replies.append(g.requests.map { r in
                        switch PlainWrite(r, engine: self, session: g.session) {
                        case .set:
                            for i in stride(from: 1, to: r.count - 1, by: 2) {
                                puts.put(r[i], ValueFormat.encode(r[i + 1]), in: family)
                                // Only counters of this batch are tracked; a SET of one resets it.
                                if !current.isEmpty {
                                    let slot = FamilyKey(family: ObjectIdentifier(family), key: r[i])
                                    if current[slot] != nil { current[slot] = Current(payload: r[i + 1]) }
                                }
                            }
                            return .ok
                        case .increment(let key, let delta):
                            let slot = FamilyKey(family: ObjectIdentifier(family), key: key)
                            let old = current[slot] ?? Current()
                            // As in Redis: the argument's error first, then the key's type.
                            if case .failure(let e) = delta { return .error(e) }
                            if old.isCollection { return .error(.wrongType) }
                            switch delta.flatMap({ Counter.increment(old.payload, expiresAt: old.expiresAt, by: $0) }) {
                            case .failure(let e): return .error(e)
                            case .success(let next):
                                puts.put(key, ValueFormat.encode(next.payload, expiresAt: next.expiresAt), in: family)
                                if let at = next.expiresAt { expirySweep.noteExpiringWrite(expiresAt: at) }
                                current[slot] = Current(payload: next.payload, expiresAt: next.expiresAt)
                                return .integer(next.value)
                            }
                        }
                    })
                }
                let batch = puts.batch()
                try storage("grouped write") { try database.write(batch, options: options) }
                puts.markChanged(in: locks)
                return replies
            }
            return .success(replies)
        } catch {
            return .failure(error)
        }
    }

    /// Counters read without their locks, with the versions of their stripes from before.
    private struct EarlyCounters {
        var current: [FamilyKey: Current] = [:]
        var versions: [FamilyKey: UInt64] = [:]
    }

    private func readCountersEarly(_ counters: [ObjectIdentifier: (family: Family, keys: Set<ByteKey>)]) throws(CommandError) -> EarlyCounters {
        guard !counters.isEmpty else { return EarlyCounters() }
        var early = EarlyCounters()
        // Versions first: a write that lands after them moves them (it moves its stripe after
        // it landed), so an unchanged version under the lock means the value read is current.
        for (id, c) in counters {
            for key in c.keys { early.versions[FamilyKey(family: id, key: key.bytes)] = locks.unlockedVersion(ofStripe: locks.stripe(for: key.bytes, in: c.family)) }
        }
        early.current = try readCounters(counters)
        return early
    }

    /// Under the locks: the early values whose stripes did not move, the others read again.
    private func recheck(_ early: EarlyCounters, _ counters: [ObjectIdentifier: (family: Family, keys: Set<ByteKey>)]) throws(CommandError) -> [FamilyKey: Current] {
        var current = early.current
        var stale: [ObjectIdentifier: (family: Family, keys: Set<ByteKey>)] = [:]
        for (id, c) in counters {
            for key in c.keys {
                let slot = FamilyKey(family: id, key: key.bytes)
                if locks.heldVersion(locks.stripe(for: key.bytes, in: c.family)) != early.versions[slot] {
                    stale[id, default: (c.family, [])].keys.insert(key)
                }
            }
        }
        if !stale.isEmpty { current.merge(try readCounters(stale)) { _, again in again } }
        return current
    }

    /// The live values of the counters the batch increments, one MultiGet per family. Expired
    /// values read as missing (and lose their expiry), as INCR alone treats them.
    private func readCounters(_ counters: [ObjectIdentifier: (family: Family, keys: Set<ByteKey>)]) throws(CommandError) -> [FamilyKey: Current] {
        var current: [FamilyKey: Current] = [:]
        let now = Clock.milliseconds()
        for (id, c) in counters {
            let keys = c.keys.map(\.bytes)
            let values = try storage("counter read") {
                try database.withValues(forKeys: keys, in: c.family.handle) { values in
                    values.map { raw -> Current in
                        guard let raw, let h = ValueFormat.header(of: raw), !h.isExpired(now: now) else { return Current() }
                        if h.type != ValueFormat.stringType { return Current(isCollection: true) }
                        return Current(payload: Array(raw[h.payloadOffset...]), expiresAt: h.expiresAt)
                    }
                }
            }
            for (key, value) in zip(keys, values) { current[FamilyKey(family: id, key: key)] = value }
        }
        return current
    }

}
