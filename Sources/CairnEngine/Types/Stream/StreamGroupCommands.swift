import RESP

/// Consumer groups: XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, with Redis 7.0's replies and
/// errors. https://redis.io/docs/latest/develop/data-types/streams/#consumer-groups
enum StreamGroupCommands {
    /// XACK, XCLAIM and XAUTOCLAIM run batched with their connection's neighbours
    /// (`Engine.executeBatched`).
    static let all: [Command] = [
        Command("xgroup", subcommands: xgroup) { _, _ throws(CommandError) in },
        Command("xpending", handler: pending),
    ] + Command.batchingWrites([
        Command("xack", handler: ack),
        Command("xclaim", handler: claim),
        Command("xautoclaim", handler: autoclaim),
    ])

    static let xgroup: [Command] = [
        Command("xgroup|create", handler: create),
        Command("xgroup|setid", handler: setID),
        Command("xgroup|destroy") { call, out throws(CommandError) in
            let destroyed = try withGroupOf(call) { change, group throws(CommandError) -> Bool in
                guard group != nil else { return false }
                let name = call[3]
                var pendingIDs: [StreamID] = []
                try call.scanPending(change.meta, of: change.key, group: name) { p in
                    pendingIDs.append(p.id)
                    return true
                }
                for id in pendingIDs { change.deletePending(group: name, id) }
                for c in try call.consumers(change.meta, of: change.key, group: name) { change.deleteConsumer(group: name, c.name) }
                change.delete(.group, name)
                try call.commit(change)
                call.notify(.stream, "xgroup-destroy", change.key)
                return true
            }
            out.integer(destroyed ? 1 : 0)
        },
        Command("xgroup|createconsumer") { call, out throws(CommandError) in
            let created = try withGroupOf(call, required: true) { change, _ throws(CommandError) -> Bool in
                if try call.consumerExists(change, group: call[3], call[4]) { return false }
                change.putConsumer(group: call[3], call[4], seen: call.now)
                try call.commit(change)
                call.notify(.stream, "xgroup-createconsumer", change.key)
                return true
            }
            out.integer(created ? 1 : 0)
        },
        Command("xgroup|delconsumer") { call, out throws(CommandError) in
            let pending = try withGroupOf(call, required: true) { change, _ throws(CommandError) -> Int in
                let (group, consumer) = (call[3], call[4])
                guard try call.consumerExists(change, group: group, consumer) else { return 0 }
                var owned: [StreamID] = []
                try call.scanPending(change.meta, of: change.key, group: group) { p in
                    if p.consumer == consumer { owned.append(p.id) }
                    return true
                }
                for id in owned { change.deletePending(group: group, id) }
                change.deleteConsumer(group: group, consumer)
                try call.commit(change)
                call.notify(.stream, "xgroup-delconsumer", change.key)
                return owned.count
            }
            out.integer(pending)
        },
        DiagnosticCommands.helpCommand("XGROUP", [
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ]),
    ]

    static let keyMustExist = CommandError("ERR", "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")

    /// Runs `body` under the key's lock with the stream at argument 2 and its group named by
    /// argument 3 (nil when missing; NOGROUP instead when `required`), as Redis's
    /// `xgroupCommand` checks them.
    static func withGroupOf<R>(_ call: Call, required: Bool = false,
                               _ body: (inout CollectionChange, StreamGroup?) throws(CommandError) -> R) throws(CommandError) -> R {
        try call.locked(call[2]) { () throws(CommandError) -> R in
            guard var change = try call.existing(call[2], .stream) else { throw keyMustExist }
            let group = try call.group(change, call[3])
            if group == nil && required {
                throw CommandError("NOGROUP", "No such consumer group '\(Bytes.text(call[3]))' for key name '\(Bytes.text(call[2]))'")
            }
            return try body(&change, group)
        }
    }

    /// The ENTRIESREAD value: -1 or more.
    static func entriesRead(_ call: Call, _ i: Int) throws(CommandError) -> Int64 {
        let n = try call.integer(i)
        guard n >= 0 || n == StreamLag.unknown else { throw CommandError("ERR", "value for ENTRIESREAD must be positive or -1") }
        return n
    }

