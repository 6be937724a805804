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
        /// `counter`: its number in the batch's `Counters` (0 until numbered).
        case increment(key: [UInt8], by: Result<Int64, CommandError>, counter: Int)

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
            self = .increment(key: argv[1], by: Result { () throws(CommandError) -> Int64 in try delta(call) }, counter: 0)
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
                if let command = table.command(named: name) {
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
            // Compared in place: copying two entries out per comparison retained six references.
            let order = entries.withUnsafeBufferPointer { e in
                e.indices.sorted { a, b in
                    let fa = ObjectIdentifier(e[a].family), fb = ObjectIdentifier(e[b].family)
                    if fa != fb { return fa < fb }
                    let c = Bytes.compare(e[a].key, e[b].key)
                    return c != 0 ? c < 0 : a < b
                }
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
        // Each request parsed once, in order; each counter numbered once, so the reads, the
        // version checks and the increments index arrays instead of hashing its key again.
        var writes: [PlainWrite] = []
        var counters = Counters()
        for g in groups {
            let family = g.session.family
            for r in g.requests {
                let w = PlainWrite(r, engine: self, session: g.session)
                switch w {
                case .set:
                    for i in stride(from: 1, to: r.count - 1, by: 2) { lockKeys.append((r[i], family)) }
                    writes.append(w)
                case .increment(let key, let delta, _):
                    lockKeys.append((key, family))
                    writes.append(.increment(key: key, by: delta, counter: counters.number(key, in: family, locks: locks)))
                }
            }
        }
        let options = writeOptions
        do {
            // The counters are read before the locks are taken, so two workers incrementing
            // keys of shared stripes overlap their reads and wait for each other's writes only;
            // a counter whose stripe moved meanwhile is read again under the lock.
            try readCountersEarly(&counters)
            // SETs and MSETs alone read nothing: their stripes are held shared, so the rounds of
            // two workers write together (see `KeyLocks`); increments hold theirs exclusively.
            let replies = try locks.withLocks(lockKeys, shared: counters.isEmpty) { () throws(CommandError) -> [[PlainReply]] in
                try recheck(&counters)
                var puts = SortedPuts()
                var replies: [[PlainReply]] = []
                replies.reserveCapacity(groups.count)
                var next = 0
                for g in groups {
                    let family = g.session.family
                    replies.append(g.requests.map { r in
                        defer { next += 1 }
                        switch writes[next] {
                        case .set:
                            for i in stride(from: 1, to: r.count - 1, by: 2) {
                                puts.put(r[i], ValueFormat.encode(r[i + 1]), in: family)
                                // Only counters of this batch are tracked; a SET of one resets it.
                                if let n = counters.existingNumber(r[i], in: family) { counters.current[n] = Current(payload: r[i + 1]) }
                            }
                            return .ok
                        case .increment(let key, let delta, let n):
                            let old = counters.current[n]
                            // As in Redis: the argument's error first, then the key's type.
                            if case .failure(let e) = delta { return .error(e) }
                            if old.isCollection { return .error(.wrongType) }
                            switch delta.flatMap({ Counter.increment(old.payload, expiresAt: old.expiresAt, by: $0) }) {
                            case .failure(let e): return .error(e)
                            case .success(let value):
                                puts.put(key, ValueFormat.encode(value.payload, expiresAt: value.expiresAt), in: family)
                                if let at = value.expiresAt { expirySweep.noteExpiringWrite(expiresAt: at) }
                                counters.current[n] = Current(payload: value.payload, expiresAt: value.expiresAt)
                                return .integer(value.value)
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

    /// The distinct counters a batch increments, numbered in first-seen order: their keys,
    /// families and stripes, the stripes' versions when read early, and their values.
    private struct Counters {
        private var numbers: [FamilyKey: Int] = [:]
        private(set) var keys: [[UInt8]] = []
        private(set) var families: [Family] = []
        private(set) var stripes: [Int] = []
        var versions: [UInt64] = []
        var current: [Current] = []

        var isEmpty: Bool { keys.isEmpty }

        /// The counter's number, given one if it is new.
        mutating func number(_ key: [UInt8], in family: Family, locks: KeyLocks) -> Int {
            let slot = FamilyKey(family: ObjectIdentifier(family), key: key)
            if let n = numbers[slot] { return n }
            let n = keys.count
            numbers[slot] = n
            keys.append(key)
            families.append(family)
            stripes.append(locks.stripe(for: key, in: family))
            return n
        }

        /// The number of a counter of this batch, if `key` is one.
        func existingNumber(_ key: [UInt8], in family: Family) -> Int? {
            numbers.isEmpty ? nil : numbers[FamilyKey(family: ObjectIdentifier(family), key: key)]
        }
    }

    /// Reads every counter without its lock, after noting its stripe's version.
    private func readCountersEarly(_ counters: inout Counters) throws(CommandError) {
        guard !counters.isEmpty else { return }
        // Versions first: a write that lands after them moves them (it moves its stripe after
        // it landed), so an unchanged version under the lock means the value read is current.
        counters.versions = counters.stripes.map { locks.unlockedVersion(ofStripe: $0) }
        counters.current = Array(repeating: Current(), count: counters.keys.count)
        try readCounters(Array(counters.keys.indices), into: &counters)
    }

    /// Under the locks: the counters whose stripes moved since they were read are read again.
    private func recheck(_ counters: inout Counters) throws(CommandError) {
        guard !counters.isEmpty else { return }
        let stale = counters.stripes.indices.filter { locks.heldVersion(counters.stripes[$0]) != counters.versions[$0] }
        if !stale.isEmpty { try readCounters(stale, into: &counters) }
    }

    /// The live values of counters `numbers`, one MultiGet per family. Expired values read as
    /// missing (and lose their expiry), as INCR alone treats them.
    private func readCounters(_ numbers: [Int], into counters: inout Counters) throws(CommandError) {
        let now = Clock.milliseconds()
        var left = numbers[...]
        while let first = left.first {
            // One family at a time (a batch almost always has one).
            let family = counters.families[first]
            let these = left.filter { counters.families[$0] === family }
            left = left.filter { counters.families[$0] !== family }[...]
            let keys = these.map { counters.keys[$0] }
            let values = try storage("counter read") {
                try database.withValues(forKeys: keys, in: family.handle) { values in
                    values.map { raw -> Current in
                        guard let raw, let h = ValueFormat.header(of: raw), !h.isExpired(now: now) else { return Current() }
                        if h.type != ValueFormat.stringType { return Current(isCollection: true) }
                        return Current(payload: Array(raw[h.payloadOffset...]), expiresAt: h.expiresAt)
                    }
                }
            }
            for (n, value) in zip(these, values) { counters.current[n] = value }
        }
    }

}
