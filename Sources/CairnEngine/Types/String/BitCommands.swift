import RESP

/// Bit commands on strings: GETBIT SETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO.
/// https://redis.io/docs/latest/commands/?group=bitmap
///
/// Bit 0 is the most significant bit of the first byte, as in Redis. Offsets are limited as
/// Redis limits them: the byte they fall in must be below `proto-max-bulk-len` (512 MB by
/// default); a write that grows a string also stays within `max-value-size`. Values are read
/// and written only through the `Call` helpers (`read`, `write`, `locked`), so expiry, EXEC's
/// overlay and type checks apply here as for every string command. Writes keep the key's TTL
/// (BITOP's destination is a new value, without one). Argument checks follow Redis 7.0,
/// including its order (BITCOUNT and BITPOS answer a missing key before parsing the range).
enum BitCommands {
    static let all: [Command] = [
        Command("getbit") { call, out throws(CommandError) in
            let offset = try bitOffset(call, call[2])
            let value = try call.read(call[1])?.payload ?? []
            out.integer(bit(value, offset))
        },
        Command("setbit") { call, out throws(CommandError) in
            let offset = try bitOffset(call, call[2])
            guard call[3] == [UInt8(ascii: "0")] || call[3] == [UInt8(ascii: "1")] else {
                throw CommandError("ERR", "bit is not an integer or out of range")
            }
            let on = call[3][0] == UInt8(ascii: "1")
            let old = try call.locked(call[1]) { () throws(CommandError) -> Int in
                let stored = try call.read(call[1])
                var value = stored?.payload ?? []
                let needed = offset / 8 + 1
                if value.count < needed {
                    try call.checkSize(needed)
                    Bytes.zeroExtend(&value, to: needed)
                }
                let previous = bit(value, offset)
                let mask = UInt8(0x80) >> UInt8(offset % 8)
                if on { value[offset / 8] |= mask } else { value[offset / 8] &= ~mask }
                try call.write(call[1], value, expiresAt: stored?.expiresAt)
                call.notify(.string, "setbit", call[1])
                return previous
            }
            out.integer(old)
        },
        Command("bitcount", handler: bitcount),
        Command("bitpos", handler: bitpos),
        Command("bitop", handler: bitop),
        Command("bitfield") {
            call, out throws(CommandError) in try bitfield(call, &out, readOnly: false)
        },
        Command("bitfield_ro") { call, out throws(CommandError) in
            try bitfield(call, &out, readOnly: true)
        },
    ]

    static let offsetError = CommandError("ERR", "bit offset is not an integer or out of range")

    /// A bit offset as Redis's `getBitOffsetFromArgument`: `#N` (BITFIELD) means N times the
    /// field's width; the byte it falls in must be below `proto-max-bulk-len`.
    static func bitOffset(_ call: Call, _ arg: [UInt8], fieldWidth: Int? = nil) throws(CommandError) -> Int {
        var digits = arg[...]
        var multiplier = 1
        if let width = fieldWidth, digits.first == UInt8(ascii: "#") {
            digits = digits.dropFirst()
            multiplier = width
        }
        guard let n = Bytes.int64(digits), n >= 0 else { throw offsetError }
        let (offset, overflow) = n.multipliedReportingOverflow(by: Int64(multiplier))
        guard !overflow, offset >> 3 < Int64(call.engine.configuration.protoMaxBulkLen) else { throw offsetError }
        return Int(offset)
    }

    @inline(__always)
    static func bit(_ value: [UInt8], _ offset: Int) -> Int {
        let byte = offset / 8
        guard byte < value.count else { return 0 }
        return Int(value[byte] >> UInt8(7 - offset % 8)) & 1
    }

    /// A range given as start/end (negative from the end) in bytes or bits, clamped as Redis
    /// clamps it: the inclusive bit range it covers, or nil when empty.
    static func bitRange(start: Int64, end: Int64, bits: Bool, length: Int) -> ClosedRange<Int>? {
        let total = Int64(bits ? length * 8 : length)
        var s = start, e = end
        if s < 0 { s += total }
        if e < 0 { e += total }
        s = max(s, 0)
        e = max(e, 0)
        e = min(e, total - 1)
        guard s <= e else { return nil }
        return bits ? Int(s)...Int(e) : Int(s) * 8...Int(e) * 8 + 7
    }

