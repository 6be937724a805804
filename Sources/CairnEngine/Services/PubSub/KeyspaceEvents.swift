import Rocks

/// Keyspace notifications (`notify-keyspace-events`), as Redis 7.0 sends them:
/// https://redis.io/docs/latest/develop/use/keyspace-notifications/
///
/// A handler calls `Call.notify` after its write, as Redis's commands call
/// `notifyKeyspaceEvent`. With the option empty (the default) that is one relaxed atomic load.
/// Otherwise the event waits for the write to be durable: inside a transaction (EXEC, a script,
/// a batched round) in the transaction, which writes the events into its write batch as
/// RocksDB log data and publishes them once the batch committed; run alone, in the session,
/// published when the handler returns (its writes are done by then) and recorded for replicas
/// in a batch of their own. A replica publishes the events it finds in the batches it applies
/// (`Replication.publishEvents`). docs/pubsub.md explains the design.
enum KeyspaceEvents {
    /// Redis's event classes (its `NOTIFY_*` bits, same values).
    struct Classes: OptionSet, Sendable, Hashable {
        let rawValue: Int

        static let keyspace = Classes(rawValue: 1 << 0)  // K
        static let keyevent = Classes(rawValue: 1 << 1)  // E
        static let generic = Classes(rawValue: 1 << 2)  // g
        static let string = Classes(rawValue: 1 << 3)  // $
        static let list = Classes(rawValue: 1 << 4)  // l
        static let set = Classes(rawValue: 1 << 5)  // s
        static let hash = Classes(rawValue: 1 << 6)  // h
        static let zset = Classes(rawValue: 1 << 7)  // z
        static let expired = Classes(rawValue: 1 << 8)  // x
        static let evicted = Classes(rawValue: 1 << 9)  // e: Cairn never evicts
        static let stream = Classes(rawValue: 1 << 10)  // t
        static let keyMiss = Classes(rawValue: 1 << 11)  // m
        static let module = Classes(rawValue: 1 << 13)  // d: no modules in Cairn
        static let new = Classes(rawValue: 1 << 14)  // n

        /// `A`: every class but key-miss and new, as in Redis.
        static let all: Classes = [.generic, .string, .list, .set, .hash, .zset, .expired, .evicted, .stream, .module]
    }

    /// The characters of each class, in the order `format` writes them (`A` aside).
    private static let letters: [(Character, Classes)] = [
        ("g", .generic), ("$", .string), ("l", .list), ("s", .set), ("h", .hash), ("z", .zset), ("x", .expired),
        ("e", .evicted), ("t", .stream), ("d", .module), ("n", .new),
    ]

    /// Redis's `keyspaceEventsStringToFlags`: nil at a character that names no class.
    static func parse(_ text: String) -> Classes? {
        var c: Classes = []
        for ch in text {
            switch ch {
            case "A": c.formUnion(.all)
            case "K": c.insert(.keyspace)
            case "E": c.insert(.keyevent)
            case "m": c.insert(.keyMiss)
            default:
                guard let (_, cls) = letters.first(where: { $0.0 == ch }) else { return nil }
                c.insert(cls)
            }
        }
        return c
    }

    /// Redis's `keyspaceEventsFlagsToString`, byte for byte: `A` stands for the classes it
    /// covers and then hides `n` too (Redis 7.0 writes `n` only without `A`).
    static func format(_ c: Classes) -> String {
        var s = ""
        if c.isSuperset(of: .all) {
            s = "A"
        } else {
            for (ch, cls) in letters where c.contains(cls) { s.append(ch) }
        }
        if c.contains(.keyspace) { s.append("K") }
        if c.contains(.keyevent) { s.append("E") }
        if c.contains(.keyMiss) { s.append("m") }
        return s
    }

    /// Redis's error text for a string `parse` refuses.
    static let invalid = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."

    /// The classes that publish anything: none unless K or E is on (the channels), so a check
    /// against this value is the whole cost of a write when notifications are off.
    static func active(_ c: Classes) -> Int {
        c.isDisjoint(with: [.keyspace, .keyevent]) ? 0 : c.rawValue
    }

