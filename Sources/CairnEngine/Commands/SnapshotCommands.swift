import RESP
import Rocks

/// Snapshots and server-side iterators: Cairn's own commands.
///
/// `SNAPSHOT.CREATE` → id, `SNAPSHOT.RELEASE id`, `SNAPSHOT.LIST` (id, sequence number, age in
/// seconds), `SNAPSHOT.USE id|NONE` (this connection's reads see the snapshot).
/// `ITER.OPEN [SNAPSHOT id] [REV] [START key]` → id; `ITER.NEXT id [count]` returns up to count
/// key/value pairs in ascending order from the iterator's position, `ITER.PREV id [count]` the
/// same descending; `ITER.SEEK id key`; `ITER.CLOSE id`. `REV` starts from the end (or at the last
/// key <= START). Both belong to the connection that made them and go when it closes; caps and
/// idle limits are in cairn.conf.
enum SnapshotCommands {
    static let all: [Command] = [
        Command("snapshot.create") { call, out throws(CommandError) in
            let engine = call.engine
            let config = engine.configuration
            guard call.session.snapshots.count < config.maxSnapshotsPerClient else {
                throw CommandError("ERR", "too many snapshots on this connection (max-snapshots-per-client \(config.maxSnapshotsPerClient)); release some with SNAPSHOT.RELEASE")
            }
            let user = call.session.user
            switch engine.snapshotQuota.reserve(for: user, userLimit: config.maxSnapshotsPerUser, serverLimit: config.maxSnapshots) {
            case .server?:
                throw CommandError("ERR", "too many snapshots on the server (max-snapshots \(config.maxSnapshots)); wait for other clients to release theirs")
            case .user?:
                throw CommandError("ERR", "too many snapshots held by user '\(user)' across its connections (max-snapshots-per-user \(config.maxSnapshotsPerUser)); release some with SNAPSHOT.RELEASE")
            case nil:
                break
            }
            let snapshot: Snapshot
            do throws(CommandError) {
                snapshot = try engine.storage("SNAPSHOT.CREATE") { try engine.database.snapshot() }
            } catch {
                engine.snapshotQuota.release(for: user)
                throw error
            }
            let id = engine.nextHandleID.add(1, ordering: .relaxed).oldValue
            call.session.snapshots[id] = OwnedSnapshot(id: id, snapshot: snapshot, createdAt: Clock.milliseconds(), user: user)
            out.integer(id)
        },
        Command("snapshot.release") { call, out throws(CommandError) in
            let id = try call.integer(1)
            guard call.session.snapshots[id] != nil else { throw noSuchSnapshot(id, call.session) }
            call.engine.dropSnapshot(id, of: call.session)
            out.simpleString("OK")
        },
        Command("snapshot.list") { call, out throws(CommandError) in
            let now = Clock.milliseconds()
            let snaps = call.session.snapshots.values.sorted { $0.id < $1.id }
            out.arrayHeader(snaps.count)
            for s in snaps {
                out.arrayHeader(3)
                out.integer(s.id)
                out.integer(Int64(bitPattern: s.snapshot.sequenceNumber))
                out.integer((now - s.createdAt) / 1000)
            }
        },
        Command("snapshot.use") {
            call, out throws(CommandError) in
            if call[1].isKeyword("NONE") {
                call.session.readSnapshot = nil
            } else {
                let id = try call.integer(1)
                guard let snap = call.session.snapshots[id] else { throw noSuchSnapshot(id, call.session) }
                call.session.readSnapshot = snap
            }
            out.simpleString("OK")
        },
        Command("iter.open", handler: open)
            .reaching { argv, _ in [(try? options(argv).range) ?? .everything(write: false)] },
        Command("iter.next") { call, out throws(CommandError) in try step(call, &out, forward: true) }
            .reaching(iteratorRange),
        Command("iter.prev") { call, out throws(CommandError) in try step(call, &out, forward: false) }
            .reaching(iteratorRange),
        Command("iter.seek") { call, out throws(CommandError) in
            let it = try iterator(call)
            it.cursor.seek(call[2])
            out.simpleString("OK")
        }.reaching(iteratorRange),
        Command("iter.close") { call, out throws(CommandError) in
            let it = try iterator(call)
            it.cursor.close()
            call.session.iterators.removeValue(forKey: it.id)
            out.simpleString("OK")
        },
    ]

    static func noSuchSnapshot(_ id: Int64, _ session: Session) -> CommandError {
        if session.closedByRestore.contains(id) { return closedByRestore("snapshot", id) }
        return CommandError("ERR", "no such snapshot \(id) on this connection")
    }

    static func closedByRestore(_ what: String, _ id: Int64) -> CommandError {
        CommandError("ERR", "\(what) \(id) was closed by BACKUP.RESTORE (the database was replaced); open a new one")
    }

