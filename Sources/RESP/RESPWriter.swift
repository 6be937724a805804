/// Appends encoded replies to a byte buffer; `version` picks RESP2 or RESP3 forms.
///
/// Integers are formatted without allocating, so a reply costs one append of a few bytes.
public struct RESPWriter: Sendable {
    public var bytes: [UInt8]
    public var version: RESPVersion

    public init(version: RESPVersion = .v2, capacity: Int = 0) {
        self.version = version
        self.bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the buffer, keeping its capacity.
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    @inline(__always)
    private mutating func crlf() {
        bytes.append(13)
        bytes.append(10)
    }

    /// Appends raw bytes in one piece: one capacity check and a copy (a slice of a raw buffer
    /// appended as a sequence is copied a byte at a time).
    @inline(__always)
    private mutating func append(_ raw: UnsafeRawBufferPointer) {
        guard let base = raw.baseAddress, raw.count > 0 else { return }
        bytes.append(contentsOf: UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: raw.count))
    }

    /// `type`, `n` in decimal and CRLF, composed on the stack and appended at once: every
    /// integer reply, bulk string and aggregate starts with one.
    @inline(__always)
    private mutating func header(_ type: UInt8, _ n: Int) {
        // At most 1 + 1 + 20 + 2 bytes (the type, a sign, Int.min's digits, CRLF).
        var line: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &line) { b in
            b[b.count - 2] = 13
            b[b.count - 1] = 10
            var start = Self.writeDigits(of: Int64(n), endingAt: b.count - 2, in: b)
            start -= 1
            b[start] = type
            append(UnsafeRawBufferPointer(rebasing: b[start...]))
        }
    }

    /// Writes `n`'s decimal digits (with a minus sign when negative) into `b`, ending just
    /// before `end`; returns where they start.
    @inline(__always)
    private static func writeDigits(of n: Int64, endingAt end: Int, in b: UnsafeMutableRawBufferPointer) -> Int {
        var start = end
        var v = n.magnitude
        repeat {
            start -= 1
            b[start] = UInt8(truncatingIfNeeded: 48 + v % 10)
            v /= 10
        } while v > 0
        if n < 0 {
            start -= 1
            b[start] = UInt8(ascii: "-")
        }
        return start
    }

    /// An integer's decimal digits as a bulk string (RESP2 scores), or with `double` a RESP3
    /// double (`,42`): composed on the stack, no String made.
    public mutating func decimal(_ n: Int64, double: Bool = false) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { b in
            let start = Self.writeDigits(of: n, endingAt: b.count, in: b)
            let text = UnsafeRawBufferPointer(rebasing: b[start...])
            if double {
                bytes.append(UInt8(ascii: ","))
                append(text)
                crlf()
            } else {
                bulk(text)
            }
        }
    }

    /// `+s` (CR and LF replaced by spaces, as simple strings cannot hold them).
    public mutating func simpleString(_ s: String) {
        bytes.append(UInt8(ascii: "+"))
        appendLine(s)
    }

    /// `-message`: the caller includes the prefix (`ERR ...`).
    public mutating func error(_ message: String) {
        bytes.append(UInt8(ascii: "-"))
        appendLine(message)
    }

    private mutating func appendLine(_ s: String) {
        for b in s.utf8 { bytes.append(b == 13 || b == 10 ? 32 : b) }
        crlf()
    }

    public mutating func integer(_ n: Int64) { header(UInt8(ascii: ":"), Int(n)) }
    public mutating func integer(_ n: Int) { header(UInt8(ascii: ":"), n) }

    public mutating func bulk(_ payload: UnsafeRawBufferPointer) {
        header(UInt8(ascii: "$"), payload.count)
        append(payload)
        crlf()
    }

    public mutating func bulk(_ payload: [UInt8]) {
        header(UInt8(ascii: "$"), payload.count)
        bytes.append(contentsOf: payload)
        crlf()
    }

    public mutating func bulk(_ payload: ArraySlice<UInt8>) {
        header(UInt8(ascii: "$"), payload.count)
        bytes.append(contentsOf: payload)
        crlf()
    }

    public mutating func bulk(_ s: String) {
        var s = s
        s.withUTF8 { bulk(UnsafeRawBufferPointer($0)) }
    }

    /// A missing value: RESP2 `$-1`, RESP3 `_`.
    public mutating func null() {
        if version == .v3 {
            bytes.append(contentsOf: [UInt8(ascii: "_"), 13, 10])
        } else {
            bytes.append(contentsOf: [UInt8(ascii: "$"), UInt8(ascii: "-"), UInt8(ascii: "1"), 13, 10])
        }
    }

    /// A missing aggregate (EXEC aborted by WATCH): RESP2 `*-1`, RESP3 `_`.
    public mutating func nullArray() {
        if version == .v3 {
            bytes.append(contentsOf: [UInt8(ascii: "_"), 13, 10])
        } else {
            bytes.append(contentsOf: [UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "1"), 13, 10])
        }
    }

    public mutating func arrayHeader(_ count: Int) { header(UInt8(ascii: "*"), count) }

    /// RESP3 `%n`; RESP2 a flat array of 2n elements.
    public mutating func mapHeader(_ count: Int) {
        if version == .v3 { header(UInt8(ascii: "%"), count) } else { header(UInt8(ascii: "*"), count * 2) }
    }

    /// RESP3 `~n`; RESP2 an array.
    public mutating func setHeader(_ count: Int) {
        header(version == .v3 ? UInt8(ascii: "~") : UInt8(ascii: "*"), count)
    }

    /// RESP3 `>n`; RESP2 an array.
    public mutating func pushHeader(_ count: Int) {
        header(version == .v3 ? UInt8(ascii: ">") : UInt8(ascii: "*"), count)
    }

    /// RESP3 `,d`; RESP2 a bulk string of the same text.
    public mutating func double(_ d: Double) {
        let text = RESPWriter.doubleText(d)
        if version == .v3 {
            bytes.append(UInt8(ascii: ","))
            bytes.append(contentsOf: text.utf8)
            crlf()
        } else {
            bulk(text)
        }
    }

    /// Redis's text for a double: `inf`, `-inf`, `nan`, or the shortest form that reads back
    /// the same (`3.5`, `10`).
    public static func doubleText(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d > 0 ? "inf" : "-inf" }
        if d == d.rounded(.towardZero) && abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    /// RESP3 `#t`/`#f`; RESP2 `:1`/`:0`.
    public mutating func boolean(_ b: Bool) {
        if version == .v3 {
            bytes.append(contentsOf: [UInt8(ascii: "#"), b ? UInt8(ascii: "t") : UInt8(ascii: "f"), 13, 10])
        } else {
            integer(b ? 1 : 0)
        }
    }

    /// RESP3 `=len\r\ntxt:...`; RESP2 a bulk string.
    public mutating func verbatim(_ text: [UInt8], format: String = "txt") {
        guard version == .v3 else { return bulk(text) }
        let f = Array(format.utf8.prefix(3))
        header(UInt8(ascii: "="), text.count + 4)
        bytes.append(contentsOf: f)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(contentsOf: text)
        crlf()
    }

    /// RESP3 `(digits`; RESP2 a bulk string.
    public mutating func bigNumber(_ digits: String) {
        guard version == .v3 else { return bulk(digits) }
        bytes.append(UInt8(ascii: "("))
        bytes.append(contentsOf: digits.utf8)
        crlf()
    }

    /// Any value, honouring `version` (RESP3-only types degrade as Redis degrades them).
    public mutating func write(_ value: RESPValue) {
        switch value {
        case .simpleString(let s): simpleString(s)
        case .error(let s): error(s)
        case .integer(let n): integer(n)
        case .bulkString(let b): bulk(b)
        case .null: null()
        case .array(let a):
            arrayHeader(a.count)
            for v in a { write(v) }
        case .double(let d): double(d)
        case .boolean(let b): boolean(b)
        case .bigNumber(let s): bigNumber(s)
        case .verbatimString(let f, let t): verbatim(t, format: f)
        case .map(let m):
            mapHeader(m.count)
            for (k, v) in m {
                write(k)
                write(v)
            }
        case .set(let a):
            setHeader(a.count)
            for v in a { write(v) }
        case .push(let a):
            pushHeader(a.count)
            for v in a { write(v) }
        }
    }

    /// A request as a multibulk of bulk strings, as clients send it.
    public static func command(_ argv: [[UInt8]]) -> [UInt8] {
        var w = RESPWriter(capacity: argv.reduce(16) { $0 + $1.count + 16 })
        w.arrayHeader(argv.count)
        for a in argv { w.bulk(a) }
        return w.bytes
    }
}
