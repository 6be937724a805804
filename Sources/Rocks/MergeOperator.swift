import CRocksDB
#if canImport(Glibc)
import Glibc
#endif

/// A merge operator written in Swift: RocksDB calls it to fold operands into a value at read,
/// flush and compaction time. https://github.com/facebook/rocksdb/wiki/Merge-Operator
///
/// Must be pure and thread-safe: RocksDB calls it from many threads.
public protocol MergeOperator: Sendable {
    /// Stored in the database's OPTIONS file; keep it stable across releases.
    var name: String { get }
    /// The value after applying `operands` (oldest first) to `existing` (nil when the key has
    /// no base value). Return nil to report failure (RocksDB then reports corruption).
    func fullMerge(key: UnsafeRawBufferPointer, existing: UnsafeRawBufferPointer?, operands: [UnsafeRawBufferPointer]) -> [UInt8]?
    /// One operand equivalent to `operands` applied in order, or nil when they cannot be combined.
    func partialMerge(key: UnsafeRawBufferPointer, operands: [UnsafeRawBufferPointer]) -> [UInt8]?
}

/// Owns the Swift operator and its C name for as long as RocksDB keeps the C operator.
final class MergeOperatorBox {
    let op: any MergeOperator
    let name: UnsafeMutablePointer<CChar>

    init(_ op: any MergeOperator) {
        self.op = op
        self.name = strdup(op.name)
    }

    deinit { free(name) }

    /// A C merge operator calling `op`; RocksDB owns it (through the options) and releases the
    /// box through the destructor callback.
    static func make(_ op: any MergeOperator) -> OpaquePointer {
        let state = Unmanaged.passRetained(MergeOperatorBox(op)).toOpaque()
        return rocksdb_mergeoperator_create(
            state,
            { state in Unmanaged<MergeOperatorBox>.fromOpaque(state!).release() },
            { state, key, keyLength, existing, existingLength, operands, operandLengths, count, success, newLength in
                let box = Unmanaged<MergeOperatorBox>.fromOpaque(state!).takeUnretainedValue()
                let list = buffers(operands, operandLengths, Int(count))
                let base = existing.map { UnsafeRawBufferPointer(start: $0, count: existingLength) }
                let result = box.op.fullMerge(key: UnsafeRawBufferPointer(start: key, count: keyLength), existing: base, operands: list)
                return deliver(result, success, newLength)
            },
            { state, key, keyLength, operands, operandLengths, count, success, newLength in
                let box = Unmanaged<MergeOperatorBox>.fromOpaque(state!).takeUnretainedValue()
                let list = buffers(operands, operandLengths, Int(count))
                let result = box.op.partialMerge(key: UnsafeRawBufferPointer(start: key, count: keyLength), operands: list)
                return deliver(result, success, newLength)
            },
            { _, value, _ in free(UnsafeMutableRawPointer(mutating: value)) },
            { state in UnsafePointer(Unmanaged<MergeOperatorBox>.fromOpaque(state!).takeUnretainedValue().name) }
        )
    }
}

func buffers(_ list: UnsafePointer<UnsafePointer<CChar>?>?, _ lengths: UnsafePointer<Int>?, _ count: Int) -> [UnsafeRawBufferPointer] {
    guard let list, let lengths else { return [] }
    return (0..<count).map { UnsafeRawBufferPointer(start: list[$0], count: lengths[$0]) }
}

/// Copies a result into malloc'd memory RocksDB frees through `delete_value`.
func deliver(_ result: [UInt8]?, _ success: UnsafeMutablePointer<UInt8>?, _ length: UnsafeMutablePointer<Int>?) -> UnsafeMutablePointer<CChar>? {
    guard let result else {
        success?.pointee = 0
        length?.pointee = 0
        return nil
    }
    let p = malloc(Swift.max(1, result.count))!.assumingMemoryBound(to: CChar.self)
    result.withUnsafeBytes { raw in
        if let base = raw.baseAddress { memcpy(p, base, raw.count) }
    }
    success?.pointee = 1
    length?.pointee = result.count
    return p
}