    /// One event: its class, its name (`set`, `lpush`...) and the key.
    struct Event: Equatable {
        var type: Classes
        var name: String
        var key: [UInt8]
        /// Where it goes: subscribers here, replicas (the batch's log data), or both. A key a
        /// write finds expired is `expired` here and `del` on replicas, as in Redis.
        var scope = Scope.both

        enum Scope { case both, local, replicas }
    }

    // MARK: events in write batches, for replicas

    /// What starts a log-data blob of events (other log data, if any, is not Cairn's events).
    static let marker: [UInt8] = Array("cairn:keyspace-events\u{0}".utf8)

    /// `events` as one log-data blob: the marker, then per event its class, name and key,
    /// each length-prefixed (varints). Events for here only are left out.
    static func encode(_ events: [Event]) -> [UInt8] {
        var out = marker
        for e in events where e.scope != .local {
            appendVarint(UInt64(e.type.rawValue), to: &out)
            appendVarint(UInt64(e.name.utf8.count), to: &out)
            out += e.name.utf8
            appendVarint(UInt64(e.key.count), to: &out)
            out += e.key
        }
        return out
    }

    /// The events of a blob `encode` made; nil when it is not one (or is cut short).
    static func decode(_ blob: ArraySlice<UInt8>) -> [Event]? {
        guard blob.starts(with: marker) else { return nil }
        var at = blob.startIndex + marker.count
        func varint() -> Int? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while at < blob.endIndex && shift < 64 {
                let b = blob[at]
                at += 1
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return Int(exactly: result) }
                shift += 7
            }
            return nil
        }
        func bytes() -> ArraySlice<UInt8>? {
            guard let n = varint(), n <= blob.endIndex - at else { return nil }
            defer { at += n }
            return blob[at..<at + n]
        }
        var events: [Event] = []
        while at < blob.endIndex {
            guard let type = varint(), let name = bytes(), let key = bytes() else { return nil }
            events.append(Event(type: Classes(rawValue: type), name: String(decoding: name, as: UTF8.self), key: Array(key)))
        }
        return events
    }

    private static func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// The meta-family key a write run alone deletes beside its events' log data, so the batch
    /// has an operation: it takes a sequence number and travels to replicas like any write
    /// (RocksDB's WAL feed skips batches of log data alone).
    static let carrierKey: [UInt8] = Array("keyspace-events".utf8)
}

extension Engine {
    /// The classes `notify-keyspace-events` turns on, as `KeyspaceEvents.active` gives them.
    var activeEventClasses: Int { keyspaceEventClasses.load(ordering: .relaxed) }

    /// Publishes `events` to their channels as Redis does: `__keyspace@0__:<key>` with the
    /// event's name (K), `__keyevent@0__:<name>` with the key (E). Classes not on now are
    /// left out (a replica's own setting filters its primary's events).
    func publish(_ events: [KeyspaceEvents.Event]) {
        let on = activeEventClasses
        guard on != 0 else { return }
        let classes = KeyspaceEvents.Classes(rawValue: on)
        for e in events where classes.contains(e.type) && e.scope != .replicas {
            if classes.contains(.keyspace) {
                _ = pubsub.publish(Array(e.name.utf8), to: Self.keyspacePrefix + e.key)
            }
            if classes.contains(.keyevent) {
                _ = pubsub.publish(e.key, to: Self.keyeventPrefix + Array(e.name.utf8))
            }
        }
    }

    /// Cairn serves database 0 only.
    static let keyspacePrefix = Array("__keyspace@0__:".utf8)
    static let keyeventPrefix = Array("__keyevent@0__:".utf8)

    /// Publishes what a command run alone recorded (its writes are done), and writes the
    /// events for replicas. Called when a handler returns (`runHandler`) and after a blocked
    /// client's pop (`retryBlocked`).
    func flushEvents(of session: Session) {
        guard !session.pendingEvents.isEmpty else { return }
        let events = session.pendingEvents
        session.pendingEvents = []
        recordForReplicas(events.filter { $0.type != .keyMiss && $0.scope != .local })
        publish(events)
    }

