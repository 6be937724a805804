/// A request's command name of at most 15 bytes, lower-cased and packed with its length into two
/// words: the command table finds a command by it without building and hashing a `String` for
/// every request (`CommandTable.command(named:)`). Longer names take the `String` path.
struct CommandName: Hashable {
    private let low: UInt64
    private let high: UInt64

    /// The longest name packed; the last byte holds the length.
    static let maxBytes = 15

    /// Nil when `bytes` is longer than `maxBytes`. ASCII letters are lower-cased
    /// (`Bytes.lowercased`, as the `String` path does); the length is packed too, so a name with NUL bytes after it
    /// ("get\0") is not the shorter one.
    @inline(__always)
    init?(lowercasing bytes: [UInt8]) {
        guard bytes.count <= Self.maxBytes else { return nil }
        var low: UInt64 = 0
        var high = UInt64(bytes.count) << 56
        bytes.withUnsafeBufferPointer { b in
            for i in 0..<b.count {
                let c = Bytes.lowercased(b[i])
                if i < 8 { low |= UInt64(c) << (8 * UInt64(i)) } else { high |= UInt64(c) << (8 * UInt64(i - 8)) }
            }
        }
        self.low = low
        self.high = high
    }
}