    static func unit(_ call: Call, _ i: Int) throws(CommandError) -> Bool {
        if call[i].isKeyword("BIT") { return true }
        if call[i].isKeyword("BYTE") { return false }
        throw .syntax
    }

    static func bitcount(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard let value = try call.read(call[1])?.payload else {
            out.integer(0)
            return
        }
        var range: ClosedRange<Int>? = value.isEmpty ? nil : 0...value.count * 8 - 1
        if call.count == 4 || call.count == 5 {
            let start = try call.integer(2), end = try call.integer(3)
            let bits = call.count == 5 ? try unit(call, 4) : false
            if start < 0 && end < 0 && start > end {
                out.integer(0)
                return
            }
            range = bitRange(start: start, end: end, bits: bits, length: value.count)
        } else if call.count != 2 {
            throw .syntax
        }
        guard let range else {
            out.integer(0)
            return
        }
        var count = 0
        var i = range.lowerBound
        // Whole bytes by popcount, the partial bytes at the edges bit by bit.
        while i <= range.upperBound {
            if i % 8 == 0 && i + 7 <= range.upperBound {
                count += value[i / 8].nonzeroBitCount
                i += 8
            } else {
                count += bit(value, i)
                i += 1
            }
        }
        out.integer(count)
    }

    static func bitpos(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        guard let wanted = Bytes.int64(call[2]) else { throw .notInteger }
        guard wanted == 0 || wanted == 1 else { throw CommandError("ERR", "The bit argument must be 1 or 0.") }
        guard let value = try call.read(call[1])?.payload else {
            out.integer(wanted == 1 ? -1 : 0)
            return
        }
        var range: ClosedRange<Int>?
        var endGiven = false
        if call.count >= 4 && call.count <= 6 {
            let start = try call.integer(3)
            let bits = call.count == 6 ? try unit(call, 5) : false
            var end = Int64(bits ? value.count * 8 - 1 : value.count - 1)
            if call.count >= 5 {
                end = try call.integer(4)
                endGiven = true
            }
            range = bitRange(start: start, end: end, bits: bits, length: value.count)
        } else if call.count == 3 {
            range = value.isEmpty ? nil : 0...value.count * 8 - 1
        } else {
            throw .syntax
        }
        guard let range else {
            out.integer(-1)
            return
        }
        let target = Int(wanted)
        var i = range.lowerBound
        while i <= range.upperBound {
            // Skip whole bytes that cannot hold the bit sought.
            if i % 8 == 0 && i + 7 <= range.upperBound && value[i / 8] == (target == 1 ? 0 : 0xFF) {
                i += 8
                continue
            }
            if bit(value, i) == target {
                out.integer(i)
                return
            }
            i += 1
        }
        // Looking for a 0 with no end given: the string reads as padded with zeros after it.
        out.integer(target == 0 && !endGiven ? range.upperBound + 1 : -1)
    }

    static func bitop(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        enum Op { case and, or, xor, not }
        let op: Op
        if call[1].isKeyword("AND") { op = .and }
        else if call[1].isKeyword("OR") { op = .or }
        else if call[1].isKeyword("XOR") { op = .xor }
        else if call[1].isKeyword("NOT") { op = .not }
        else { throw .syntax }
        if op == .not && call.count != 4 {
            throw CommandError("ERR", "BITOP NOT must be called with a single source key.")
        }
        let destination = call[2]
        let sources = Array(call.argv[3...])
        let length = try call.locked([destination] + sources) { () throws(CommandError) -> Int in
            var values: [[UInt8]] = []
            for key in sources { values.append(try call.read(key)?.payload ?? []) }
            let length = values.map(\.count).max() ?? 0
            guard length > 0 else {
                if try call.exists(destination) {
                    try call.remove(destination)
                    call.notify(.generic, "del", destination)
                }
                return 0
            }
            var result = [UInt8](repeating: 0, count: length)
            if op == .not {
                for i in 0..<length { result[i] = ~values[0][i] }
            } else {
                // A shorter (or missing) source reads as zero bytes past its end.
                for i in 0..<length {
                    var acc = i < values[0].count ? values[0][i] : 0
                    for v in values.dropFirst() {
                        let b = i < v.count ? v[i] : 0
                        switch op {
                        case .and: acc &= b
                        case .or: acc |= b
                        case .xor: acc ^= b
                        case .not: break
                        }
                    }
                    result[i] = acc
                }
            }
            try call.write(destination, result)
            call.notify(.string, "set", destination)
            return length
        }
        out.integer(length)
    }

