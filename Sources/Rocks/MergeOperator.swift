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

/// Merge operators on plain values.
public enum MergeOperators {
    /// Decimal Int64 text, the form Redis INCR keeps ("-12"). Operands that are not integers
    /// are skipped; a base value that is not an integer is kept unchanged; overflow saturates.
    public static let add: any MergeOperator = Builtin(kind: .add)
    /// Concatenation, oldest operand first.
    public static let append: any MergeOperator = Builtin(kind: .append)
    /// The greater value: numerically when both parse as numbers, else bytewise.
    public static let max: any MergeOperator = Builtin(kind: .max)
    /// The smaller value, compared as `max` compares.
    public static let min: any MergeOperator = Builtin(kind: .min)

    public static func named(_ name: String) -> (any MergeOperator)? {
        switch name.lowercased() {
        case "add": add
        case "append": append
        case "max": max
        case "min": min
        default: nil
        }
    }

    struct Builtin: MergeOperator {
        enum Kind: String, Sendable { case add, append, max, min }
        let kind: Kind
        var name: String { "rocks.\(kind.rawValue)" }

        func fullMerge(key: UnsafeRawBufferPointer, existing: UnsafeRawBufferPointer?, operands: [UnsafeRawBufferPointer]) -> [UInt8]? {
            var current = existing.map { Array($0) }
            for operand in operands { current = apply(current, operand) }
            return current ?? []
        }

        func partialMerge(key: UnsafeRawBufferPointer, operands: [UnsafeRawBufferPointer]) -> [UInt8]? {
            if kind == .add && operands.contains(where: { Integer.parse($0) == nil }) { return nil }
            var current: [UInt8]? = nil
            for operand in operands { current = apply(current, operand) }
            return current
        }

        func apply(_ current: [UInt8]?, _ operand: UnsafeRawBufferPointer) -> [UInt8] {
            guard let current else {
                if kind == .add { return Integer.parse(operand) == nil ? [UInt8(ascii: "0")] : Array(operand) }
                return Array(operand)
            }
            switch kind {
            case .append:
                return current + operand
            case .add:
                guard let delta = Integer.parse(operand) else { return current }
                guard let base = current.withUnsafeBytes({ Integer.parse($0) }) else { return current }
                let (sum, overflow) = base.addingReportingOverflow(delta)
                return Array(String(overflow ? (delta > 0 ? Int64.max : Int64.min) : sum).utf8)
            case .max, .min:
                let a = Double(String(decoding: current, as: UTF8.self))
                let b = Double(String(decoding: operand, as: UTF8.self))
                let operandWins: Bool
                if let a, let b {
                    operandWins = kind == .max ? b > a : b < a
                } else {
                    operandWins = kind == .max ? current.lexicographicallyPrecedes(operand) : operand.lexicographicallyPrecedes(current)
                }
                return operandWins ? Array(operand) : current
            }
        }
    }
}

/// Strict decimal Int64 parsing (no spaces, no '+', no leading zeros), as Redis's string2ll.
enum Integer {
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let v = Int64(text), String(v) == text else { return nil }
        return v
    }
}
