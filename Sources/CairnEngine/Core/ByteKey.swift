/// Bytes used as a dictionary or set key, hashed in one call.
///
/// `[UInt8]`'s own `Hashable` feeds the hasher one byte at a time (`Hasher._combine(UInt8)` per
/// byte): keying the transaction overlay and the grouped counters by raw keys cost several
/// thousand instructions per INCR or HSET (scripts/profile). This hashes the bytes as one
/// buffer; equality is the array's.
struct ByteKey: Hashable {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
