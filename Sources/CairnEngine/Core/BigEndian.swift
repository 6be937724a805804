/// Integers as big-endian bytes, as keys, metadata and values store them: byte order is number
/// order, so RocksDB's bytewise comparator sorts them as numbers.
enum BigEndian {
    @inline(__always)
    static func append<T: FixedWidthInteger & UnsignedInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func bytes<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// The integer in the first `T.bitWidth / 8` bytes of `bytes` (the caller checked the length).
    @inline(__always)
    static func read<T: FixedWidthInteger & UnsignedInteger>(_: T.Type, _ bytes: some Sequence<UInt8>) -> T {
        var v: T = 0
        for b in bytes.prefix(T.bitWidth / 8) { v = v << 8 | T(b) }
        return v
    }
}
