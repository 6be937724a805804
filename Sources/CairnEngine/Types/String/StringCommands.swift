import RESP

/// The strings family: https://redis.io/docs/latest/commands/?group=string
///
/// Values are stored with Cairn's header (`ValueFormat`); every read skips expired values.
/// Read-modify-write commands hold the key's stripe lock so they never interleave with another
/// write of the same key.
enum StringCommands {
    static let all: [Command] = [
        Command("get") { call, out throws(CommandError) in
            try call.withPayload(call[1]) { payload, _ in
                if let payload {
                    call.engine.stats.keyspaceHits.increment()
                    out.bulk(payload)
                } else {
                    call.engine.stats.keyspaceMisses.increment()
                    out.null()
                }
            }
        }
        .grouped { _, _ in .read },
        Command("set", handler: set)
        .grouped { argv, _ in argv.count == 3 ? .batched : nil },  // plain SET key value
        Command("setnx") { call, out throws(CommandError) in
            let created = try call.locked(call[1]) { () throws(CommandError) -> Bool in
                if try call.exists(call[1]) { return false }
                try call.write(call[1], call[2])
                call.notify(.string, "set", call[1])
                return true
            }
            out.integer(created ? 1 : 0)
        },
        Command("setex") { call, out throws(CommandError) in
            let at = try call.expiry(call.integer(2), .seconds, absolute: false)
            try call.locked(call[1]) { () throws(CommandError) in try call.write(call[1], call[3], expiresAt: at) }
            call.notifySetWithExpiry(call[1])
            out.simpleString("OK")
        },
        Command("psetex") { call, out throws(CommandError) in
            let at = try call.expiry(call.integer(2), .milliseconds, absolute: false)
            try call.locked(call[1]) { () throws(CommandError) in try call.write(call[1], call[3], expiresAt: at) }
            call.notifySetWithExpiry(call[1])
            out.simpleString("OK")
        },
        Command("getset") { call, out throws(CommandError) in
            let old = try call.locked(call[1]) { () throws(CommandError) -> StoredValue? in
                let old = try call.read(call[1])
                try call.write(call[1], call[2])
                call.notify(.string, "set", call[1])
                return old
            }
            if let old { out.bulk(old.payload) } else { out.null() }
        },
        Command("getdel") { call, out throws(CommandError) in
            let old = try call.locked(call[1]) { () throws(CommandError) -> StoredValue? in
                let old = try call.read(call[1])
                if old != nil {
                    try call.remove(call[1])
                    call.notify(.generic, "del", call[1])
                }
                return old
            }
            if let old { out.bulk(old.payload) } else { out.null() }
        },
        Command("getex", handler: getex),
        Command("mget") { call, out throws(CommandError) in
            let values = try call.readMany(Array(call.argv.dropFirst()))
            out.arrayHeader(values.count)
            for v in values {
                if let v { out.bulk(v) } else { out.null() }
            }
        },
        Command("mset") { call, out throws(CommandError) in
            guard call.count % 2 == 1 else { throw .arity(call.name) }
            let pairs = stride(from: 1, to: call.count, by: 2).map { (call[$0], call[$0 + 1]) }
            try call.locked(pairs.map(\.0)) { () throws(CommandError) in
                // Recorded before the write (published after it), in Redis's order: per key, the
                // lookup (`expired`), then `new` and `set`; taken back if the write fails.
                let mark = call.eventsRecorded
                call.notifySets(pairs.map(\.0))
                do throws(CommandError) {
                    try call.writeBatch(pairs)
                } catch {
                    call.dropEvents(from: mark)
                    throw error
                }
            }
            out.simpleString("OK")
        }
        .grouped { argv, _ in argv.count % 2 == 1 ? .batched : nil },
        Command("msetnx") { call, out throws(CommandError) in
            guard call.count % 2 == 1 else { throw .arity(call.name) }
            let pairs = stride(from: 1, to: call.count, by: 2).map { (call[$0], call[$0 + 1]) }
            let done = try call.locked(pairs.map(\.0)) { () throws(CommandError) -> Bool in
                for (k, _) in pairs where try call.exists(k) { return false }
                try call.writeBatch(pairs)
                call.notifySets(pairs.map(\.0), created: Set(pairs.map(\.0)))
                return true
            }
            out.integer(done ? 1 : 0)
        },
        Command("append") { call, out throws(CommandError) in
            let (key, tail) = (call[1], call[2])
            let length = try call.locked(key) { () throws(CommandError) -> Int in
                let (engine, family) = (call.engine, call.family)
                let stripe = engine.locks.stripe(for: key, in: family)
                // The old length comes from the last APPEND when nothing wrote the key since
                // (`AppendLengths`), else from a read.
                let known = call.session.transaction == nil
                    ? engine.appendLengths.length(of: key, in: family, version: engine.locks.heldVersion(stripe)) : nil
                var length = tail.count
                if let known {
                    length += known
                } else {
                    let (count, expiresAt) = try call.withPayload(key) { payload, expiresAt in (payload?.count ?? 0, expiresAt) }
                    // In a transaction, or a value with a TTL: the whole value is written. An
                    // operand would outlive the value it extends: once the TTL passes, the merge
                    // drops the old value but cannot tell the operands written before from those
                    // written after.
                    if call.session.transaction != nil || expiresAt != nil {
                        let old = try call.read(key)
                        let value = (old?.payload ?? []) + tail
                        try call.checkSize(value.count)
                        try call.write(key, value, expiresAt: old?.expiresAt)
                        call.notify(.string, "append", key)
                        return value.count
                    }
                    length += count
                }
                // Written as an `append` merge operand: only the new bytes go to the WAL and the
                // memtable, so growing a value in steps does not rewrite the whole value (512 MB
                // in 8 MB steps took 231 s that way, and 50 s with a read of its length per step).
                try call.checkSize(length)
                let options = engine.writeOptions
                let operand = MergeKind.append.operand(tail)
                if known == nil { call.notifyIfNew(key) }
                try engine.storage("APPEND") { try call.database.merge(key, operand, in: family.handle, options: options) }
                engine.locks.changed(key, in: family)
                engine.appendLengths.remember(key, in: family, version: engine.locks.heldVersion(stripe), length: length)
                call.notify(.string, "append", key)
                return length
            }
            out.integer(length)
        },
        Command("strlen") { call, out throws(CommandError) in
            try call.withPayload(call[1]) { payload, _ in out.integer(payload?.count ?? 0) }
        },
        Command("getrange", handler: getrange),
        Command("substr", handler: getrange),
        Command("setrange", handler: setrange),
        incrementCommand("incr") { _ throws(CommandError) in 1 },
        incrementCommand("decr") { _ throws(CommandError) in -1 },
        incrementCommand("incrby") { call throws(CommandError) in
            try call.integer(2)
        },
        incrementCommand("decrby") { call throws(CommandError) in
            let v = try call.integer(2)
            guard v != Int64.min else { throw CommandError("ERR", "decrement would overflow") }
            return -v
        },
        Command("incrbyfloat") { call, out throws(CommandError) in
            // In a C long double, as Redis computes it: its range and digits (1.7e308 + 1.7e308
            // is a number there, printed in full). The key is read first (WRONGTYPE before a
            // bad increment), as in Redis.
            let text = try call.locked(call[1]) { () throws(CommandError) -> String in
                let old = try call.read(call[1])
                var base: LongDouble = 0
                if let old {
                    guard let v = LongDoubles.parse(old.payload) else { throw .notFloat }
                    base = v
                }
                guard let delta = LongDoubles.parse(call[2]) else { throw .notFloat }
                let result = base + delta
                guard result.isFinite else { throw CommandError("ERR", "increment would produce NaN or Infinity") }
                let text = LongDoubles.human(result)
                try call.write(call[1], Array(text.utf8), expiresAt: old?.expiresAt)
                call.notify(.string, "incrbyfloat", call[1])
                return text
            }
            out.bulk(text)
        },
    ]

