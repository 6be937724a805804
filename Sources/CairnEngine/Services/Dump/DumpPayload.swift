/// A DUMP payload as Redis 7.0 writes and reads it: one RDB-serialized value (a type byte,
/// then the value), the RDB version as 2 bytes little-endian, and the CRC-64 of everything
/// before it as 8 bytes little-endian.
/// https://redis.io/docs/latest/commands/dump/, https://github.com/redis/redis/blob/7.0/src/cluster.c
/// (createDumpPayload, verifyDumpPayload), rdb.c (rdbLoadObject).
enum DumpPayload {
    /// The RDB version Cairn writes: Redis 7.0's, the newest a 7.0 server accepts.
    static let rdbVersion: UInt16 = 10

    /// RDB type bytes (rdb.h).
    enum RDBType: UInt8 {
        case string = 0, list = 1, set = 2, zset = 3, hash = 4, zset2 = 5
        case setIntset = 11, hashListpack = 16, zsetListpack = 17, listQuicklist2 = 18
        /// Streams: Redis 5 and 6's, Redis 7.0's (first ID, max deleted ID, entries added, groups'
        /// entries read), and Redis 7.2's (consumers' active time too).
        case streamListpacks = 15, streamListpacks2 = 19, streamListpacks3 = 21
    }

    /// True when the footer's version is one Cairn reads and its CRC matches. Redis checks
    /// this first and answers `ERR DUMP payload version or checksum are wrong`.
    static func isIntact(_ payload: [UInt8]) -> Bool {
        guard payload.count >= 10 else { return false }
        let footer = payload.count - 10
        let version = UInt16(payload[footer]) | UInt16(payload[footer + 1]) << 8
        guard version <= rdbVersion else { return false }
        var stored: UInt64 = 0
        for i in 0..<8 { stored |= UInt64(payload[footer + 2 + i]) << (8 * UInt64(i)) }
        return CRC64.checksum(payload[..<(payload.count - 8)]) == stored
    }

    /// Decodes an intact payload (see `isIntact`) into `sink`, piece by piece, so a big
    /// collection is not held twice. Throws `Malformed` for anything Cairn cannot read: a
    /// corrupt body, an empty or duplicate-member collection, a NaN score, an inconsistent
    /// stream (`StreamRestore`), or a type Cairn does not have (modules) or that Redis 7.0 no
    /// longer writes (ziplists).
    static func decode<Sink: RDBSink>(_ payload: [UInt8], into sink: inout Sink) throws(RDBReader.Malformed) {
        var r = RDBReader(payload, end: payload.count - 10)
        guard let type = RDBType(rawValue: try r.byte()) else { throw RDBReader.Malformed() }
        switch type {
        case .string:
            try sink.string(try r.string())
        case .list:
            let n = try r.count()
            guard n > 0 else { throw RDBReader.Malformed() }
            try sink.begin(.list)
            for _ in 0..<n { try sink.element(try r.string()) }
        case .listQuicklist2:
            let nodes = try r.count()
            try sink.begin(.list)
            var any = false
            for _ in 0..<nodes {
                let container = try r.count()
                let blob = try r.string()
                if container == 1 {  // PLAIN: the node is one element
                    try sink.element(blob)
                    any = true
                } else if container == 2 {  // PACKED: a listpack of elements
                    for e in try Listpack.entries(blob) { try sink.element(e); any = true }
                } else {
                    throw RDBReader.Malformed()
                }
            }
            guard any else { throw RDBReader.Malformed() }
        case .set:
            let n = try r.count()
            guard n > 0 else { throw RDBReader.Malformed() }
            try sink.begin(.set)
            for _ in 0..<n { try sink.element(try r.string()) }
        case .setIntset:
            let members = try Intset.members(try r.string())
            guard !members.isEmpty else { throw RDBReader.Malformed() }
            try sink.begin(.set)
            for m in members { try sink.element(m) }
        case .zset, .zset2:
            let n = try r.count()
            guard n > 0 else { throw RDBReader.Malformed() }
            try sink.begin(.zset)
            for _ in 0..<n {
                let member = try r.string()
                let score = type == .zset2 ? try r.binaryDouble() : try r.textDouble()
                guard !score.isNaN else { throw RDBReader.Malformed() }
                try sink.scored(member, score)
            }
        case .zsetListpack:
            let entries = try Listpack.entries(try r.string())
            guard !entries.isEmpty, entries.count % 2 == 0 else { throw RDBReader.Malformed() }
            try sink.begin(.zset)
            for i in stride(from: 0, to: entries.count, by: 2) {
                guard let score = Double(String(decoding: entries[i + 1], as: UTF8.self)), !score.isNaN else { throw RDBReader.Malformed() }
                try sink.scored(entries[i], score)
            }
        case .hash:
            let n = try r.count()
            guard n > 0 else { throw RDBReader.Malformed() }
            try sink.begin(.hash)
            for _ in 0..<n { try sink.field(try r.string(), try r.string()) }
        case .hashListpack:
            let entries = try Listpack.entries(try r.string())
            guard !entries.isEmpty, entries.count % 2 == 0 else { throw RDBReader.Malformed() }
            try sink.begin(.hash)
            for i in stride(from: 0, to: entries.count, by: 2) { try sink.field(entries[i], entries[i + 1]) }
        case .streamListpacks, .streamListpacks2, .streamListpacks3:
            try StreamRestore.decode(&r, type, into: &sink)
        }
        guard r.atEnd else { throw RDBReader.Malformed() }
    }
}

