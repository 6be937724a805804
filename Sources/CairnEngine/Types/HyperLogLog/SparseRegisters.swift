/// The sparse encoding: the registers as runs, in opcodes after the header (hyperloglog.c):
///
/// - ZERO `00xxxxxx`: 1 to 64 registers at 0.
/// - XZERO `01xxxxxx yyyyyyyy`: 1 to 16,384 registers at 0 (14 bits of length).
/// - VAL `1vvvvvxx`: 1 to 4 registers at 1 to 32.
///
/// Changes follow Redis's steps exactly (which opcode splits into which, which neighbours merge
/// afterwards), so the bytes after a PFADD equal redis-server's.
enum SparseRegisters {
    static let zeroMaxLength = 64
    static let xzeroMaxLength = 16384
    static let valMaxValue: UInt8 = 32
    static let valMaxLength = 4

    static func isZero(_ op: UInt8) -> Bool { op & 0xc0 == 0 }
    static func isXZero(_ op: UInt8) -> Bool { op & 0xc0 == 0x40 }
    static func isVal(_ op: UInt8) -> Bool { op & 0x80 != 0 }
    static func zeroLength(_ op: UInt8) -> Int { Int(op & 0x3f) + 1 }
    static func xzeroLength(_ op: UInt8, _ next: UInt8) -> Int { (Int(op & 0x3f) << 8 | Int(next)) + 1 }
    static func valValue(_ op: UInt8) -> UInt8 { (op >> 2 & 0x1f) + 1 }
    static func valLength(_ op: UInt8) -> Int { Int(op & 0x3) + 1 }

    static func val(_ value: UInt8, _ length: Int) -> UInt8 { (value - 1) << 2 | UInt8(length - 1) | 0x80 }
    static func zero(_ length: Int) -> UInt8 { UInt8(length - 1) }
    static func xzero(_ length: Int) -> [UInt8] { [UInt8((length - 1) >> 8) | 0x40, UInt8((length - 1) & 0xff)] }

    /// Appends opcodes for `count` registers at 0: XZERO opcodes, as a new value has.
    static func appendZeros(_ count: Int, to bytes: inout [UInt8]) {
        var left = count
        while left > 0 {
            let n = min(left, xzeroMaxLength)
            bytes += xzero(n)
            left -= n
        }
    }

    /// The byte at `i`, or 0 past the end: an XZERO cut short by the end of a corrupt value
    /// reads a zero there, as Redis reads its string's terminator.
    private static func byte(_ value: UnsafeRawBufferPointer, _ i: Int) -> UInt8 { i < value.count ? value[i] : 0 }
    private static func byte(_ bytes: [UInt8], _ i: Int) -> UInt8 { i < bytes.count ? bytes[i] : 0 }

    /// Calls `body` with each run (first register, length, value) of the sparse `value`; false
    /// when the runs pass register 16,383 or stop before it (a corrupt value). Runs before the
    /// fault have been visited.
    static func forEachRun(_ value: UnsafeRawBufferPointer, _ body: (Int, Int, UInt8) -> Void) -> Bool {
        var p = HyperLogLog.headerSize
        var index = 0
        while p < value.count {
            let op = value[p]
            let length: Int, v: UInt8
            if isZero(op) {
                (length, v) = (zeroLength(op), 0)
                p += 1
            } else if isXZero(op) {
                (length, v) = (xzeroLength(op, byte(value, p + 1)), 0)
                p += 2
            } else {
                (length, v) = (valLength(op), valValue(op))
                p += 1
            }
            guard index + length <= HyperLogLog.registerCount else { return false }
            body(index, length, v)
            index += length
        }
        return index == HyperLogLog.registerCount
    }

    enum Raise {
        case unchanged
        case changed
        case corrupted
        /// The register's new value, or the value grown by the change, does not fit the
        /// sparse encoding: promote to dense, then set the register (nothing changed yet).
        case needsDense
    }

