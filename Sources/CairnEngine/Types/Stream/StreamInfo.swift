import RESP

/// XINFO STREAM [FULL], GROUPS and CONSUMERS, with Redis 7.0's fields.
///
/// `radix-tree-keys` counts the listpack nodes Redis would hold (`StreamNodes`, from the first
/// live entry's node to the last); Cairn has no radix tree, so `radix-tree-nodes` is that count
/// plus one, the least a radix tree of that many keys has.
enum StreamInfo {
    static let all: [Command] = [
        Command("xinfo", subcommands: xinfo) { _, _ throws(CommandError) in },
    ]

    static let xinfo: [Command] = [
        Command("xinfo|stream", handler: stream),
        Command("xinfo|groups") { call, out throws(CommandError) in
            let meta = try existing(call)
            let lag = try call.lag(meta, of: call[2])
            let groups = try call.groups(meta, of: call[2])
            out.arrayHeader(groups.count)
            for g in groups {
                let consumers = try call.consumers(meta, of: call[2], group: g.name).count
                var pending = 0
                try call.scanPending(meta, of: call[2], group: g.name) { _ in
                    pending += 1
                    return true
                }
                out.mapHeader(6)
                out.bulk("name"); out.bulk(g.name)
                out.bulk("consumers"); out.integer(consumers)
                out.bulk("pending"); out.integer(pending)
                out.bulk("last-delivered-id"); out.bulk(g.lastID.text)
                out.bulk("entries-read"); optional(g.entriesRead == StreamLag.unknown ? nil : g.entriesRead, &out)
                out.bulk("lag"); optional(lag.lag(of: g), &out)
            }
        },
        Command("xinfo|consumers") { call, out throws(CommandError) in
            let meta = try existing(call)
            guard try call.group(meta, of: call[2], call[3]) != nil else {
                throw CommandError("NOGROUP", "No such consumer group '\(Bytes.text(call[3]))' for key name '\(Bytes.text(call[2]))'")
            }
            let owned = try pendingCounts(call, meta, call[3])
            let consumers = try call.consumers(meta, of: call[2], group: call[3])
            out.arrayHeader(consumers.count)
            for c in consumers {
                out.mapHeader(3)
                out.bulk("name"); out.bulk(c.name)
                out.bulk("pending"); out.integer(owned[ByteKey(c.name)] ?? 0)
                out.bulk("idle"); out.integer(max(0, call.now - c.seen))
            }
        },
        DiagnosticCommands.helpCommand("XINFO", [
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ]),
    ]

    static func existing(_ call: Call) throws(CommandError) -> CollectionMetadata {
        guard let meta = try call.stream(call[2]) else { throw .noSuchKey }
        return meta
    }

    static func optional(_ n: Int64?, _ out: inout RESPWriter) {
        if let n { out.integer(n) } else { out.null() }
    }

    static func pendingCounts(_ call: Call, _ meta: CollectionMetadata, _ group: [UInt8]) throws(CommandError) -> [ByteKey: Int] {
        var owned: [ByteKey: Int] = [:]
        try call.scanPending(meta, of: call[2], group: group) { p in
            owned[ByteKey(p.consumer), default: 0] += 1
            return true
        }
        return owned
    }

    static func stream(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard [3, 4, 6].contains(call.count) else {
            throw CommandError("ERR", "unknown subcommand or wrong number of arguments for '\(call.text(1))'. Try XINFO HELP.")
        }
        var full = false
        var count: Int64 = 10
        if call.count > 3 {
            guard call[3].isKeyword("FULL") else { throw .syntax }
            full = true
            if call.count == 6 {
                guard call[4].isKeyword("COUNT") else { throw .syntax }
                count = try call.integer(5)
                if count < 0 { count = 10 }
            }
        }
        let key = call[2]
        let meta = try existing(call)
        let first = try call.edgeID(meta, of: key)
        var nodes = 0
        if let first, let value = try call.member(meta, of: key, .member, first.bytes) {
            nodes = Int(meta.stream.lastNode - StreamEntry.node(value) + 1)
        }
        let counters = meta.stream
        out.mapHeader(full ? 9 : 10)
        out.bulk("length"); out.integer(Int64(meta.size))
        out.bulk("radix-tree-keys"); out.integer(nodes)
        out.bulk("radix-tree-nodes"); out.integer(nodes + 1)
        out.bulk("last-generated-id"); out.bulk(counters.lastID.text)
        out.bulk("max-deleted-entry-id"); out.bulk(counters.maxDeletedID.text)
        out.bulk("entries-added"); out.integer(Int64(bitPattern: counters.entriesAdded))
        out.bulk("recorded-first-entry-id"); out.bulk((first ?? .zero).text)
        let groups = try call.groups(meta, of: key)
        guard full else {
            out.bulk("groups"); out.integer(groups.count)
            out.bulk("first-entry"); try edge(call, meta, last: false, &out)
            out.bulk("last-entry"); try edge(call, meta, last: true, &out)
            return
        }
        let limit = Int(clamping: count)
        out.bulk("entries")
        let entries = try call.entries(meta, of: key, from: .zero, to: .max, count: limit)
        out.arrayHeader(entries.count)
        for e in entries { e.write(to: &out) }
        let lag = try call.lag(meta, of: key)
        out.bulk("groups")
        out.arrayHeader(groups.count)
        for g in groups {
            var pending: [PendingEntry] = []
            var total = 0
            var perConsumer: [ByteKey: [PendingEntry]] = [:]
            try call.scanPending(meta, of: key, group: g.name) { p in
                total += 1
                if limit == 0 || pending.count < limit { pending.append(p) }
                perConsumer[ByteKey(p.consumer), default: []].append(p)
                return true
            }
            out.mapHeader(7)
            out.bulk("name"); out.bulk(g.name)
            out.bulk("last-delivered-id"); out.bulk(g.lastID.text)
            out.bulk("entries-read"); optional(g.entriesRead == StreamLag.unknown ? nil : g.entriesRead, &out)
            out.bulk("lag"); optional(lag.lag(of: g), &out)
            out.bulk("pel-count"); out.integer(total)
            out.bulk("pending")
            out.arrayHeader(pending.count)
            for p in pending {
                out.arrayHeader(4)
                out.bulk(p.id.text)
                out.bulk(p.consumer)
                out.integer(p.deliveryTime)
                out.integer(Int64(bitPattern: p.deliveryCount))
            }
            let consumers = try call.consumers(meta, of: key, group: g.name)
            out.bulk("consumers")
            out.arrayHeader(consumers.count)
            for c in consumers {
                let owned = perConsumer[ByteKey(c.name)] ?? []
                let shown = limit == 0 ? owned[...] : owned.prefix(limit)
                out.mapHeader(4)
                out.bulk("name"); out.bulk(c.name)
                out.bulk("seen-time"); out.integer(c.seen)
                out.bulk("pel-count"); out.integer(owned.count)
                out.bulk("pending")
                out.arrayHeader(shown.count)
                for p in shown {
                    out.arrayHeader(3)
                    out.bulk(p.id.text)
                    out.integer(p.deliveryTime)
                    out.integer(Int64(bitPattern: p.deliveryCount))
                }
            }
        }
    }

    static func edge(_ call: Call, _ meta: CollectionMetadata, last: Bool, _ out: inout RESPWriter) throws(CommandError) {
        let found = try call.entries(meta, of: call[2], from: .zero, to: .max, count: 1, reverse: last)
        if let e = found.first { e.write(to: &out) } else { out.null() }
    }
}
