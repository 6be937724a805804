/// Integers as big-endian bytes, as keys, metadata, values and DUMP payloads store them: for
/// unsigned integers byte order is number order, so RocksDB's bytewise comparator sorts them as
/// numbers. A signed integer is stored as its two's-complement bits (the same bytes as its
/// `bitPattern`); an encoding that must sort signed numbers flips bits itself first (see
/// `MemberKeys.orderedScore`).
enum BigEndian {
    @inline(__always)
    static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// Calls `body` with the value's bytes, from the stack (nothing allocated).
    @inline(__always)
    static func withBytes<T: FixedWidthInteger, R>(of value: T, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: value.bigEndian, body)
    }

    /// The integer in the first `T.bitWidth / 8` bytes of `bytes` (the caller checked the length).
    @inline(__always)
    static func read<T: FixedWidthInteger>(_: T.Type, _ bytes: some Sequence<UInt8>) -> T {
        var v: T = 0
        for b in bytes.prefix(T.bitWidth / 8) { v = v << 8 | T(truncatingIfNeeded: b) }
        return v
    }

    /// The integer in the `T.bitWidth / 8` bytes of `raw` from `offset` (the caller checked the
    /// length): one unaligned load.
    @inline(__always)
    static func read<T: FixedWidthInteger & BitwiseCopyable>(_: T.Type, _ raw: UnsafeRawBufferPointer, at offset: Int) -> T {
        T(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