    // MARK: BITFIELD

    enum Overflow { case wrap, sat, fail }

    struct FieldOp {
        enum Kind { case get, set, incrby }
        var kind: Kind
        var signed: Bool
        var bits: Int
        var offset: Int
        var value: Int64
        var overflow: Overflow
    }

    static func fieldType(_ arg: [UInt8]) throws(CommandError) -> (signed: Bool, bits: Int) {
        let invalid = CommandError("ERR", "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
        guard let first = arg.first, first == UInt8(ascii: "i") || first == UInt8(ascii: "u"),
              let n = Bytes.int64(arg.dropFirst()) else { throw invalid }
        let signed = first == UInt8(ascii: "i")
        guard n >= 1 && n <= (signed ? 64 : 63) else { throw invalid }
        return (signed, Int(n))
    }

    static func bitfield(_ call: Call, _ out: inout RESPWriter, readOnly: Bool) throws(CommandError) {
        // Every operation is parsed before any runs, so a bad one changes nothing.
        var ops: [FieldOp] = []
        var overflow = Overflow.wrap
        var i = 2
        while i < call.count {
            let remaining = call.count - i - 1
            let word = call[i]
            if word.isKeyword("GET") && remaining >= 2 {
                let t = try fieldType(call[i + 1])
                let offset = try bitOffset(call, call[i + 2], fieldWidth: t.bits)
                ops.append(FieldOp(kind: .get, signed: t.signed, bits: t.bits, offset: offset, value: 0, overflow: overflow))
                i += 3
            } else if (word.isKeyword("SET") || word.isKeyword("INCRBY")) && remaining >= 3 {
                let t = try fieldType(call[i + 1])
                let offset = try bitOffset(call, call[i + 2], fieldWidth: t.bits)
                let value = try call.integer(i + 3)
                ops.append(FieldOp(kind: word.isKeyword("SET") ? .set : .incrby, signed: t.signed, bits: t.bits,
                                   offset: offset, value: value, overflow: overflow))
                i += 4
            } else if word.isKeyword("OVERFLOW") && remaining >= 1 {
                if call[i + 1].isKeyword("WRAP") { overflow = .wrap }
                else if call[i + 1].isKeyword("SAT") { overflow = .sat }
                else if call[i + 1].isKeyword("FAIL") { overflow = .fail }
                else { throw CommandError("ERR", "Invalid OVERFLOW type specified") }
                i += 2
            } else {
                throw .syntax
            }
        }
        let writes = ops.contains { $0.kind != .get }
        // After parsing, as Redis: a bad argument is reported before the read-only refusal.
        if readOnly && writes { throw CommandError("ERR", "BITFIELD_RO only supports the GET subcommand") }
        guard writes else {
            let value = try call.read(call[1])?.payload ?? []
            out.arrayHeader(ops.count)
            for op in ops { out.integer(read(value, op)) }
            return
        }
        let replies = try call.locked(call[1]) { () throws(CommandError) -> [Int64?] in
            let stored = try call.read(call[1])
            var value = stored?.payload ?? []
            let needed = ops.filter { $0.kind != .get }.map { ($0.offset + $0.bits + 7) / 8 }.max() ?? 0
            if value.count < needed {
                try call.checkSize(needed)
                Bytes.zeroExtend(&value, to: needed)
            }
            var replies: [Int64?] = []
            var changes = 0
            for op in ops {
                let old = read(value, op)
                switch op.kind {
                case .get:
                    replies.append(old)
                case .set, .incrby:
                    let increment = op.kind == .incrby ? op.value : 0
                    let base = op.kind == .incrby ? old : op.value
                    let (new, overflowed) = op.signed
                        ? signedResult(base, increment, bits: op.bits, overflow: op.overflow)
                        : unsignedResult(UInt64(bitPattern: base), increment, bits: op.bits, overflow: op.overflow)
                    if overflowed && op.overflow == .fail {
                        replies.append(nil)
                        continue
                    }
                    write(&value, op, new)
                    changes += 1
                    replies.append(op.kind == .incrby ? new : old)
                }
            }
            try call.write(call[1], value, expiresAt: stored?.expiresAt)
            if changes > 0 { call.notify(.string, "setbit", call[1]) }
            return replies
        }
        out.arrayHeader(replies.count)
        for r in replies {
            if let r { out.integer(r) } else { out.null() }
        }
    }

    /// The field's value: unsigned, or sign-extended when signed.
    static func read(_ value: [UInt8], _ op: FieldOp) -> Int64 {
        var raw: UInt64 = 0
        for j in 0..<op.bits { raw = raw << 1 | UInt64(bit(value, op.offset + j)) }
        if op.signed && op.bits < 64 && raw & (1 << UInt64(op.bits - 1)) != 0 {
            raw |= ~UInt64(0) << UInt64(op.bits)
        }
        return Int64(bitPattern: raw)
    }

    static func write(_ value: inout [UInt8], _ op: FieldOp, _ new: Int64) {
        let raw = UInt64(bitPattern: new)
        for j in 0..<op.bits {
            let b = op.offset + j
            let mask = UInt8(0x80) >> UInt8(b % 8)
            if raw >> UInt64(op.bits - 1 - j) & 1 == 1 { value[b / 8] |= mask } else { value[b / 8] &= ~mask }
        }
    }

    /// `value + increment` in a signed field of `bits`, as Redis's `checkSignedBitfieldOverflow`:
    /// the result, and whether it overflowed (then wrapped, saturated, or to be refused).
    static func signedResult(_ value: Int64, _ increment: Int64, bits: Int, overflow: Overflow) -> (Int64, Bool) {
        let max: Int64 = bits == 64 ? .max : (1 << Int64(bits - 1)) - 1
        let min = -max - 1
        let maxIncrement = max &- value
        let minIncrement = min &- value
        let wrapped = { () -> Int64 in
            var c = UInt64(bitPattern: value) &+ UInt64(bitPattern: increment)
            if bits < 64 {
                let mask = ~UInt64(0) << UInt64(bits)
                if c & (1 << UInt64(bits - 1)) != 0 { c |= mask } else { c &= ~mask }
            }
            return Int64(bitPattern: c)
        }
        if value > max || (bits != 64 && increment > maxIncrement) || (value >= 0 && increment > 0 && increment > maxIncrement) {
            return (overflow == .sat ? max : wrapped(), true)
        }
        if value < min || (bits != 64 && increment < minIncrement) || (value < 0 && increment < 0 && increment < minIncrement) {
            return (overflow == .sat ? min : wrapped(), true)
        }
        return (value + increment, false)
    }

    /// The same for an unsigned field, as Redis's `checkUnsignedBitfieldOverflow`.
    static func unsignedResult(_ value: UInt64, _ increment: Int64, bits: Int, overflow: Overflow) -> (Int64, Bool) {
        let max: UInt64 = (1 << UInt64(bits)) - 1
        let maxIncrement = Int64(bitPattern: max &- value)
        let minIncrement = Int64(bitPattern: 0 &- value)
        let wrapped = { () -> Int64 in
            Int64(bitPattern: (value &+ UInt64(bitPattern: increment)) & ~(~UInt64(0) << UInt64(bits)))
        }
        if value > max || (increment > 0 && increment > maxIncrement) {
            return (overflow == .sat ? Int64(max) : wrapped(), true)
        }
        if increment < 0 && increment < minIncrement {
            return (overflow == .sat ? 0 : wrapped(), true)
        }
        return (Int64(bitPattern: value &+ UInt64(bitPattern: increment)), false)
    }
}