    static func incrementCommand(
        _ name: String, delta: @escaping @Sendable (Call) throws(CommandError) -> Int64
    ) -> Command {
        Command(name) { call, out throws(CommandError) in
            out.integer(try increment(call, by: delta(call)))
        }
        // Reads through a snapshot run alone.
        .grouped { _, session in session.readSnapshot == nil ? .batched : nil }
    }

    /// INCR and friends: read, add (`Counter`) and write under the key's lock (in a poller
    /// round, inside the batch of its writes: `Engine.executeBatched`).
    static func increment(_ call: Call, by delta: Int64) throws(CommandError) -> Int64 {
        try call.locked(call[1]) { () throws(CommandError) -> Int64 in
            let old = try call.read(call[1])
            let next = try Counter.increment(old?.payload, expiresAt: old?.expiresAt, by: delta).get()
            try call.write(call[1], next.payload, expiresAt: next.expiresAt)
            call.notify(.string, "incrby", call[1])
            return next.value
        }
    }

    static func set(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var nx = false, xx = false, get = false, keepTTL = false
        var expiresAt: Int64? = nil
        var i = 3
        while i < call.count {
            let a = call[i]
            let hasNext = i + 1 < call.count
            if a.isKeyword("NX") && !xx {
                nx = true
            } else if a.isKeyword("XX") && !nx {
                xx = true
            } else if a.isKeyword("GET") {
                get = true
            } else if a.isKeyword("KEEPTTL") && expiresAt == nil {
                keepTTL = true
            } else if hasNext && !keepTTL && expiresAt == nil,
                      let (unit, absolute) = expiryOption(a) {
                expiresAt = try call.expiry(call.integer(i + 1), unit, absolute: absolute)
                i += 1
            } else {
                throw .syntax
            }
            i += 1
        }
        let key = call[1]
        let needsOld = nx || xx || get || keepTTL
        let reply = try call.locked(key) { () throws(CommandError) -> (set: Bool, old: StoredEntry?) in
            // Any type counts for NX, XX and KEEPTTL; GET needs a string (SET then replaces it).
            let old = needsOld ? try call.readEntry(key) : nil
            if get, let old, old.type != .string { throw .wrongType }
            if (nx && old != nil) || (xx && old == nil) { return (false, old) }
            let at = keepTTL ? old?.expiresAt : expiresAt
            if let at, at <= call.now, call.engine.activeEventClasses == 0 {
                // Redis sets the key and its (past) expiry: gone at once here, unless keyspace
                // events are on, whose `expired` comes when a read or the sweep finds it.
                try call.remove(key)
            } else {
                try call.write(key, call[2], expiresAt: at)
            }
            call.notify(.string, "set", key)
            if expiresAt != nil { call.notify(.generic, "expire", key) }
            return (true, old)
        }
        if get {
            if let old = reply.old { out.bulk(old.payload) } else { out.null() }
        } else if reply.set {
            out.simpleString("OK")
        } else {
            out.null()
        }
    }

