/// The CRC-64 Redis puts at the end of a DUMP payload and an RDB file: the Jones polynomial
/// (0xad93d23594c935a9), reflected, initial value 0, no final xor. "123456789" gives
/// 0xe9c6d914c4b8d9ca. https://github.com/redis/redis/blob/7.0/src/crc64.c
enum CRC64 {
    /// The table of the reflected polynomial (0x95ac9329ac4bc9b5), one entry per byte value.
    static let table: [UInt64] = (0..<256).map { (n: Int) -> UInt64 in
        var crc = UInt64(n)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5 : crc >> 1 }
        return crc
    }

    static func checksum(_ bytes: some Collection<UInt8>, from crc: UInt64 = 0) -> UInt64 {
        var crc = crc
        let table = CRC64.table
        for b in bytes { crc = table[Int(UInt8(truncatingIfNeeded: crc) ^ b)] ^ (crc >> 8) }
        return crc
    }
}