    /// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]
    static func create(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var makeStream = false
        var read = StreamLag.unknown
        var i = 5
        while i < call.count {
            if call[i].isKeyword("MKSTREAM") {
                makeStream = true
                i += 1
            } else if call[i].isKeyword("ENTRIESREAD") && i + 1 < call.count {
                read = try entriesRead(call, i + 1)
                i += 2
            } else {
                throw CommandError("ERR", "unknown subcommand or wrong number of arguments for '\(call.text(1))'. Try XGROUP HELP.")
            }
        }
        let created = try call.locked(call[2]) { () throws(CommandError) -> Bool in
            var change: CollectionChange
            if let existing = try call.existing(call[2], .stream) {
                change = existing
            } else {
                guard makeStream else { throw keyMustExist }
                change = call.fresh(call[2], .stream)
                change.replaces = false
            }
            let id = call[4] == [UInt8(ascii: "$")] ? change.meta.stream.lastID : try StreamID.strict(call[4])
            if try call.group(change, call[3]) != nil { return false }
            change.putGroup(StreamGroup(name: call[3], lastID: id, entriesRead: read))
            try call.commit(change)
            call.notify(.stream, "xgroup-create", call[2])
            return true
        }
        guard created else { throw CommandError("BUSYGROUP", "Consumer Group name already exists") }
        out.simpleString("OK")
    }

    /// XGROUP SETID key group id|$ [ENTRIESREAD n]
    static func setID(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        try withGroupOf(call, required: true) { change, group throws(CommandError) in
            var group = group!
            let id = call[4] == [UInt8(ascii: "$")] ? change.meta.stream.lastID : try StreamID.any(call[4])
            var read = StreamLag.unknown
            if call.count == 7 {
                guard call[5].isKeyword("ENTRIESREAD") else { throw .syntax }
                read = try entriesRead(call, 6)
            } else if call.count != 5 {
                throw CommandError("ERR", "unknown subcommand or wrong number of arguments for '\(call.text(1))'. Try XGROUP HELP.")
            }
            group.lastID = id
            group.entriesRead = read
            change.putGroup(group)
            try call.commit(change)
            call.notify(.stream, "xgroup-setid", change.key)
        }
        out.simpleString("OK")
    }

    /// XACK key group id [id ...]
    static func ack(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let acknowledged = try call.locked(call[1]) { () throws(CommandError) -> Int in
            guard var change = try call.existing(call[1], .stream), try call.group(change, call[2]) != nil else { return 0 }
            var ids: [StreamID] = []
            for i in 3..<call.count { ids.append(try StreamID.strict(call[i])) }
            var n = 0
            var seen = Set<StreamID>()
            for id in ids where seen.insert(id).inserted {
                guard try call.pending(change, group: call[2], id) != nil else { continue }
                change.deletePending(group: call[2], id)
                n += 1
            }
            if n > 0 { try call.commit(change) }
            return n
        }
        out.integer(acknowledged)
    }

    static func noGroup(_ call: Call) -> CommandError {
        CommandError("NOGROUP", "No such key '\(Bytes.text(call[1]))' or consumer group '\(Bytes.text(call[2]))'")
    }

