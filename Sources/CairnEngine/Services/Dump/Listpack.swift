/// Reads the entries of a listpack, the compact encoding Redis 7.0 dumps small hashes, sorted
/// sets and list nodes in: a 4-byte total size, a 2-byte count, the entries (each an encoding
/// byte, its data, and a back-length), then 0xFF.
/// https://github.com/antirez/listpack/blob/master/listpack.md
enum Listpack {
    /// Every entry as bytes (integers in decimal, as Redis gives them back), in order.
    static func entries(_ blob: [UInt8]) throws(RDBReader.Malformed) -> [[UInt8]] {
        guard blob.count >= 7 else { throw RDBReader.Malformed() }
        var total = 0
        for i in 0..<4 { total |= Int(blob[i]) << (8 * i) }
        guard total == blob.count, blob[blob.count - 1] == 0xff else { throw RDBReader.Malformed() }
        var out: [[UInt8]] = []
        var r = RDBReader(blob, end: blob.count - 1)
        _ = try r.take(6)
        while !r.atEnd {
            let start = r.offset
            let first = try r.byte()
            let entry: [UInt8]
            if first & 0x80 == 0 {
                entry = Array(String(first).utf8)
            } else if first & 0xc0 == 0x80 {
                entry = Array(try r.take(Int(first & 0x3f)))
            } else if first & 0xe0 == 0xc0 {
                let raw = Int(first & 0x1f) << 8 | Int(try r.byte())
                entry = Array(String(raw >= 1 << 12 ? raw - (1 << 13) : raw).utf8)
            } else if first & 0xf0 == 0xe0 {
                entry = Array(try r.take(Int(first & 0x0f) << 8 | Int(try r.byte())))
            } else {
                switch first {
                case 0xf0: entry = Array(try r.take(Int(try r.littleEndian(4))))
                case 0xf1: entry = Array(String(Int16(truncatingIfNeeded: try r.littleEndian(2))).utf8)
                case 0xf2:
                    let v = Int32(truncatingIfNeeded: try r.littleEndian(3) << 8) >> 8  // sign-extends 24 bits
                    entry = Array(String(v).utf8)
                case 0xf3: entry = Array(String(Int32(truncatingIfNeeded: try r.littleEndian(4))).utf8)
                case 0xf4: entry = Array(String(Int64(bitPattern: try r.littleEndian(8))).utf8)
                default: throw RDBReader.Malformed()
                }
            }
            // The back-length: the entry's size so far, 7 bits a byte.
            let size = r.offset - start
            let backLength = size < 128 ? 1 : size < 16383 ? 2 : size < 2_097_151 ? 3 : size < 268_435_455 ? 4 : 5
            _ = try r.take(backLength)
            out.append(entry)
        }
        var count = 0
        for i in 4..<6 { count |= Int(blob[i]) << (8 * (i - 4)) }
        // 65535 means "too many to count here".
        guard count == 65535 || count == out.count else { throw RDBReader.Malformed() }
        return out
    }
}

/// Reads an intset, how Redis 7.0 dumps a small set of integers: a 4-byte width (2, 4 or 8),
/// a 4-byte count, then the integers little-endian and sorted.
enum Intset {
    static func members(_ blob: [UInt8]) throws(RDBReader.Malformed) -> [[UInt8]] {
        var r = RDBReader(blob)
        let width = Int(try r.littleEndian(4))
        let count = Int(try r.littleEndian(4))
        guard [2, 4, 8].contains(width), count * width == blob.count - 8 else { throw RDBReader.Malformed() }
        var out: [[UInt8]] = []
        out.reserveCapacity(count)
        for _ in 0..<count {
            let raw = try r.littleEndian(width)
            let v: Int64 = switch width {
            case 2: Int64(Int16(truncatingIfNeeded: raw))
            case 4: Int64(Int32(truncatingIfNeeded: raw))
            default: Int64(bitPattern: raw)
            }
            out.append(Array(String(v).utf8))
        }
        return out
    }
}