    /// Whether this server feeds or has fed replicas (`Replication.keepWAL`), or follows a
    /// primary (its own replicas read its WAL): where events written for replicas are read.
    var feedsReplicas: Bool { replication.walWanted.load(ordering: .relaxed) || walKept.load(ordering: .relaxed) }

    /// Writes `events` for replicas in a batch of their own, for a write that did not go
    /// through a transaction (a transaction writes them into its own batch). Only on a server
    /// that feeds or has fed replicas (`keepWAL`): a replica's first sync is a full one, which
    /// brings no events. A failure is logged: the write they describe is done, and local
    /// subscribers still get them.
    func recordForReplicas(_ events: [KeyspaceEvents.Event]) {
        guard !events.isEmpty, feedsReplicas, !diskGuard.refusesWrites, let meta = database.family(named: Engine.metaFamilyName) else { return }
        var carrier = WriteBatch()
        carrier.putLogData(KeyspaceEvents.encode(events))
        carrier.delete(KeyspaceEvents.carrierKey, in: meta)
        do {
            try database.write(carrier, options: writeOptions)
        } catch {
            logger.warning("keyspace events could not be written for replicas: \(error)")
        }
    }
}

// MARK: expired keys

extension Engine {
    /// For replicas, the deletion of expired `keys` as a `del` of each (class g): Redis's
    /// replicas publish `del` for the DEL their primary sends when a key expires. Written into
    /// `batch`, the deletion's own.
    func addExpiryEvents(_ keys: [[UInt8]], to batch: inout WriteBatch) {
        guard activeEventClasses & KeyspaceEvents.Classes.generic.rawValue != 0, !keys.isEmpty, feedsReplicas else { return }
        batch.putLogData(KeyspaceEvents.encode(keys.map { KeyspaceEvents.Event(type: .generic, name: "del", key: $0) }))
    }

    /// After expired `keys` were deleted: an `expired` event for each (class x). Keys of any
    /// family are published as database 0's (the only one).
    func publishExpired(_ keys: [[UInt8]]) {
        publish(keys.map { KeyspaceEvents.Event(type: .expired, name: "expired", key: $0) })
    }
}

extension Call {
    /// Records event `name` of class `type` for `key` (Redis's `notifyKeyspaceEvent`), after
    /// the write it describes: published once that write is durable. Free when the class is off.
    @inline(__always)
    func notify(_ type: KeyspaceEvents.Classes, _ name: String, _ key: [UInt8]) {
        guard engine.activeEventClasses & type.rawValue != 0 else { return }
        record(KeyspaceEvents.Event(type: type, name: name, key: key))
    }

    /// How many events the running command's transaction or session holds: a mark for
    /// `dropEvents(from:)`.
    var eventsRecorded: Int { session.transaction?.events.count ?? session.pendingEvents.count }

    /// Takes back the events recorded since `mark`, for a write that failed after recording them.
    func dropEvents(from mark: Int) {
        if let tx = session.transaction {
            if tx.events.count > mark { tx.events.removeSubrange(mark...) }
        } else if session.pendingEvents.count > mark {
            session.pendingEvents.removeSubrange(mark...)
        }
    }

    func record(_ event: KeyspaceEvents.Event) {
        if let tx = session.transaction { tx.events.append(event) } else { session.pendingEvents.append(event) }
    }

    /// Before a write that may create `key`: records `new` (class n) when the key holds nothing
    /// live now, as Redis's `dbAdd` does. Reads the key only when class n is on.
    func notifyIfNew(_ key: [UInt8]) {
        guard engine.activeEventClasses & KeyspaceEvents.Classes.new.rawValue != 0 else { return }
        if (try? exists(key)) == false { record(KeyspaceEvents.Event(type: .new, name: "new", key: key)) }
    }