    /// XPENDING key group [[IDLE min-idle] start end count [consumer]]
    static func pending(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard call.count == 3 || (6...9).contains(call.count) else { throw .syntax }
        var minIdle: Int64 = 0
        var start = StreamID.zero, end = StreamID.max
        var count: Int64 = 0
        var consumer: [UInt8]? = nil
        if call.count >= 6 {
            var at = 3
            if call[3].isKeyword("IDLE") {
                minIdle = try call.integer(4)
                guard call.count >= 8 else { throw .syntax }
                at += 2
            }
            count = max(0, try call.integer(at + 2))
            start = try StreamID.bound(call[at], start: true)
            end = try StreamID.bound(call[at + 1], start: false)
            if at + 3 < call.count { consumer = call[at + 3] }
        }
        guard let meta = try call.stream(call[1]), try call.group(meta, of: call[1], call[2]) != nil else { throw noGroup(call) }
        if call.count == 3 {
            var total = 0
            var first: StreamID? = nil, last: StreamID? = nil
            var owned: [ByteKey: Int] = [:]
            try call.scanPending(meta, of: call[1], group: call[2]) { p in
                total += 1
                if first == nil { first = p.id }
                last = p.id
                owned[ByteKey(p.consumer), default: 0] += 1
                return true
            }
            out.arrayHeader(4)
            out.integer(total)
            guard let first, let last else {
                out.null()
                out.null()
                out.nullArray()
                return
            }
            out.bulk(first.text)
            out.bulk(last.text)
            let names = owned.keys.map(\.bytes).sorted { Bytes.compare($0, $1) < 0 }
            out.arrayHeader(names.count)
            for name in names {
                out.arrayHeader(2)
                out.bulk(name)
                out.bulk(String(owned[ByteKey(name)]!))
            }
            return
        }
        if let consumer, try call.member(meta, of: call[1], .consumer, StreamGroup.scope(call[2]) + consumer) == nil {
            out.arrayHeader(0)
            return
        }
        var found: [PendingEntry] = []
        if count > 0 {
            try call.scanPending(meta, of: call[1], group: call[2], from: start, to: end) { p in
                if let consumer, p.consumer != consumer { return true }
                if minIdle != 0 && call.now - p.deliveryTime < minIdle { return true }
                found.append(p)
                return Int64(found.count) < count
            }
        }
        out.arrayHeader(found.count)
        for p in found {
            out.arrayHeader(4)
            out.bulk(p.id.text)
            out.bulk(p.consumer)
            out.integer(max(0, call.now - p.deliveryTime))
            out.integer(Int64(bitPattern: p.deliveryCount))
        }
    }

    /// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT n]
    /// [FORCE] [JUSTID] [LASTID id]
    static func claim(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        try call.locked(call[1]) { () throws(CommandError) in
            guard var change = try call.existing(call[1], .stream), var group = try call.group(change, call[2]) else { throw noGroup(call) }
            let minIdle = max(0, try call.integer(4, in: Int64.min...Int64.max, message: "Invalid min-idle-time argument for XCLAIM"))
            var ids: [StreamID] = []
            var j = 5
            while j < call.count, let id = StreamID.parse(call[j], specials: false) {
                ids.append(id)
                j += 1
            }
            var force = false, justID = false
            var retryCount: Int64 = -1
            var deliveryTime: Int64 = -1
            var lastID = StreamID.zero
            while j < call.count {
                let more = call.count - 1 - j
                let option = call[j]
                if option.isKeyword("FORCE") {
                    force = true
                } else if option.isKeyword("JUSTID") {
                    justID = true
                } else if option.isKeyword("IDLE") && more > 0 {
                    j += 1
                    deliveryTime = call.now - (try call.integer(j, in: Int64.min...Int64.max, message: "Invalid IDLE option argument for XCLAIM"))
                } else if option.isKeyword("TIME") && more > 0 {
                    j += 1
                    deliveryTime = try call.integer(j, in: Int64.min...Int64.max, message: "Invalid TIME option argument for XCLAIM")
                } else if option.isKeyword("RETRYCOUNT") && more > 0 {
                    j += 1
                    retryCount = try call.integer(j, in: Int64.min...Int64.max, message: "Invalid RETRYCOUNT option argument for XCLAIM")
                } else if option.isKeyword("LASTID") && more > 0 {
                    j += 1
                    lastID = try StreamID.strict(call[j])
                } else {
                    throw CommandError("ERR", "Unrecognized XCLAIM option '\(Bytes.text(option))'")
                }
                j += 1
            }
            if lastID > group.lastID {
                group.lastID = lastID
                change.putGroup(group)
            }
            if deliveryTime == -1 || deliveryTime < 0 || deliveryTime > call.now { deliveryTime = call.now }
            let consumer = call[3]
            var claimed: [StreamEntry] = []
            var consumerSeen = false, createdConsumer = false
            for id in ids {
                var nack = try call.pending(change, group: group.name, id)
                guard let entry = try call.entry(change.meta, of: change.key, id) else {
                    if nack != nil { change.deletePending(group: group.name, id) }
                    continue
                }
                var created = false
                if force && nack == nil {
                    nack = PendingEntry(id: id, deliveryTime: call.now, deliveryCount: 1, consumer: [])
                    created = true
                }
                guard var p = nack else { continue }
                if !created && minIdle > 0 && call.now - p.deliveryTime < minIdle { continue }
                if !consumerSeen {
                    createdConsumer = try !call.consumerExists(change, group: group.name, consumer)
                    change.putConsumer(group: group.name, consumer, seen: call.now)
                    consumerSeen = true
                }
                p.deliveryTime = deliveryTime
                if retryCount >= 0 {
                    p.deliveryCount = UInt64(bitPattern: retryCount)
                } else if !justID {
                    p.deliveryCount += 1
                }
                p.consumer = consumer
                change.putPending(group: group.name, p)
                claimed.append(entry)
            }
            try call.commit(change)
            if createdConsumer { call.notify(.stream, "xgroup-createconsumer", change.key) }
            out.arrayHeader(claimed.count)
            for e in claimed {
                if justID { out.bulk(e.id.text) } else { e.write(to: &out) }
            }
        }
    }

