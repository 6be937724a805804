import RESP
import Rocks

/// Ordered ranges over the current column family, with Redis's lex bounds
/// (https://redis.io/docs/latest/commands/zrangebylex/): `[a` inclusive, `(a` exclusive, `-` and
/// `+` unbounded.
///
/// `RANGE start end [REV] [LIMIT n] [KEYSONLY]` returns key, value, key, value... in ascending
/// order (descending with `REV`; the bounds stay low then high). To page, pass the last key back
/// as `(key` (the new start, or the new end with `REV`). Stateless: nothing is kept between calls.
/// `DELRANGE start end` deletes the range with one range tombstone.
///
/// A key holding a hash, set, sorted set or list is listed once, with a null value.
enum RangeCommands {
    enum Bound: Equatable {
        case minusInfinity, plusInfinity
        case inclusive([UInt8]), exclusive([UInt8])

        init(_ arg: [UInt8]) throws(CommandError) {
            if arg == [UInt8(ascii: "-")] { self = .minusInfinity; return }
            if arg == [UInt8(ascii: "+")] { self = .plusInfinity; return }
            guard let first = arg.first else { throw CommandError("ERR", "min or max not valid string range item") }
            switch first {
            case UInt8(ascii: "["): self = .inclusive(Array(arg.dropFirst()))
            case UInt8(ascii: "("): self = .exclusive(Array(arg.dropFirst()))
            default: throw CommandError("ERR", "min or max not valid string range item")
            }
        }
    }

    /// The half-open key range `[lower, upper)` the bounds describe; nil upper = no limit;
    /// nil overall = empty.
    static func keyRange(_ start: Bound, _ end: Bound) -> (lower: [UInt8], upper: [UInt8]?)? {
        let lower: [UInt8]
        switch start {
        case .minusInfinity: lower = []
        case .plusInfinity: return nil
        case .inclusive(let k): lower = k
        case .exclusive(let k): lower = k + [0]
        }
        let upper: [UInt8]?
        switch end {
        case .minusInfinity: return nil
        case .plusInfinity: upper = nil
        case .inclusive(let k): upper = k + [0]
        case .exclusive(let k): upper = k
        }
        if let upper, !lower.lexicographicallyPrecedes(upper) { return nil }
        return (lower, upper)
    }

    /// The keys between the request's bounds (arguments 1 and 2), for the ACL key patterns;
    /// nothing when the bounds do not parse (the command fails) or hold no key.
    static func reached(write: Bool) -> @Sendable ([[UInt8]], Session) -> [KeyRange] {
        { argv, _ in
            guard argv.count > 2, let start = try? Bound(argv[1]), let end = try? Bound(argv[2]),
                  let (lower, upper) = keyRange(start, end)
            else { return [] }
            return [KeyRange(lower: lower, upper: upper, write: write)]
        }
    }

    static let all: [Command] = [
        Command("range", handler: range).reaching(reached(write: false)),
        Command("delrange") { call, out throws(CommandError) in
            guard let (lower, upper) = keyRange(try Bound(call[1]), try Bound(call[2])) else {
                out.simpleString("OK")
                return
            }
            let handle = call.family.handle
            let database = call.database
            var end = upper
            if end == nil {
                // RocksDB ranges need a finite end: just past the last key there is, counting
                // keys written earlier in the same EXEC.
                let stored = try call.engine.storage("DELRANGE") {
                    try database.withCursor(in: handle) { c in
                        c.seekToLast()
                        return c.isValid ? c.key + [0] : nil
                    }
                }
                let staged = call.session.transaction?.endPastStagedKeys(in: call.family.name)
                end = [stored, staged].compactMap { $0 }.max { $0.lexicographicallyPrecedes($1) }
            }
            guard let end, lower.lexicographicallyPrecedes(end) else {
                out.simpleString("OK")
                return
            }
            if let tx = call.session.transaction {
                tx.deleteRange(from: lower, to: end, in: call.family)
            } else {
                let options = call.engine.writeOptions
                // The range holds unknown keys: hold every stripe and fire every WATCH.
                try call.engine.locks.withAll { () throws(CommandError) in
                    try call.engine.storage("DELRANGE") { try database.deleteRange(from: lower, to: end, in: handle, options: options) }
                }
            }
            out.simpleString("OK")
        }.reaching(reached(write: true)),
    ]

    static func range(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let start = try Bound(call[1])
        let end = try Bound(call[2])
        var reverse = false, keysOnly = false
        var limit = Int.max
        var i = 3
        while i < call.count {
            if call[i].isKeyword("REV") {
                reverse = true
            } else if call[i].isKeyword("KEYSONLY") {
                keysOnly = true
            } else if call[i].isKeyword("LIMIT"), i + 1 < call.count {
                let n = try call.integer(i + 1)
                guard n >= 0 else { throw CommandError("ERR", "LIMIT must not be negative") }
                limit = Int(n)
                i += 1
            } else {
                throw .syntax
            }
            i += 1
        }
        var keys: [[UInt8]] = []
        var values: [[UInt8]?] = []  // nil: the key holds a collection (its value slot is null)
        if let (lower, upper) = keyRange(start, end), limit > 0 {
            var options = call.readOptions
            options.lowerBound = lower.isEmpty ? nil : lower
            options.upperBound = upper
            let handle = call.family.handle
            let now = call.now
            try call.engine.storage("RANGE") {
                try call.database.withCursor(in: handle, options: options) { c in
                    if reverse { c.seekToLast() } else { c.seekToFirst() }
                    while c.isValid && keys.count < limit {
                        let value: [UInt8]?? = c.withValue { raw in
                            guard let h = ValueFormat.header(of: raw), !h.isExpired(now: now) else { return nil }
                            if keysOnly { return .some([]) }
                            if h.type != ValueFormat.stringType { return .some(nil) }
                            return Array(UnsafeRawBufferPointer(rebasing: raw[h.payloadOffset...]))
                        }
                        if let value {
                            keys.append(c.key)
                            if !keysOnly { values.append(value) }
                        }
                        if reverse { c.prev() } else { c.next() }
                    }
                    try c.check()
                }
            }
        }
        out.arrayHeader(keysOnly ? keys.count : keys.count * 2)
        for (n, k) in keys.enumerated() {
            out.bulk(k)
            if !keysOnly {
                if let v = values[n] { out.bulk(v) } else { out.null() }
            }
        }
    }
}
