/// Writes a listpack byte for byte as Redis 7.0's `lpAppend` and `lpAppendInteger` build one:
/// a string that is exactly a 64-bit decimal integer is stored as an integer, in the smallest
/// of the integer encodings; any other in the smallest string encoding; each entry followed by
/// its back-length. `Listpack.entries` reads what this writes.
/// https://github.com/redis/redis/blob/7.0/src/listpack.c (lpEncodeGetType, lpEncodeBacklen)
struct ListpackWriter {
    /// The entries, without the 6-byte header and the 0xFF end.
    private(set) var body: [UInt8] = []
    private(set) var count = 0

    /// What the finished listpack will weigh, header and end byte included (`lpBytes`).
    var byteCount: Int { 6 + body.count + 1 }

    /// `lpAppend`: integer-encoded when `lpStringToInt64` accepts it.
    mutating func append(_ s: some Collection<UInt8>) {
        if let v = Self.strictInteger(s) { return append(integer: v) }
        let start = body.count
        let n = s.count
        if n < 64 {
            body.append(0x80 | UInt8(n))
        } else if n < 4096 {
            body += [0xe0 | UInt8(n >> 8), UInt8(n & 0xff)]
        } else {
            body.append(0xf0)
            littleEndian(UInt64(n), 4)
        }
        body += s
        backLength(body.count - start)
    }

    /// `lpAppendInteger`: 7-bit unsigned, 13-, 16-, 24-, 32- or 64-bit signed.
    mutating func append(integer v: Int64) {
        let start = body.count
        switch v {
        case 0...127:
            body.append(UInt8(v))
        case -4096...4095:
            let u = v < 0 ? (1 << 13) + v : v
            body += [0xc0 | UInt8(u >> 8), UInt8(u & 0xff)]
        case Int64(Int16.min)...Int64(Int16.max):
            body.append(0xf1)
            littleEndian(UInt64(bitPattern: v), 2)
        case -(1 << 23)...((1 << 23) - 1):
            body.append(0xf2)
            littleEndian(UInt64(bitPattern: v), 3)
        case Int64(Int32.min)...Int64(Int32.max):
            body.append(0xf3)
            littleEndian(UInt64(bitPattern: v), 4)
        default:
            body.append(0xf4)
            littleEndian(UInt64(bitPattern: v), 8)
        }
        backLength(body.count - start)
    }

    /// Appends the entries another writer holds, as if appended here one by one.
    mutating func append(contentsOf other: ListpackWriter) {
        body += other.body
        count += other.count
    }

    /// The listpack: total size and element count (65535 once there are that many: "unknown")
    /// little-endian, the entries, 0xFF.
    func finish() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        let total = UInt32(truncatingIfNeeded: byteCount)
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: total >> (8 * UInt32(i)))) }
        let elements = UInt16(min(count, 65535))
        out += [UInt8(elements & 0xff), UInt8(elements >> 8)]
        out += body
        out.append(0xff)
        return out
    }

    /// The entry's size (encoding and data) 7 bits a byte, most significant first; every byte
    /// but the first has its top bit set, so the entry can be found from its end.
    private mutating func backLength(_ size: Int) {
        count += 1
        let l = UInt64(size)
        let bytes = l <= 127 ? 1 : l < 16383 ? 2 : l < 2_097_151 ? 3 : l < 268_435_455 ? 4 : 5
        for i in (0..<bytes).reversed() {
            let group = UInt8((l >> (7 * UInt64(i))) & 127)
            body.append(i == bytes - 1 ? group : group | 128)
        }
    }

    private mutating func littleEndian(_ v: UInt64, _ n: Int) {
        for i in 0..<n { body.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    /// `lpStringToInt64`: the value when `s` is exactly how that 64-bit integer prints (no
    /// sign but `-`, no leading zero, no `-0`), so the string comes back unchanged.
    static func strictInteger(_ s: some Collection<UInt8>) -> Int64? {
        guard s.count > 0 && s.count < 21 else { return nil }
        let text = String(decoding: s, as: UTF8.self)
        guard let v = Int64(text), String(v) == text else { return nil }
        return v
    }
}
