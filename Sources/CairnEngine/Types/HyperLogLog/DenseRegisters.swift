/// The dense encoding: 16,384 six-bit registers packed after the header, least significant bit
/// first. Register `i` starts at bit `6 * i`: in byte `6i / 8` from bit `6i % 8` up, and on
/// into the next byte when it does not fit (hyperloglog.c's `HLL_DENSE_GET_REGISTER`).
///
/// ```
/// +--------+--------+--------+------//
/// |11000000|22221111|33333322|55444444
/// +--------+--------+--------+------//
/// ```
enum DenseRegisters {
    static let offset = HyperLogLog.headerSize

    static func get(_ value: UnsafeRawBufferPointer, _ index: Int) -> UInt8 {
        let byte = offset + index * 6 / 8
        let shift = index * 6 & 7
        let low = UInt(value[byte]) >> shift
        // The last register ends inside its byte: nothing to take from beyond the value.
        let high = byte + 1 < value.count ? UInt(value[byte + 1]) << (8 - shift) : 0
        return UInt8((low | high) & 63)
    }

    static func set(_ bytes: inout [UInt8], _ index: Int, to newValue: UInt8) {
        let byte = offset + index * 6 / 8
        let shift = index * 6 & 7
        let v = UInt(newValue)
        bytes[byte] = UInt8(truncatingIfNeeded: (UInt(bytes[byte]) & ~(63 << shift)) | v << shift)
        if byte + 1 < bytes.count {
            bytes[byte + 1] = UInt8(truncatingIfNeeded: (UInt(bytes[byte + 1]) & ~(63 >> (8 - shift))) | v >> (8 - shift))
        }
    }

    /// Sets register `index` to `count` when it holds less; whether it did.
    static func raise(_ bytes: inout [UInt8], _ index: Int, to count: UInt8) -> Bool {
        let old = bytes.withUnsafeBytes { get($0, index) }
        guard count > old else { return false }
        set(&bytes, index, to: count)
        return true
    }

    /// How many registers hold each value (index: the value, 0...63).
    static func histogram(_ value: UnsafeRawBufferPointer) -> [Int] {
        var histogram = [Int](repeating: 0, count: 64)
        // Four registers in every three bytes.
        var b = offset
        for _ in 0..<(HyperLogLog.registerCount / 4) {
            let (b0, b1, b2) = (value[b], value[b + 1], value[b + 2])
            histogram[Int(b0 & 63)] += 1
            histogram[Int((b0 >> 6 | b1 << 2) & 63)] += 1
            histogram[Int((b1 >> 4 | b2 << 4) & 63)] += 1
            histogram[Int(b2 >> 2)] += 1
            b += 3
        }
        return histogram
    }
}
