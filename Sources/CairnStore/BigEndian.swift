/// Integers as big-endian bytes, as index keys and body headers store them: for unsigned integers
/// byte order is number order, so the server's bytewise key order sorts them as numbers (a signed
/// key flips its sign bit first, `Int.appendKey`). The engine keeps its own codec of the same
/// shape (CairnEngine's `BigEndian`); the store is a client-side library that does not depend on
/// the engine.
enum BigEndian {
    @inline(__always)
    static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    /// The integer in the first `T.bitWidth / 8` bytes of `bytes` (the caller checked the length).
    @inline(__always)
    static func read<T: FixedWidthInteger>(_: T.Type, _ bytes: some Sequence<UInt8>) -> T {
        var v: T = 0
        for b in bytes.prefix(T.bitWidth / 8) { v = v << 8 | T(truncatingIfNeeded: b) }
        return v
    }
}