    /// EX, PX, EXAT, PXAT: the unit and whether the time is absolute.
    static func expiryOption(_ a: [UInt8]) -> (ExpiryUnit, Bool)? {
        if a.isKeyword("EX") { return (.seconds, false) }
        if a.isKeyword("PX") { return (.milliseconds, false) }
        if a.isKeyword("EXAT") { return (.seconds, true) }
        if a.isKeyword("PXAT") { return (.milliseconds, true) }
        return nil
    }

    static func getex(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        enum Option { case none, persist, expiry(at: Int, ExpiryUnit, absolute: Bool) }
        enum Change { case none, persist, at(Int64) }
        var option = Option.none
        var i = 2
        while i < call.count {
            let a = call[i]
            if a.isKeyword("PERSIST"), case .none = option {
                option = .persist
            } else if i + 1 < call.count, case .none = option, let (unit, absolute) = expiryOption(a) {
                option = .expiry(at: i + 1, unit, absolute: absolute)
                i += 1
            } else {
                throw .syntax
            }
            i += 1
        }
        let key = call[1]
        let value = try call.locked(key) { () throws(CommandError) -> StoredValue? in
            // The time is checked once the key is found, as Redis does: a missing key answers
            // nil, another type WRONGTYPE, whatever the time given.
            guard let old = try call.read(key) else { return nil }
            let change: Change
            switch option {
            case .none: change = .none
            case .persist: change = .persist
            case .expiry(let at, let unit, let absolute): change = .at(try call.expiry(call.integer(at), unit, absolute: absolute))
            }
            switch change {
            case .none: break
            case .persist:
                if old.expiresAt != nil {
                    try call.write(key, old.payload)
                    call.notify(.generic, "persist", key)
                }
            case .at(let at):
                if at <= call.now {
                    try call.remove(key)
                    call.notify(.generic, "del", key)
                } else {
                    try call.write(key, old.payload, expiresAt: at)
                    call.notify(.generic, "expire", key)
                }
            }
            return old
        }
        if let value { out.bulk(value.payload) } else { out.null() }
    }