    /// `new` for `key` unless the write just recorded it (`notifyIfNew`): for the commands
    /// Redis always publishes it for, replacing or not (RENAME, COPY, RESTORE).
    func notifyNew(_ key: [UInt8]) {
        guard engine.activeEventClasses & KeyspaceEvents.Classes.new.rawValue != 0 else { return }
        let event = KeyspaceEvents.Event(type: .new, name: "new", key: key)
        let last = session.transaction.map { $0.events.last } ?? session.pendingEvents.last
        if last != event { record(event) }
    }

    /// Whether Redis's version of this command reads `key` with `lookupKeyRead` (which
    /// publishes `keymiss`): a read-only command (but OBJECT and MEMORY, which look keys up
    /// without it), and the sources of the writes that read them that way.
    private func readsByLookup(_ key: [UInt8]) -> Bool {
        guard let command = engine.table.named(Array(name.utf8)) else { return false }
        if command.flags.contains(.readonly) { return !name.hasPrefix("object") && !name.hasPrefix("memory") }
        switch name {
        case "sinterstore", "sunionstore", "sdiffstore", "zunionstore", "zinterstore", "zdiffstore", "zrangestore", "geosearchstore":
            return key != argv[1]
        case "bitop": return key != argv[2]
        // Redis reads these through GET's lookup, or as a read when nothing is written.
        case "getdel", "getex", "getset", "copy": return key == argv[1]
        case "set": return argv.dropFirst(3).contains { $0.isKeyword("GET") }
        case "bitfield": return !argv.dropFirst(2).contains { $0.isKeyword("SET") || $0.isKeyword("INCRBY") }
        case "georadius", "georadiusbymember": return key == argv[1]
        // The source and the BY and GET patterns' keys, not the STORE destination.
        case "sort":
            guard let at = argv.indices.dropFirst(2).first(where: { argv[$0].isKeyword("STORE") }), at + 1 < argv.count else { return true }
            return key != argv[at + 1]
        case "pfmerge": return true
        default: return false
        }
    }

    /// Takes back the `new` event a commit just recorded for `key`, for a command whose other
    /// events Redis publishes before it (SMOVE's source's); true when there was one.
    func takeNew(_ key: [UInt8]) -> Bool {
        guard engine.activeEventClasses & KeyspaceEvents.Classes.new.rawValue != 0 else { return false }
        let event = KeyspaceEvents.Event(type: .new, name: "new", key: key)
        if let tx = session.transaction {
            guard let i = tx.events.lastIndex(of: event) else { return false }
            tx.events.remove(at: i)
        } else {
            guard let i = session.pendingEvents.lastIndex(of: event) else { return false }
            session.pendingEvents.remove(at: i)
        }
        return true
    }

    /// A lookup found no live `key`: a read-only command records `keymiss` (class m), once per
    /// key and command, as Redis's `lookupKeyRead` does (its writes' lookups, and OBJECT's, do not).
    @inline(__always)
    func missed(_ key: [UInt8]) {
        guard engine.activeEventClasses & KeyspaceEvents.Classes.keyMiss.rawValue != 0 else { return }
        recordMiss(key)
    }

    /// A second `keymiss` for `key` in the same command: XREAD looks each stream up twice, to
    /// resolve its ID and to serve it, and Redis records a miss for each lookup.
    func missedAgain(_ key: [UInt8]) {
        guard engine.activeEventClasses & KeyspaceEvents.Classes.keyMiss.rawValue != 0, readsByLookup(key) else { return }
        record(KeyspaceEvents.Event(type: .keyMiss, name: "keymiss", key: key))
    }

    private func recordMiss(_ key: [UInt8]) {
        guard readsByLookup(key) else { return }
        // Cairn may look a key up more than once per command (LCS, type checks): once each.
        if session.missed.serial != session.commandSerial { session.missed = (session.commandSerial, []) }
        guard session.missed.keys.insert(key).inserted else { return }
        record(KeyspaceEvents.Event(type: .keyMiss, name: "keymiss", key: key))
    }
}
