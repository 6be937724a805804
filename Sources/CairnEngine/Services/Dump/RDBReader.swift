/// Reads the primitives of Redis's RDB serialization from a byte buffer: lengths, strings (raw,
/// integer-encoded, LZF-compressed) and doubles, as `rdb.c` writes them.
/// https://github.com/redis/redis/blob/7.0/src/rdb.c (rdbLoadLen, rdbGenericLoadStringObject)
struct RDBReader {
    /// The payload is malformed: RESTORE answers `ERR Bad data format`.
    struct Malformed: Error {}

    let bytes: [UInt8]
    private(set) var offset = 0
    /// Where the reader must stop (the payload before its footer).
    let end: Int

    init(_ bytes: [UInt8], end: Int? = nil) {
        self.bytes = bytes
        self.end = end ?? bytes.count
    }

    var atEnd: Bool { offset >= end }

    mutating func byte() throws(Malformed) -> UInt8 {
        guard offset < end else { throw Malformed() }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func take(_ n: Int) throws(Malformed) -> ArraySlice<UInt8> {
        guard n >= 0, n <= end - offset else { throw Malformed() }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    /// A little-endian unsigned integer of `n` bytes.
    mutating func littleEndian(_ n: Int) throws(Malformed) -> UInt64 {
        var v: UInt64 = 0
        for (i, b) in try take(n).enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        return v
    }

    /// A length, or the special encoding of a string (`encoded` set) in its low 6 bits.
    mutating func length() throws(Malformed) -> (value: UInt64, encoded: Bool) {
        let first = try byte()
        switch first >> 6 {
        case 0: return (UInt64(first & 0x3f), false)
        case 1: return (UInt64(first & 0x3f) << 8 | UInt64(try byte()), false)
        case 2:
            switch first {
            case 0x80: return (UInt64(BigEndian.read(UInt32.self, try take(4))), false)
            case 0x81: return (BigEndian.read(UInt64.self, try take(8)), false)
            default: throw Malformed()
            }
        default: return (UInt64(first & 0x3f), true)
        }
    }

    /// A plain length, bounded by what is left to read so a corrupt one cannot make a caller
    /// reserve gigabytes.
    mutating func count() throws(Malformed) -> Int {
        let (v, encoded) = try length()
        guard !encoded, v <= UInt64(end - offset) else { throw Malformed() }
        return Int(v)
    }

    /// A string object in any of its encodings, as bytes.
    mutating func string() throws(Malformed) -> [UInt8] {
        let (v, encoded) = try length()
        guard encoded else { return Array(try take(Int(clamping: v))) }
        switch v {
        case 0: return Array(String(Int8(bitPattern: try byte())).utf8)
        case 1: return Array(String(Int16(truncatingIfNeeded: try littleEndian(2))).utf8)
        case 2: return Array(String(Int32(truncatingIfNeeded: try littleEndian(4))).utf8)
        case 3:
            let compressed = try count()
            let (plain, nested) = try length()
            // LZF expands at most 264 bytes per 2-3 input bytes: a larger claim is corrupt, and
            // refusing it keeps a tiny payload from reserving gigabytes.
            guard !nested, plain <= 512 * 1024 * 1024, plain <= UInt64(compressed) * 132 + 64 else { throw Malformed() }
            guard let out = LZF.decompress(try take(compressed), length: Int(plain)) else { throw Malformed() }
            return out
        default: throw Malformed()
        }
    }

    /// A double as 8 little-endian bytes (ZSET_2).
    mutating func binaryDouble() throws(Malformed) -> Double {
        Double(bitPattern: try littleEndian(8))
    }

    /// A double as text with a one-byte length (the old ZSET type): 253 NaN, 254 +inf, 255 -inf.
    mutating func textDouble() throws(Malformed) -> Double {
        let n = try byte()
        switch n {
        case 253: return .nan
        case 254: return .infinity
        case 255: return -.infinity
        default:
            guard let d = Double(String(decoding: try take(Int(n)), as: UTF8.self)) else { throw Malformed() }
            return d
        }
    }
}
