public import Rocks

/// The one merge operator every column family is opened with.
///
/// Each operand carries its operation in its first byte (`MergeKind`), so a family's operator
/// need not be known when the database opens, and INCR on an `add` family can merge too.
/// The existing value is in Cairn's value format (`ValueFormat`); its expiry is kept unless it
/// has already passed, in which case the merge starts from nothing, as Redis's INCR does on an
/// expired key.
public struct EngineMergeOperator: MergeOperator {
    public var name: String { "cairn.merge.v1" }
    let clock: @Sendable () -> Int64

    public init(clock: @escaping @Sendable () -> Int64 = Clock.milliseconds) { self.clock = clock }

    public func fullMerge(
        key: UnsafeRawBufferPointer, existing: UnsafeRawBufferPointer?, operands: [UnsafeRawBufferPointer]
    ) -> [UInt8]? {
        var expiresAt: Int64? = nil
        var base: UnsafeRawBufferPointer? = nil
        if let existing, let header = ValueFormat.header(of: existing), !header.isExpired(now: clock()) {
            // MERGE does not read, so it can reach a hash, set, sorted set or list: those stay
            // as they are (docs/commands.md).
            if header.type != ValueFormat.stringType { return Array(existing) }
            expiresAt = header.expiresAt
            base = UnsafeRawBufferPointer(rebasing: existing[header.payloadOffset...])
        }
        // Only appends (a value grown by APPEND): the result is written once, at its final size,
        // instead of growing an array and copying it into the value format after.
        if operands.allSatisfy({ $0.first == MergeKind.append.rawValue }) {
            var out: [UInt8] = []
            out.reserveCapacity(16 + (base?.count ?? 0) + operands.reduce(0) { $0 + $1.count - 1 })
            ValueFormat.appendHeader(to: &out, type: ValueFormat.stringType, expiresAt: expiresAt)
            if let base { out.append(contentsOf: base) }
            for operand in operands { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: operand[1...])) }
            return out
        }
        var current = base.map { Array($0) }
        for operand in operands {
            guard let kind = operand.first.flatMap(MergeKind.init(rawValue:)) else { continue }
            let payload = UnsafeRawBufferPointer(rebasing: operand[1...])
            kind.apply(to: &current, payload)
        }
        return ValueFormat.encode(current ?? [], expiresAt: expiresAt)
    }

    public func partialMerge(key: UnsafeRawBufferPointer, operands: [UnsafeRawBufferPointer]) -> [UInt8]? {
        guard let first = operands.first?.first, let kind = MergeKind(rawValue: first),
              operands.allSatisfy({ $0.first == first })
        else { return nil }
        // `add` of two numbers is a number; append, max and min combine the same way.
        var combined: [UInt8]? = nil
        for operand in operands {
            let payload = UnsafeRawBufferPointer(rebasing: operand[1...])
            if combined == nil {
                combined = Array(payload)
                if kind == .add && Bytes.int64(payload) == nil { return nil }
            } else {
                if kind == .add && Bytes.int64(payload) == nil { return nil }
                kind.apply(to: &combined, payload)
            }
        }
        return [first] + (combined ?? [])
    }
}

/// The operation an operand asks for; its raw value is the operand's first byte.
public enum MergeKind: UInt8, Sendable, CaseIterable {
    case add = 1, append = 2, max = 3, min = 4

    public init?(name: String) {
        switch name.lowercased() {
        case "add": self = .add
        case "append": self = .append
        case "max": self = .max
        case "min": self = .min
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .add: "add"
        case .append: "append"
        case .max: "max"
        case .min: "min"
        }
    }

    /// An operand for this operation.
    public func operand(_ payload: [UInt8]) -> [UInt8] { [rawValue] + payload }

    /// Applies one operand to a current payload (nil = no value yet), in place: appends grow
    /// the payload without copying it, so folding many APPEND operands stays linear.
    func apply(to current: inout [UInt8]?, _ operand: UnsafeRawBufferPointer) {
        if self == .append {
            if current == nil { current = [] }
            current!.append(contentsOf: operand)
        } else {
            current = apply(current, operand)
        }
    }

    /// Applies one operand to a current payload (nil = no value yet).
    func apply(_ current: [UInt8]?, _ operand: UnsafeRawBufferPointer) -> [UInt8] {
        switch self {
        case .append:
            return (current ?? []) + operand
        case .add:
            guard let delta = Bytes.int64(operand) else { return current ?? [] }
            guard let current else { return Array(operand) }
            guard let base = Bytes.int64(current) else { return current }
            let (sum, overflow) = base.addingReportingOverflow(delta)
            return Bytes.decimal(overflow ? (delta > 0 ? Int64.max : Int64.min) : sum)
        case .max, .min:
            guard let current else { return Array(operand) }
            let wantGreater = self == .max
            if let a = Bytes.double(current), let b = Bytes.double(operand) {
                return (wantGreater ? b > a : b < a) ? Array(operand) : current
            }
            let operandGreater = current.lexicographicallyPrecedes(operand)
            let operandLess = operand.lexicographicallyPrecedes(current)
            return (wantGreater ? operandGreater : operandLess) ? Array(operand) : current
        }
    }
}

/// Drops values whose expiry has passed when compaction meets them, so space comes back
/// without anyone running COMPACT.
public struct ExpiryCompactionFilter: CompactionFilter {
    public var name: String { "cairn.expiry.v1" }
    let clock: @Sendable () -> Int64
    /// Counts drops (`expired_values_compacted`): an upper bound on keys expired this way, as a
    /// value whose key the sweep already deleted may still pass through a later compaction.
    let stats: EngineStats?

    public init(clock: @escaping @Sendable () -> Int64 = Clock.milliseconds, stats: EngineStats? = nil) {
        self.clock = clock
        self.stats = stats
    }

    /// `.remove` turns the entry into a tombstone (RocksDB's CompactionIterator), so an older
    /// version of the key in a lower level cannot resurface.
    public func filter(level: Int, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> CompactionDecision {
        if let header = ValueFormat.header(of: value), header.isExpired(now: clock()) {
            stats?.expiredValuesCompacted.increment()
            return .remove
        }
        return .keep
    }
}
