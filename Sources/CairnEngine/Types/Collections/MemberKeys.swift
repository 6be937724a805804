/// How a collection's members are keyed in the members family (`Engine.membersFamilyName`),
/// one RocksDB entry each:
///
/// ```
/// family name length  2 bytes big-endian
/// family name         the user column family the key lives in
/// key length          4 bytes big-endian
/// key
/// version             8 bytes big-endian (CollectionMetadata.version)
/// tag                 1 byte: what the rest is (Tag)
/// sub-key             hash field, set member, sorted-set member, list position, stream
///                     entry ID, or (for the score index) an 8-byte order-preserving score
///                     then the member; a stream's groups' records (`StreamGroups`)
/// ```
/// The lengths make one collection's entries a contiguous range that no other key's can
/// interleave, so a member read is one point lookup and HGETALL, ZRANGE or LRANGE an ordered
/// scan of that range.
enum MemberKeys {
    enum Tag: UInt8 {
        /// A hash field (value: the field's value), a set member (value: empty), a sorted-set
        /// member (value: its score, 8 bytes), a list element (sub-key: its 8-byte position), a
        /// stream entry (sub-key: its 16-byte ID, value: its fields: `StreamEntry`).
        case member = 1
        /// A sorted set's score index: sub-key = order-preserving score + member, value empty.
        case score = 2
        /// A stream's consumer group: sub-key = its name (`StreamGroups`).
        case group = 3
        /// An entry of a consumer group's pending list: sub-key = group, then entry ID.
        case pending = 4
        /// A consumer of a group: sub-key = group, then consumer name.
        case consumer = 5
    }

    /// Every entry of one collection starts with this.
    static func prefix(family: String, key: [UInt8], version: UInt64) -> [UInt8] {
        let name = Array(family.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(2 + name.count + 4 + key.count + 8 + 1)
        BigEndian.append(UInt16(truncatingIfNeeded: name.count), to: &out)
        out += name
        BigEndian.append(UInt32(truncatingIfNeeded: key.count), to: &out)
        out += key
        BigEndian.append(version, to: &out)
        return out
    }

    /// The members-family key of sub-key `sub` of `tag` under a collection's `prefix`, built in
    /// one allocation.
    static func entryKey(_ prefix: [UInt8], _ tag: Tag, _ sub: some Collection<UInt8>) -> [UInt8] {
        var k: [UInt8] = []
        k.reserveCapacity(prefix.count + 1 + sub.count)
        k.append(contentsOf: prefix)
        k.append(tag.rawValue)
        k.append(contentsOf: sub)
        return k
    }

    /// Where the range of one family's collections starts and ends (CF.DROP, FLUSHDB).
    static func familyRange(_ family: String) -> (lower: [UInt8], upper: [UInt8]) {
        let name = Array(family.utf8)
        let lower = BigEndian.bytes(UInt16(truncatingIfNeeded: name.count)) + name
        return (lower, Call.prefixEnd(lower) ?? lower + [0xFF])
    }

    /// A parsed members-family key.
    struct Parsed {
        var family: String
        var key: [UInt8]
        var version: UInt64
        /// Offset of the tag byte.
        var tagOffset: Int
    }

    static func parse(_ raw: UnsafeRawBufferPointer) -> Parsed? {
        guard raw.count >= 2 else { return nil }
        let nameLength = Int(BigEndian.read(UInt16.self, raw, at: 0))
        var at = 2 + nameLength
        guard raw.count >= at + 4 else { return nil }
        let family = String(decoding: UnsafeRawBufferPointer(rebasing: raw[2..<at]), as: UTF8.self)
        let keyLength = Int(BigEndian.read(UInt32.self, raw, at: at))
        at += 4
        guard raw.count >= at + keyLength + 8 else { return nil }
        let key = Array(raw[at..<at + keyLength])
        at += keyLength
        let version = BigEndian.read(UInt64.self, raw, at: at)
        return Parsed(family: family, key: key, version: version, tagOffset: at + 8)
    }

    /// A double as 8 bytes whose unsigned order is the numbers' order (-inf first, +inf last).
    static func orderedScore(_ score: Double) -> [UInt8] {
        var bits = (score == 0 ? 0.0 : score).bitPattern  // -0 sorts as 0
        bits = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        return BigEndian.bytes(bits)
    }

    static func score(ordered bytes: some Collection<UInt8>) -> Double {
        var bits = BigEndian.read(UInt64.self, bytes)
        bits = bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits
        return Double(bitPattern: bits)
    }

    /// A double as stored in a sorted-set member's value (8 bytes, big-endian IEEE bits).
    static func scoreValue(_ score: Double) -> [UInt8] {
        BigEndian.bytes(score.bitPattern)
    }

    static func score(value bytes: some Collection<UInt8>) -> Double {
        Double(bitPattern: BigEndian.read(UInt64.self, bytes))
    }

    /// A list position as an 8-byte big-endian sub-key.
    static func position(_ p: UInt64) -> [UInt8] {
        BigEndian.bytes(p)
    }
}
