/// RESTORE of a stream: reads Redis's stream payloads (`STREAM_LISTPACKS` of Redis 5 and 6,
/// `_2` of 7.0, `_3` of 7.2; the layout is `StreamDump`'s) into Cairn's: one entry per live
/// stream entry, numbered with the listpack it came in (`StreamNodes`), deleted-flagged entries
/// skipped, then the counters and the groups with their consumers and pending entries.
///
/// Checked as Redis's loader checks, and where Cairn's layout needs it more: every listpack
/// well formed and not empty, its master entry and entries complete, each entry's lp-count
/// right, the live and deleted counts the master entry claims, IDs rising, the stream's length
/// the number of live entries, its last ID not below them, entries added not below the length,
/// a group's entries read not above entries added, group and consumer names unique, every
/// pending entry listed once and owned by exactly one consumer. Anything else throws
/// `Malformed` (`ERR Bad data format`).
/// https://github.com/redis/redis/blob/7.0/src/rdb.c (rdbLoadObject, the stream branch)
enum StreamRestore {
    static func decode<Sink: RDBSink>(_ r: inout RDBReader, _ type: DumpPayload.RDBType,
                                      into sink: inout Sink) throws(RDBReader.Malformed) {
        try sink.begin(.stream)
        var counters = StreamCounters()
        var previous: StreamID? = nil  // the last entry read, deleted ones included
        var first: StreamID? = nil  // the first live entry
        var live: UInt64 = 0
        let nodes = try r.count()
        for node in 0..<nodes {
            let key = try r.string()
            guard key.count == 16 else { throw RDBReader.Malformed() }
            let master = StreamID(bytes: key)
            var e = Elements(try Listpack.entries(try r.string()))
            let count = try e.integer(), deleted = try e.integer(), fieldCount = try e.integer()
            guard count >= 0, deleted >= 0, fieldCount >= 0, fieldCount <= e.remaining else { throw RDBReader.Malformed() }
            var masterFields: [[UInt8]] = []
            for _ in 0..<fieldCount { masterFields.append(try e.next()) }
            guard try e.integer() == 0, !e.atEnd else { throw RDBReader.Malformed() }
            var liveHere: Int64 = 0, deletedHere: Int64 = 0
            while !e.atEnd {
                let flags = try e.integer()
                guard flags & ~(StreamListpack.deletedFlag | StreamListpack.sameFieldsFlag) == 0 else { throw RDBReader.Malformed() }
                let ms = UInt64(bitPattern: try e.integer()), seq = UInt64(bitPattern: try e.integer())
                let id = StreamID(ms: master.ms &+ ms, seq: master.seq &+ seq)
                guard id >= master, previous.map({ id > $0 }) ?? true else { throw RDBReader.Malformed() }
                previous = id
                let same = flags & StreamListpack.sameFieldsFlag != 0
                let pairs = try same ? Int64(masterFields.count) : e.integer()
                guard pairs >= 0, pairs <= e.remaining else { throw RDBReader.Malformed() }
                var fields: [[UInt8]] = []
                fields.reserveCapacity(Int(pairs) * 2)
                for i in 0..<Int(pairs) {
                    fields.append(try same ? masterFields[i] : e.next())
                    fields.append(try e.next())
                }
                guard try e.integer() == 3 + pairs + (same ? 0 : pairs + 1) else { throw RDBReader.Malformed() }
                if flags & StreamListpack.deletedFlag != 0 {
                    deletedHere += 1
                    continue
                }
                liveHere += 1
                live += 1
                if first == nil { first = id }
                try sink.streamEntry(id, node: UInt64(node + 1), fields: fields)
            }
            guard liveHere == count, deletedHere == deleted else { throw RDBReader.Malformed() }
            // XADD's next entry goes on into the last node while it has room, as in Redis.
            counters.lastNode = UInt64(node + 1)
            counters.lastNodeEntries = UInt32(clamping: count + deleted)
            counters.lastNodeLive = UInt32(clamping: count)
        }
        guard try plain(&r) == live else { throw RDBReader.Malformed() }
        counters.lastID = try id(&r)
        if type == .streamListpacks {
            // Redis 7.0's loader: every entry counts as added, no tombstone is known.
            counters.entriesAdded = live
        } else {
            _ = try id(&r)  // the first ID: Cairn finds its first entry itself
            counters.maxDeletedID = try id(&r)
            counters.entriesAdded = try plain(&r)
        }
        // Later Redis refuses these too ("Stream entries_added inconsistent with length"); the lag
        // arithmetic (StreamLag) takes the counter as a signed 64-bit number.
        guard previous.map({ $0 <= counters.lastID }) ?? true, counters.entriesAdded >= live,
              counters.entriesAdded <= UInt64(Int64.max) else { throw RDBReader.Malformed() }
        let lag = StreamLag(counters: counters, length: live, firstID: first ?? .zero)
        let groups = try r.count()
        var names = Set<[UInt8]>()
        for _ in 0..<groups {
            let name = try r.string()
            guard names.insert(name).inserted else { throw RDBReader.Malformed() }
            let lastID = try id(&r)
            // Redis 5 and 6 kept no read counter: estimated as Redis 7.0 estimates it on load.
            let entriesRead = try type == .streamListpacks ? lag.entriesRead(at: lastID) : Int64(bitPattern: plain(&r))
            guard entriesRead == StreamLag.unknown || (entriesRead >= 0 && UInt64(entriesRead) <= counters.entriesAdded) else {
                throw RDBReader.Malformed()
            }
            var deliveries: [StreamID: (time: Int64, count: UInt64)] = [:]
            for _ in try 0..<r.count() {
                let pending = StreamID(bytes: try r.take(16))
                let time = Int64(bitPattern: try r.littleEndian(8))
                let count = try plain(&r)
                guard deliveries.updateValue((time, count), forKey: pending) == nil else { throw RDBReader.Malformed() }
            }
            var owners: [StreamID: [UInt8]] = [:]
            var consumers: [(name: [UInt8], seen: Int64)] = []
            var consumerNames = Set<[UInt8]>()
            for _ in try 0..<r.count() {
                let consumer = try r.string()
                guard consumerNames.insert(consumer).inserted else { throw RDBReader.Malformed() }
                let seen = Int64(bitPattern: try r.littleEndian(8))
                if type == .streamListpacks3 { _ = try r.littleEndian(8) }  // active time: Cairn keeps the seen time only
                for _ in try 0..<r.count() {
                    let owned = StreamID(bytes: try r.take(16))
                    guard deliveries[owned] != nil, owners.updateValue(consumer, forKey: owned) == nil else { throw RDBReader.Malformed() }
                }
                consumers.append((consumer, seen))
            }
            guard owners.count == deliveries.count else { throw RDBReader.Malformed() }
            let pending = deliveries.keys.sorted().map { id in
                PendingEntry(id: id, deliveryTime: deliveries[id]!.time, deliveryCount: deliveries[id]!.count, consumer: owners[id]!)
            }
            try sink.streamGroup(StreamGroup(name: name, lastID: lastID, entriesRead: entriesRead), consumers: consumers, pending: pending)
        }
        try sink.streamCounters(counters)
    }

    /// A length that is not a string encoding.
    private static func plain(_ r: inout RDBReader) throws(RDBReader.Malformed) -> UInt64 {
        let (v, encoded) = try r.length()
        guard !encoded else { throw RDBReader.Malformed() }
        return v
    }

    /// A stream ID as two lengths.
    private static func id(_ r: inout RDBReader) throws(RDBReader.Malformed) -> StreamID {
        StreamID(ms: try plain(&r), seq: try plain(&r))
    }

    /// The elements of one listpack, read in order.
    private struct Elements {
        let items: [[UInt8]]
        var at = 0

        init(_ items: [[UInt8]]) { self.items = items }

        var atEnd: Bool { at >= items.count }
        var remaining: Int64 { Int64(items.count - at) }

        mutating func next() throws(RDBReader.Malformed) -> [UInt8] {
            guard at < items.count else { throw RDBReader.Malformed() }
            defer { at += 1 }
            return items[at]
        }

        /// An element that must be an integer (Redis writes these with `lpAppendInteger`).
        mutating func integer() throws(RDBReader.Malformed) -> Int64 {
            guard let v = ListpackWriter.strictInteger(try next()) else { throw RDBReader.Malformed() }
            return v
        }
    }
}