    /// Sets register `index` of the sparse value `bytes` to `count` when it holds less
    /// (Redis's `hllSparseSet`): the opcode covering it is updated in place or split, and
    /// equal VAL opcodes around it merged. Invalidates the cached cardinality on a change.
    static func raise(_ bytes: inout [UInt8], _ index: Int, to count: UInt8, maxBytes: Int) -> Raise {
        if count > valMaxValue { return .needsDense }

        // Step 1: the opcode covering `index`, its first register, and the opcode before it.
        var p = HyperLogLog.headerSize
        var first = 0, span = 0
        var previous: Int? = nil
        while p < bytes.count {
            let op = bytes[p]
            var length = 1
            if isZero(op) {
                span = zeroLength(op)
            } else if isVal(op) {
                span = valLength(op)
            } else {
                span = xzeroLength(op, byte(bytes, p + 1))
                length = 2
            }
            if index <= first + span - 1 { break }
            previous = p
            p += length
            first += span
        }
        if span == 0 || p >= bytes.count { return .corrupted }

        let op = bytes[p]
        let runLength = isZero(op) ? zeroLength(op) : isXZero(op) ? span : valLength(op)
        updated: do {
            // A VAL at `count` or more: nothing to do. A VAL or ZERO of one register: rewrite it.
            if isVal(op) {
                if valValue(op) >= count { return .unchanged }
                if runLength == 1 {
                    bytes[p] = val(count, 1)
                    break updated
                }
            }
            if isZero(op) && runLength == 1 {
                bytes[p] = val(count, 1)
                break updated
            }

            // Otherwise split the opcode around the register: up to XZERO-VAL-XZERO.
            let last = first + span - 1
            var sequence: [UInt8] = []
            if isVal(op) {
                let current = valValue(op)
                if index != first { sequence.append(val(current, index - first)) }
                sequence.append(val(count, 1))
                if index != last { sequence.append(val(current, last - index)) }
            } else {
                func zeros(_ n: Int) { if n > zeroMaxLength { sequence += xzero(n) } else { sequence.append(zero(n)) } }
                if index != first { zeros(index - first) }
                sequence.append(val(count, 1))
                if index != last { zeros(last - index) }
            }
            let oldLength = isXZero(op) ? 2 : 1
            let delta = sequence.count - oldLength
            if delta > 0 && bytes.count + delta > maxBytes { return .needsDense }
            // The value grows by `delta` (an XZERO cut short by the end loses its last byte
            // again, as in Redis).
            let newCount = bytes.count + delta
            var spliced = Array(bytes[..<p]) + sequence
            if p + oldLength < bytes.count { spliced += bytes[(p + oldLength)...] }
            bytes = Array(spliced.prefix(newCount))
        }

        // Step 4: merge adjacent VAL opcodes of equal value, scanning up to five opcodes from
        // the one before the change.
        var q = previous ?? HyperLogLog.headerSize
        var scans = 5
        while q < bytes.count && scans > 0 {
            scans -= 1
            let op = bytes[q]
            if isXZero(op) {
                q += 2
                continue
            } else if isZero(op) {
                q += 1
                continue
            }
            if q + 1 < bytes.count && isVal(bytes[q + 1]) {
                let (v1, v2) = (valValue(op), valValue(bytes[q + 1]))
                let length = valLength(op) + valLength(bytes[q + 1])
                if v1 == v2 && length <= valMaxLength {
                    bytes[q + 1] = val(v1, length)
                    bytes.remove(at: q)
                    // Try the merged opcode with the one on its right.
                    continue
                }
            }
            q += 1
        }
        bytes[15] |= 0x80
        return .changed
    }

    /// The opcodes as PFDEBUG DECODE shows them: `z:<length>` (ZERO), `Z:<length>` (XZERO),
    /// `v:<value>,<length>` (VAL), separated by spaces.
    static func decode(_ bytes: [UInt8]) -> String {
        var parts: [String] = []
        var p = HyperLogLog.headerSize
        while p < bytes.count {
            let op = bytes[p]
            if isZero(op) {
                parts.append("z:\(zeroLength(op))")
                p += 1
            } else if isXZero(op) {
                parts.append("Z:\(xzeroLength(op, byte(bytes, p + 1)))")
                p += 2
            } else {
                parts.append("v:\(valValue(op)),\(valLength(op))")
                p += 1
            }
        }
        return parts.joined(separator: " ")
    }
}