    static func iterator(_ call: Call) throws(CommandError) -> OwnedIterator {
        let id = try call.integer(1)
        guard let it = call.session.iterators[id] else {
            if call.session.closedByRestore.contains(id) { throw closedByRestore("iterator", id) }
            throw CommandError("ERR", "no such iterator \(id) on this connection")
        }
        it.lastUsed = Clock.milliseconds()
        return it
    }

    /// ITER.OPEN's options.
    struct OpenOptions {
        var snapshot: Int64? = nil
        var reverse = false
        var start: [UInt8]? = nil
        /// The keys the iterator may reach: those with the PREFIX, else every key.
        var range = KeyRange.everything(write: false)
    }

    static func options(_ argv: [[UInt8]]) throws(CommandError) -> OpenOptions {
        var o = OpenOptions()
        var i = 1
        while i < argv.count {
            if argv[i].isKeyword("REV") {
                o.reverse = true
                i += 1
            } else if argv[i].isKeyword("SNAPSHOT"), i + 1 < argv.count {
                guard let id = Bytes.int64(argv[i + 1]) else { throw .notInteger }
                o.snapshot = id
                i += 2
            } else if argv[i].isKeyword("START"), i + 1 < argv.count {
                o.start = argv[i + 1]
                i += 2
            } else if argv[i].isKeyword("PREFIX"), i + 1 < argv.count {
                o.range = KeyRange(lower: argv[i + 1], upper: Call.prefixEnd(argv[i + 1]), write: false)
                i += 2
            } else {
                throw .syntax
            }
        }
        return o
    }

    /// What an ITER.NEXT, PREV or SEEK reaches: its iterator's keys (none when there is no such
    /// iterator, which the command answers with an error).
    @Sendable static func iteratorRange(_ argv: [[UInt8]], _ session: Session) -> [KeyRange] {
        guard argv.count > 1, let id = Bytes.int64(argv[1]), let it = session.iterators[id] else { return [] }
        return [it.range]
    }

    static func open(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let o = try options(call.argv)
        var snapshot: OwnedSnapshot? = call.session.readSnapshot
        if let id = o.snapshot {
            guard let s = call.session.snapshots[id] else { throw noSuchSnapshot(id, call.session) }
            snapshot = s
        }
        let reverse = o.reverse
        let start = o.start
        let limit = call.engine.configuration.maxIteratorsPerClient
        guard call.session.iterators.count < limit else {
            throw CommandError("ERR", "too many iterators on this connection (max-iterators-per-client \(limit)); close some with ITER.CLOSE")
        }
        var options = ReadOptions()
        options.snapshot = snapshot?.snapshot
        // A PREFIX bounds the cursor itself: no step, seek or reverse start leaves it.
        if !o.range.lower.isEmpty { options.lowerBound = o.range.lower }
        options.upperBound = o.range.upper
        let handle = call.family.handle
        let cursor = try call.engine.storage("ITER.OPEN") { try call.database.makeCursor(in: handle, options: options) }
        switch (reverse, start) {
        case (false, nil): cursor.seekToFirst()
        case (false, let key?): cursor.seek(key)
        case (true, nil): cursor.seekToLast()
        case (true, let key?): cursor.seekForPrev(key)
        }
        let id = call.engine.nextHandleID.add(1, ordering: .relaxed).oldValue
        call.session.iterators[id] = OwnedIterator(id: id, cursor: cursor, family: call.family, snapshot: snapshot, range: o.range, now: Clock.milliseconds(), stats: call.engine.stats)
        out.integer(id)
    }

    static func step(_ call: Call, _ out: inout RESPWriter, forward: Bool) throws(CommandError) {
        let it = try iterator(call)
        let count = call.count > 2 ? try call.integer(2) : 10
        guard count > 0 && count <= 100_000 else { throw CommandError("ERR", "count must be between 1 and 100000") }
        let now = Clock.milliseconds()
        var pairs: [([UInt8], [UInt8]?)] = []  // a nil value: the key holds a collection
        let cursor = it.cursor
        while pairs.count < Int(count) && cursor.isValid {
            let value: [UInt8]?? = cursor.withValue { raw in
                guard let h = ValueFormat.header(of: raw), !h.isExpired(now: now) else { return nil }
                if h.type != ValueFormat.stringType { return .some(nil) }
                return Array(UnsafeRawBufferPointer(rebasing: raw[h.payloadOffset...]))
            }
            if let value { pairs.append((cursor.key, value)) }
            if forward { cursor.next() } else { cursor.prev() }
        }
        if !cursor.isValid {
            try call.engine.storage("ITER") { try cursor.check() }
        }
        out.arrayHeader(pairs.count * 2)
        for (k, v) in pairs {
            out.bulk(k)
            if let v { out.bulk(v) } else { out.null() }
        }
    }
}
