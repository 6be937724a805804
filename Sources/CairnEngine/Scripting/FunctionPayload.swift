/// FUNCTION DUMP's payload and what FUNCTION RESTORE accepts, in Redis 7.0's format so a
/// payload moves between Cairn and Redis both ways: one `0xf5` opcode (RDB_OPCODE_FUNCTION2)
/// and an RDB string holding the library's code per library, then the RDB version (10, two
/// bytes little-endian) and the CRC64 (Jones polynomial, little-endian) of everything before.
///
/// Cairn writes the code as a plain RDB string; Redis compresses strings over 20 bytes with
/// LZF when that saves space, so the bytes differ from Redis's for the same libraries, but
/// either reads the other's. Reading takes plain, integer-encoded and LZF-compressed strings.
enum FunctionPayload {
    static let functionOpcode: UInt8 = 0xf5
    static let rdbVersion: UInt16 = 10

    static func encode(_ codes: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for code in codes {
            out.append(functionOpcode)
            appendLength(code.count, to: &out)
            out += code
        }
        out.append(UInt8(rdbVersion & 0xff))
        out.append(UInt8(rdbVersion >> 8))
        let crc = crc64(out)
        for i in 0..<8 { out.append(UInt8((crc >> (8 * UInt64(i))) & 0xff)) }
        return out
    }

    /// The libraries' codes in a payload; Redis's errors for a bad footer or content.
    static func decode(_ payload: [UInt8]) throws(CommandError) -> [[UInt8]] {
        guard payload.count >= 10 else { throw badFooter }
        let footer = payload.count - 10
        let version = UInt16(payload[footer]) | UInt16(payload[footer + 1]) << 8
        var stored: UInt64 = 0
        for i in 0..<8 { stored |= UInt64(payload[footer + 2 + i]) << (8 * UInt64(i)) }
        guard version <= rdbVersion, crc64(payload[..<(footer + 2)]) == stored else { throw badFooter }
        var codes: [[UInt8]] = []
        var i = 0
        while i < footer {
            guard payload[i] == functionOpcode else { throw CommandError("ERR", "given type is not a function") }
            i += 1
            guard let code = readString(payload, at: &i, end: footer) else {
                throw CommandError("ERR", "Failed loading library payload")
            }
            codes.append(code)
        }
        return codes
    }

    static let badFooter = CommandError("ERR", "DUMP payload version or checksum are wrong")

    // MARK: RDB strings

    static func appendLength(_ n: Int, to out: inout [UInt8]) {
        if n < 1 << 6 {
            out.append(UInt8(n))
        } else if n < 1 << 14 {
            out += [0x40 | UInt8(n >> 8), UInt8(n & 0xff)]
        } else if n <= Int(UInt32.max) {
            out.append(0x80)
            for s in stride(from: 24, through: 0, by: -8) { out.append(UInt8((n >> s) & 0xff)) }
        } else {
            out.append(0x81)
            for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8((n >> s) & 0xff)) }
        }
    }

    /// A length, or an encoding's number (`encoded`) when the top bits are 11.
    private static func readLength(_ p: [UInt8], at i: inout Int, end: Int) -> (value: Int, encoded: Bool)? {
        guard i < end else { return nil }
        let first = p[i]
        i += 1
        switch first >> 6 {
        case 0: return (Int(first & 0x3f), false)
        case 1:
            guard i < end else { return nil }
            defer { i += 1 }
            return (Int(first & 0x3f) << 8 | Int(p[i]), false)
        case 3: return (Int(first & 0x3f), true)
        default:
            let width = first == 0x80 ? 4 : first == 0x81 ? 8 : 0
            guard width > 0, i + width <= end else { return nil }
            var n: UInt64 = 0
            for _ in 0..<width {
                n = n << 8 | UInt64(p[i])
                i += 1
            }
            guard n <= UInt64(Int.max) else { return nil }
            return (Int(n), false)
        }
    }

    static func readString(_ p: [UInt8], at i: inout Int, end: Int) -> [UInt8]? {
        guard let (n, encoded) = readLength(p, at: &i, end: end) else { return nil }
        if !encoded {
            guard n <= end - i else { return nil }
            defer { i += n }
            return Array(p[i..<(i + n)])
        }
        switch n {
        case 0, 1, 2:
            let width = 1 << n
            guard i + width <= end else { return nil }
            var v: UInt64 = 0
            for k in 0..<width { v |= UInt64(p[i + k]) << (8 * UInt64(k)) }
            i += width
            let shift = UInt64(64 - 8 * width)
            return Array(String(Int64(bitPattern: v << shift) >> Int64(shift)).utf8)
        case 3:
            guard let (compressed, e1) = readLength(p, at: &i, end: end), !e1,
                let (length, e2) = readLength(p, at: &i, end: end), !e2, compressed <= end - i
            else { return nil }
            defer { i += compressed }
            return lzfDecompress(p[i..<(i + compressed)], length: length)
        default:
            return nil
        }
    }

    /// LZF (liblzf's format, as Redis writes compressed RDB strings): nil when malformed or
    /// not exactly `length` bytes.
    static func lzfDecompress(_ input: ArraySlice<UInt8>, length: Int) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(length)
        var i = input.startIndex
        while i < input.endIndex {
            let ctrl = Int(input[i])
            i += 1
            if ctrl < 32 {
                let run = ctrl + 1
                guard run <= input.endIndex - i, out.count + run <= length else { return nil }
                out += input[i..<(i + run)]
                i += run
            } else {
                var run = ctrl >> 5
                if run == 7 {
                    guard i < input.endIndex else { return nil }
                    run += Int(input[i])
                    i += 1
                }
                guard i < input.endIndex else { return nil }
                let back = ((ctrl & 0x1f) << 8) + Int(input[i]) + 1
                i += 1
                run += 2
                guard back <= out.count, out.count + run <= length else { return nil }
                let from = out.count - back
                for k in 0..<run { out.append(out[from + k]) }
            }
        }
        return out.count == length ? out : nil
    }

    // MARK: CRC64

    /// Redis's crc64: Jones polynomial, reflected, initial value 0, no final xor.
    static func crc64(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var crc: UInt64 = 0
        for b in bytes { crc = crcTable[Int((crc ^ UInt64(b)) & 0xff)] ^ (crc >> 8) }
        return crc
    }

    private static let crcTable: [UInt64] = (0..<256).map { n in
        var c = UInt64(n)
        for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0x95ac_9329_ac4b_c9b5 : c >> 1 }
        return c
    }
}
