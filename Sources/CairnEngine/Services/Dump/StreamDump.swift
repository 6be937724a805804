/// DUMP of a stream: Redis 7.0's `RDB_TYPE_STREAM_LISTPACKS_2`, as `rdbSaveObject` writes it.
///
/// ```
/// nodes         length, then per node its master ID (16 bytes big-endian, as a string) and
///               its listpack (a string: StreamListpack)
/// length, last ID (ms, seq), first ID, max deleted ID, entries added     lengths
/// groups        length, then per group: name, last ID (ms, seq), entries read (length; -1 is
///               2^64-1), its pending entries list (length, then ID 16 bytes, delivery time
///               8 bytes little-endian, delivery count as a length), its consumers (length,
///               then name, seen time 8 bytes little-endian, their pending IDs: length, 16 bytes each)
/// ```
///
/// The nodes are the ones Cairn recorded per entry (`StreamNodes`): the entries of one node
/// number make one listpack, so `XADD`'s next node, `~` trimming and XINFO's node count agree
/// before and after the move, and a payload from Redis restored into Cairn (one node number per
/// listpack read) dumps back with Redis's node boundaries. Where Cairn's nodes differ from
/// Redis's (Redis also closes a node at `stream-node-max-bytes`, 4 KB; Cairn counts entries
/// only), the payload follows Cairn's; Redis accepts nodes of any size. Cairn keeps no deleted
/// entries, so a node holds only live ones, its first live entry as master, and its deleted
/// count 0. Listpacks are written uncompressed: Redis LZF-compresses strings over 20 bytes, but
/// its compressor starts from an uninitialised hash table (lzfP.h: `INIT_HTAB 0`), so its
/// compressed bytes are not a function of the input alone and cannot be matched; both read
/// either.
/// https://github.com/redis/redis/blob/7.0/src/rdb.c (rdbSaveObject, rdbSaveStreamPEL,
/// rdbSaveStreamConsumers)
enum StreamDump {
    static func payload(_ call: Call, of key: [UInt8], _ meta: CollectionMetadata) throws(CommandError) -> [UInt8] {
        var w = StreamDumpWriter()
        try call.scanMembers(meta, of: key, .member) { sub, value in
            w.entry(StreamID(bytes: sub), node: StreamEntry.node(value), fields: StreamEntry.fields(value))
            return true
        }
        guard w.length == meta.size else {
            call.engine.logger.error("DUMP: stream length \(meta.size) but \(w.length) entries found")
            throw CommandError("ERR", "the collection's stored size does not match its members; try again")
        }
        var groups: [StreamDumpWriter.Group] = []
        for g in try call.groups(meta, of: key) {
            var pending: [PendingEntry] = []
            try call.scanPending(meta, of: key, group: g.name) { p in
                pending.append(p)
                return true
            }
            let consumers = try call.consumers(meta, of: key, group: g.name)
            // Every pending entry has a consumer in Redis; one without would make a payload
            // Redis loads with a dangling owner.
            let names = Set(consumers.map(\.name))
            guard pending.allSatisfy({ names.contains($0.consumer) }) else {
                call.engine.logger.error("DUMP: a pending entry of a group names a consumer the group does not have")
                throw CommandError("ERR", "a consumer group's pending entries and consumers disagree")
            }
            groups.append(StreamDumpWriter.Group(group: g, pending: pending, consumers: consumers))
        }
        return w.finish(counters: meta.stream, groups: groups)
    }
}

/// Builds a stream's payload from its entries in ID order, then its counters and groups. No
/// I/O: `StreamDump` feeds it from storage, tests directly.
struct StreamDumpWriter {
    struct Group {
        var group: StreamGroup
        /// In ID order.
        var pending: [PendingEntry]
        /// In name order, with their seen times.
        var consumers: [(name: [UInt8], seen: Int64)]
    }

    private var nodes: [StreamListpack] = []
    private var node: UInt64? = nil
    private var first: StreamID? = nil
    private(set) var length: UInt64 = 0

    /// The next entry (IDs rising), in node `node`: entries of one node number share a listpack.
    mutating func entry(_ id: StreamID, node n: UInt64, fields: [[UInt8]]) {
        if n != node || nodes.isEmpty {
            nodes.append(StreamListpack(master: id, fields: fields))
            node = n
        }
        nodes[nodes.count - 1].append(id, fields)
        if first == nil { first = id }
        length += 1
    }

    func finish(counters: StreamCounters, groups: [Group]) -> [UInt8] {
        var w = DumpWriter(.streamListpacks2)
        w.length(nodes.count)
        for n in nodes {
            w.string(n.master.bytes)
            w.string(n.finish())
        }
        w.length(length)
        w.id(counters.lastID)
        // Redis's first ID is the first live entry's; 0-0 for a stream never written to.
        w.id(first ?? .zero)
        w.id(counters.maxDeletedID)
        w.length(counters.entriesAdded)
        w.length(groups.count)
        for g in groups {
            w.string(g.group.name)
            w.id(g.group.lastID)
            w.length(UInt64(bitPattern: g.group.entriesRead))
            w.length(g.pending.count)
            for p in g.pending {
                w.raw(p.id.bytes)
                w.milliseconds(p.deliveryTime)
                w.length(p.deliveryCount)
            }
            // Each consumer's pending IDs, in ID order as the group's are.
            var owned: [[UInt8]: [StreamID]] = [:]
            for p in g.pending { owned[p.consumer, default: []].append(p.id) }
            w.length(g.consumers.count)
            for c in g.consumers {
                w.string(c.name)
                w.milliseconds(c.seen)
                let ids = owned[c.name] ?? []
                w.length(ids.count)
                for id in ids { w.raw(id.bytes) }
            }
        }
        return w.finish()
    }
}

extension DumpWriter {
    /// A stream ID as two lengths, milliseconds then sequence.
    mutating func id(_ id: StreamID) {
        length(id.ms)
        length(id.seq)
    }

    /// `rdbSaveMillisecondTime`: 8 bytes little-endian.
    mutating func milliseconds(_ t: Int64) {
        let bits = UInt64(bitPattern: t)
        for i in 0..<8 { byte(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
    }

    /// Bytes as they are, without a length (a pending entry's ID).
    mutating func raw(_ b: [UInt8]) {
        for x in b { byte(x) }
    }
}
