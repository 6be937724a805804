/// A HyperLogLog as Redis 7.0 stores it in a plain string value, byte for byte
/// (hyperloglog.c), so a value written by redis-server and moved by DUMP/RESTORE counts the same
/// here, and the other way round:
///
/// ```
/// "HYLL" | encoding (0 dense, 1 sparse) | 3 reserved bytes | cached cardinality, 8 bytes LE | registers
/// ```
///
/// 16,384 registers (P = 14) of 6 bits. Dense: the registers packed LSB first (`DenseRegisters`),
/// 12,288 bytes. Sparse: run-length opcodes (`SparseRegisters`), promoted to dense when a register
/// passes 32 or the value would pass `hll-sparse-max-bytes`. The top bit of the cached
/// cardinality's last byte marks the cache stale: every change sets it, PFCOUNT of one key
/// recomputes and stores the count.
///
/// https://redis.io/docs/latest/develop/data-types/probabilistic/hyperloglogs/
struct HyperLogLog {
    /// The whole string value, header included.
    var bytes: [UInt8]

    static let registerCount = 1 << 14
    static let headerSize = 16
    static let denseSize = headerSize + (registerCount * 6 + 7) / 8
    /// Redis's `hll-sparse-max-bytes` default: the largest sparse value, header included.
    static let defaultSparseMaxBytes = 3000

    enum Encoding: UInt8 {
        case dense = 0
        case sparse = 1
    }

    /// What changing a register did.
    enum Change {
        case unchanged
        case changed
        /// The sparse opcodes do not describe 16,384 registers.
        case corrupted
    }

    static let notHyperLogLog = CommandError("WRONGTYPE", "Key is not a valid HyperLogLog string value.")
    static let corrupted = CommandError("INVALIDOBJ", "Corrupted HLL object detected")

    /// A new, empty HyperLogLog: sparse, one XZERO opcode covering every register, cached
    /// cardinality 0 (valid).
    init() {
        bytes = Array("HYLL".utf8) + [Encoding.sparse.rawValue, 0, 0, 0] + [UInt8](repeating: 0, count: 8)
        SparseRegisters.appendZeros(Self.registerCount, to: &bytes)
    }

    /// `value` as a HyperLogLog when its header says it is one: at least a header, the magic
    /// `HYLL`, a known encoding, and exactly `denseSize` bytes when dense (Redis's
    /// `isHLLObjectOrReply`). The registers are checked only when read.
    init?(_ value: [UInt8]) {
        guard value.withUnsafeBytes(Self.isValid) else { return nil }
        bytes = value
    }

    static func isValid(_ value: UnsafeRawBufferPointer) -> Bool {
        guard value.count >= headerSize,
              value[0] == UInt8(ascii: "H"), value[1] == UInt8(ascii: "Y"),
              value[2] == UInt8(ascii: "L"), value[3] == UInt8(ascii: "L"),
              let encoding = Encoding(rawValue: value[4])
        else { return false }
        return encoding == .sparse || value.count == denseSize
    }

    static func encoding(of value: UnsafeRawBufferPointer) -> Encoding { Encoding(rawValue: value[4])! }

    var encoding: Encoding { Encoding(rawValue: bytes[4])! }

    /// The cached cardinality, or nil when a change made it stale.
    static func cachedCardinality(of value: UnsafeRawBufferPointer) -> UInt64? {
        guard value[15] & 0x80 == 0 else { return nil }
        var card: UInt64 = 0
        for i in (8..<16).reversed() { card = card << 8 | UInt64(value[i]) }
        return card
    }

    mutating func cache(cardinality card: UInt64) {
        for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: card >> (8 * i)) }
    }

    mutating func invalidateCache() { bytes[15] |= 0x80 }

    /// Adds `element`: raises the register its hash picks to the length of the hash's run of
    /// zeros (`HyperLogLogHash`). May promote a sparse value to dense.
    mutating func add(_ element: [UInt8], sparseMaxBytes: Int) -> Change {
        let (index, count) = element.withUnsafeBytes(HyperLogLogHash.registerAndCount)
        return raise(index, to: count, sparseMaxBytes: sparseMaxBytes)
    }

    /// Sets register `index` to `count` when it holds less.
    mutating func raise(_ index: Int, to count: UInt8, sparseMaxBytes: Int) -> Change {
        switch encoding {
        case .dense:
            return DenseRegisters.raise(&bytes, index, to: count) ? .changed : .unchanged
        case .sparse:
            switch SparseRegisters.raise(&bytes, index, to: count, maxBytes: sparseMaxBytes) {
            case .unchanged: return .unchanged
            case .changed: return .changed
            case .corrupted: return .corrupted
            case .needsDense:
                guard makeDense() else { return .corrupted }
                _ = DenseRegisters.raise(&bytes, index, to: count)
                return .changed
            }
        }
    }

    /// Converts a sparse value to dense (the header kept but for its encoding); false, and
    /// nothing changed, when the opcodes are corrupt. A dense value is left as it is.
    mutating func makeDense() -> Bool {
        guard encoding == .sparse else { return true }
        var dense = [UInt8](repeating: 0, count: Self.denseSize)
        dense.replaceSubrange(0..<Self.headerSize, with: bytes[0..<Self.headerSize])
        dense[4] = Encoding.dense.rawValue
        let valid = bytes.withUnsafeBytes { raw in
            SparseRegisters.forEachRun(raw) { first, length, value in
                guard value > 0 else { return }
                for i in first..<(first + length) { DenseRegisters.set(&dense, i, to: value) }
            }
        }
        guard valid else { return false }
        bytes = dense
        return true
    }

    /// How many values each register holds (index: a register's value, up to 63), or nil
    /// when the sparse opcodes are corrupt.
    static func histogram(of value: UnsafeRawBufferPointer) -> [Int]? {
        switch encoding(of: value) {
        case .dense:
            return DenseRegisters.histogram(value)
        case .sparse:
            var histogram = [Int](repeating: 0, count: 64)
            let valid = SparseRegisters.forEachRun(value) { _, length, value in histogram[Int(value)] += length }
            return valid ? histogram : nil
        }
    }

    /// Raises each of `registers` (16,384 bytes, one a register) to this value's register
    /// when that is greater; false when the sparse opcodes are corrupt.
    static func merge(_ value: UnsafeRawBufferPointer, into registers: inout [UInt8]) -> Bool {
        switch encoding(of: value) {
        case .dense:
            for i in 0..<registerCount {
                let v = DenseRegisters.get(value, i)
                if v > registers[i] { registers[i] = v }
            }
            return true
        case .sparse:
            return SparseRegisters.forEachRun(value) { first, length, value in
                for i in first..<(first + length) where value > registers[i] { registers[i] = value }
            }
        }
    }
}