/// Receives a decoded DUMP payload: one string, or `begin` then the collection's members in
/// the payload's order. Throws `Malformed` to reject it (a duplicate member).
protocol RDBSink {
    mutating func string(_ value: [UInt8]) throws(RDBReader.Malformed)
    mutating func begin(_ type: KeyType) throws(RDBReader.Malformed)
    /// A list element or a set member.
    mutating func element(_ value: [UInt8]) throws(RDBReader.Malformed)
    mutating func field(_ name: [UInt8], _ value: [UInt8]) throws(RDBReader.Malformed)
    mutating func scored(_ member: [UInt8], _ score: Double) throws(RDBReader.Malformed)
    /// A stream's live entry, in ID order, with the node (listpack) it came in, numbered from 1.
    mutating func streamEntry(_ id: StreamID, node: UInt64, fields: [[UInt8]]) throws(RDBReader.Malformed)
    /// A consumer group, then its consumers and its pending entries.
    mutating func streamGroup(_ group: StreamGroup, consumers: [(name: [UInt8], seen: Int64)],
                              pending: [PendingEntry]) throws(RDBReader.Malformed)
    /// The stream's counters, last.
    mutating func streamCounters(_ counters: StreamCounters) throws(RDBReader.Malformed)
}

/// A sink that takes no streams refuses them.
extension RDBSink {
    mutating func streamEntry(_ id: StreamID, node: UInt64, fields: [[UInt8]]) throws(RDBReader.Malformed) {
        throw RDBReader.Malformed()
    }

    mutating func streamGroup(_ group: StreamGroup, consumers: [(name: [UInt8], seen: Int64)],
                              pending: [PendingEntry]) throws(RDBReader.Malformed) {
        throw RDBReader.Malformed()
    }

    mutating func streamCounters(_ counters: StreamCounters) throws(RDBReader.Malformed) {
        throw RDBReader.Malformed()
    }
}

/// Writes a DUMP payload in the plain RDB encodings every Redis since 2.x reads: a string as
/// raw bytes, a list as RDB_TYPE_LIST, a set as RDB_TYPE_SET, a sorted set as ZSET_2 (binary
/// doubles), a hash as RDB_TYPE_HASH. The receiving Redis picks its own in-memory encoding.
/// A stream has only its listpack encoding (`StreamDump`).
struct DumpWriter {
    private(set) var bytes: [UInt8] = []

    init(_ type: DumpPayload.RDBType) { bytes.append(type.rawValue) }

    /// A payload of opcodes and strings (FUNCTION DUMP's).
    init() {}

    mutating func byte(_ b: UInt8) { bytes.append(b) }

    mutating func length(_ n: Int) {
        length(UInt64(n))
    }

    /// `rdbSaveLen`: 6 bits, 14 bits, or 0x80 and 32 bits or 0x81 and 64 bits big-endian.
    mutating func length(_ n: UInt64) {
        switch n {
        case ..<64: bytes.append(UInt8(n))
        case ..<16384: bytes += [0x40 | UInt8(n >> 8), UInt8(truncatingIfNeeded: n)]
        case ..<(1 << 32):
            bytes.append(0x80)
            BigEndian.append(UInt32(n), to: &bytes)
        default:
            bytes.append(0x81)
            BigEndian.append(n, to: &bytes)
        }
    }

    mutating func string(_ s: some Collection<UInt8>) {
        length(s.count)
        bytes += s
    }

    mutating func binaryDouble(_ d: Double) {
        let bits = d.bitPattern
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
    }

    /// The payload: the value, the RDB version and the CRC-64.
    mutating func finish() -> [UInt8] {
        bytes.append(UInt8(truncatingIfNeeded: DumpPayload.rdbVersion))
        bytes.append(UInt8(truncatingIfNeeded: DumpPayload.rdbVersion >> 8))
        let crc = CRC64.checksum(bytes)
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt64(i)))) }
        return bytes
    }
}
