import CRocksDB

/// Calls a RocksDB function that reports failure through `errptr`, always passing a valid
/// pointer (Debian's build asserts on a null one), and turns the message into a
/// `StorageError`, freeing it with `rocksdb_free`.
@inline(__always)
func rocksCall<T>(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) throws -> T) throws -> T {
    var err: UnsafeMutablePointer<CChar>? = nil
    let result = try body(&err)
    if let err {
        let text = String(cString: err)
        rocksdb_free(err)
        throw StorageError(status: text)
    }
    return result
}

extension Array where Element == UInt8 {
    /// Passes the bytes as `const char*` and length (a valid pointer even when empty).
    @inline(__always)
    func withChars<R>(_ body: (UnsafePointer<CChar>, Int) throws -> R) rethrows -> R {
        try withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress {
                return try base.withMemoryRebound(to: CChar.self, capacity: Swift.max(1, buffer.count)) { try body($0, buffer.count) }
            }
            var zero: CChar = 0
            return try body(&zero, 0)
        }
    }
}
