/// Where an element lands in a HyperLogLog: Redis's 64-bit MurmurHash2 (`MurmurHash64A`,
/// reading 8-byte words little-endian, seed 0xadc83b19); its low 14 bits pick the register,
/// and the run of zeros above them, plus one, is the register's candidate value (1...51).
enum HyperLogLogHash {
    static let seed: UInt64 = 0xadc8_3b19

    static func murmur64A(_ data: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        let m: UInt64 = 0xc6a4_a793_5bd1_e995
        let r: UInt64 = 47
        var h = seed ^ (UInt64(data.count) &* m)
        let words = data.count / 8
        for w in 0..<words {
            var k: UInt64 = 0
            for i in (0..<8).reversed() { k = k << 8 | UInt64(data[w * 8 + i]) }
            k = k &* m
            k ^= k >> r
            k = k &* m
            h ^= k
            h = h &* m
        }
        let tail = data.count & 7
        if tail > 0 {
            for i in (0..<tail).reversed() { h ^= UInt64(data[words * 8 + i]) << (8 * UInt64(i)) }
            h = h &* m
        }
        h ^= h >> r
        h = h &* m
        h ^= h >> r
        return h
    }

    /// The register `element` picks and the value it offers it (Redis's `hllPatLen`).
    static func registerAndCount(_ element: UnsafeRawBufferPointer) -> (Int, UInt8) {
        let hash = murmur64A(element, seed: seed)
        let index = Int(hash & UInt64(HyperLogLog.registerCount - 1))
        // The bit above the 50 used ends the run, so the value is at most 51.
        let rest = hash >> 14 | 1 << 50
        return (index, UInt8(rest.trailingZeroBitCount + 1))
    }
}