    /// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
    static func autoclaim(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let minIdle = max(0, try call.integer(4, in: Int64.min...Int64.max, message: "Invalid min-idle-time argument for XAUTOCLAIM"))
        let start = try StreamID.bound(call[5], start: true)
        var count: Int64 = 100
        var justID = false
        var j = 6
        while j < call.count {
            let more = call.count - 1 - j
            if call[j].isKeyword("COUNT") && more > 0 {
                count = try call.integer(j + 1, in: 1...(Int64.max / 16), message: "COUNT must be > 0")
                j += 1
            } else if call[j].isKeyword("JUSTID") {
                justID = true
            } else {
                throw .syntax
            }
            j += 1
        }
        try call.locked(call[1]) { () throws(CommandError) in
            guard var change = try call.existing(call[1], .stream), let group = try call.group(change, call[2]) else { throw noGroup(call) }
            var attempts = count * 10
            var remaining = count
            var claimed: [(StreamID, [[UInt8]])] = []
            var deleted: [StreamID] = []
            var next = StreamID.zero
            var consumerSeen = false, createdConsumer = false
            let consumer = call[3]
            var candidates: [PendingEntry] = []
            // The pending entries from `start`: one more than the attempts, for the cursor.
            try call.scanPending(change.meta, of: change.key, group: group.name, from: start) { p in
                candidates.append(p)
                return Int64(candidates.count) <= attempts
            }
            var index = 0
            while attempts > 0 && remaining > 0 && index < candidates.count {
                attempts -= 1
                var p = candidates[index]
                index += 1
                guard let entry = try call.entry(change.meta, of: change.key, p.id) else {
                    change.deletePending(group: group.name, p.id)
                    deleted.append(p.id)
                    remaining -= 1
                    continue
                }
                if minIdle > 0 && call.now - p.deliveryTime < minIdle { continue }
                if !consumerSeen {
                    createdConsumer = try !call.consumerExists(change, group: group.name, consumer)
                    change.putConsumer(group: group.name, consumer, seen: call.now)
                    consumerSeen = true
                }
                p.deliveryTime = call.now
                if !justID { p.deliveryCount += 1 }
                p.consumer = consumer
                change.putPending(group: group.name, p)
                claimed.append((p.id, entry.fields))
                remaining -= 1
            }
            if index < candidates.count { next = candidates[index].id }
            try call.commit(change)
            if createdConsumer { call.notify(.stream, "xgroup-createconsumer", change.key) }
            out.arrayHeader(3)
            out.bulk(next.text)
            out.arrayHeader(claimed.count)
            for (id, fields) in claimed {
                if justID {
                    out.bulk(id.text)
                } else {
                    StreamEntry(id: id, fields: fields).write(to: &out)
                }
            }
            out.arrayHeader(deleted.count)
            for id in deleted { out.bulk(id.text) }
        }
    }
}