    static func getrange(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var start = try call.integer(2)
        var end = try call.integer(3)
        try call.withPayload(call[1]) { payload, _ in
            let count = Int64(payload?.count ?? 0)
            guard let payload, count > 0, !(start < 0 && end < 0 && start > end) else { out.bulk([UInt8]()); return }
            if start < 0 { start = count + start }
            if end < 0 { end = count + end }
            if start < 0 { start = 0 }
            if end < 0 { end = 0 }
            if end >= count { end = count - 1 }
            if start > end { out.bulk([UInt8]()); return }
            out.bulk(UnsafeRawBufferPointer(rebasing: payload[Int(start)...Int(end)]))
        }
    }

    static func setrange(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let offset = try call.integer(2)
        guard offset >= 0 else { throw CommandError("ERR", "offset is out of range") }
        let patch = call[3]
        let length = try call.locked(call[1]) { () throws(CommandError) -> Int in
            let old = try call.read(call[1])
            if patch.isEmpty { return old?.payload.count ?? 0 }
            let (end, overflow) = offset.addingReportingOverflow(Int64(patch.count))
            let limit = Int64(call.engine.configuration.protoMaxBulkLen)
            if overflow || end > limit { throw CommandError("ERR", "string exceeds maximum allowed size (proto-max-bulk-len)") }
            try call.checkSize(Int(end))
            var value = old?.payload ?? []
            Bytes.zeroExtend(&value, to: Int(end))
            value.replaceSubrange(Int(offset)..<Int(end), with: patch)
            try call.write(call[1], value, expiresAt: old?.expiresAt)
            call.notify(.string, "setrange", call[1])
            return value.count
        }
        out.integer(length)
    }
}

extension Call {
    /// MSET's events, before its write: per key its lookup (which publishes `expired` for an
    /// expired key), `new` when the key holds nothing (the first time only), then `set`.
    func notifySets(_ keys: [[UInt8]]) {
        let on = engine.activeEventClasses
        guard on != 0 else { return }
        let looksUp = on & (KeyspaceEvents.Classes.new.rawValue | KeyspaceEvents.Classes.expired.rawValue) != 0
        var created = Set<[UInt8]>()
        for k in keys {
            if looksUp, !created.contains(k), (try? exists(k)) == false {
                created.insert(k)
                notify(.new, "new", k)
            }
            notify(.string, "set", k)
        }
    }

    /// After MSETNX's write: per key, `new` when it created it (the first time only), then `set`.
    func notifySets(_ keys: [[UInt8]], created: Set<[UInt8]>) {
        guard engine.activeEventClasses != 0 else { return }
        var created = created
        for k in keys {
            if created.remove(k) != nil { notify(.new, "new", k) }
            notify(.string, "set", k)
        }
    }

    /// SETEX and PSETEX: `set`, then `expire`, as Redis publishes them.
    func notifySetWithExpiry(_ key: [UInt8]) {
        notify(.string, "set", key)
        notify(.generic, "expire", key)
    }

    /// Refuses values larger than `proto-max-bulk-len` (as Redis does for APPEND and SETRANGE)
    /// or `max-value-size`.
    func checkSize(_ count: Int) throws(CommandError) {
        if count > engine.configuration.protoMaxBulkLen {
            throw CommandError("ERR", "string exceeds maximum allowed size (proto-max-bulk-len)")
        }
        let maxValue = engine.guardrails.maxValueSize.load(ordering: .relaxed)
        if maxValue > 0 && count > maxValue {
            throw CommandError("ERR", "string exceeds maximum allowed size (max-value-size)")
        }
    }
}
