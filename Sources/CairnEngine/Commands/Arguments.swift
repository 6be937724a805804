#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts, timeouts, numbers of keys and cursors read as Redis 7.0 reads them: the same parse,
/// the same limits and the same error texts, checked before the command does any work (#40:
/// no count may make a command allocate or loop without bound). Commands that take the same
/// kind of argument share the reader here rather than each copying the check.
extension Call {
    /// Redis's `getRangeLongFromObjectOrReply`: argument `i` as an integer within `range`.
    /// `message`, when given, is the error for a non-integer as well as for one out of range,
    /// as in Redis.
    func integer(_ i: Int, in range: ClosedRange<Int64>, message: String? = nil) throws(CommandError) -> Int64 {
        guard let v = Bytes.int64(argv[i]) else { throw message.map { CommandError("ERR", $0) } ?? .notInteger }
        guard range.contains(v) else {
            throw CommandError("ERR", message ?? "value is out of range, value must between \(range.lowerBound) and \(range.upperBound)")
        }
        return v
    }

    /// Redis's `getIntFromObjectOrReply`: a C `int` (a database index: SELECT, COPY ... DB).
    func int32(_ i: Int) throws(CommandError) -> Int64 {
        try integer(i, in: Int64(Int32.min)...Int64(Int32.max))
    }

    /// Redis's `getPositiveLongFromObjectOrReply`: 0 or more, and `message` for anything else,
    /// a non-integer included (LPOP, SPOP and ZPOPMIN counts; LPOS COUNT and MAXLEN).
    func positiveInteger(_ i: Int, message: String = "value is out of range, must be positive") throws(CommandError) -> Int64 {
        try integer(i, in: 0...Int64.max, message: message)
    }

    /// The count of SRANDMEMBER, ZRANDMEMBER and HRANDFIELD: a negative one asks for picks that
    /// may repeat, so the lowest integer, whose magnitude does not fit, is refused as in Redis.
    func randomCount(_ i: Int) throws(CommandError) -> Int64 {
        try integer(i, in: -Int64.max...Int64.max)
    }

    /// Redis 7.0's `getTimeoutFromObjectOrReply`: a timeout in `unit` as milliseconds from now,
    /// 0 for none. Seconds are a decimal read as a C `long double` (`LongDoubles.parse`), so
    /// `0x10` and `inf` parse, and are truncated to whole milliseconds; a value past the 64-bit
    /// range (`1e20`, `inf`) converts to the lowest integer there (x86-64) and is "negative".
    func timeout(_ i: Int, _ unit: ExpiryUnit) throws(CommandError) -> Int64 {
        let ms: Int64
        switch unit {
        case .seconds:
            guard let seconds = LongDoubles.parse(argv[i]) else { throw CommandError("ERR", "timeout is not a float or out of range") }
            ms = LongDoubles.truncated(seconds * 1000)
        case .milliseconds:
            guard let v = Bytes.int64(argv[i]) else { throw CommandError("ERR", "timeout is not an integer or out of range") }
            ms = v
        }
        guard ms >= 0 else { throw CommandError("ERR", "timeout is negative") }
        return ms
    }

    /// `numkeys key [key ...] <where> [COUNT count]` of LMPOP, ZMPOP, BLMPOP and BZMPOP, with
    /// `numkeys` at `at`: Redis's checks in its order (numkeys, then the where word `end`
    /// parses, then COUNT). A numkeys past the arguments is a syntax error whatever its size.
    func multiPop<End>(numkeysAt at: Int, end parse: ([UInt8]) -> End?) throws(CommandError) -> (keys: [[UInt8]], end: End, count: Int) {
        let n = try integer(at, in: 1...Int64.max, message: "numkeys should be greater than 0")
        // Compared before any index is formed: at + n + 1 could overflow.
        guard n < count - at - 1 else { throw .syntax }
        let whereAt = at + Int(n) + 1
        guard let end = parse(argv[whereAt]) else { throw .syntax }
        var wanted: Int? = nil
        var i = whereAt + 1
        while i < count {
            guard wanted == nil, argv[i].isKeyword("COUNT"), i + 1 < count else { throw .syntax }
            wanted = Int(clamping: try integer(i + 1, in: 1...Int64.max, message: "count should be greater than 0"))
            i += 2
        }
        return (Array(argv[(at + 1)..<whereAt]), end, wanted ?? 1)
    }

    /// `numkeys [key ...] [arg ...]` of EVAL, EVALSHA, FCALL and their _RO forms, with
    /// `numkeys` at 2; `notInteger` is the error for a numkeys that is not one (FCALL's text
    /// differs from EVAL's).
    func scriptKeys(notInteger: CommandError = .notInteger) throws(CommandError) -> (keys: [[UInt8]], args: [[UInt8]]) {
        guard let n = Bytes.int64(argv[2]) else { throw notInteger }
        guard n <= count - 3 else { throw CommandError("ERR", "Number of keys can't be greater than number of args") }
        guard n >= 0 else { throw CommandError("ERR", "Number of keys can't be negative") }
        return (Array(argv[3..<(3 + Int(n))]), Array(argv[(3 + Int(n))...]))
    }

    /// A SCAN, SSCAN, HSCAN or ZSCAN cursor as Redis's `parseScanCursorOrReply` reads it
    /// (`strtoul`): no leading space, an optional sign, digits within 64 bits; an empty cursor
    /// is 0. (A cursor Cairn did not hand out is refused later, by `ScanCursors`.)
    func scanCursor(_ i: Int) throws(CommandError) -> UInt64 {
        let invalid = CommandError("ERR", "invalid cursor")
        var digits = argv[i][...]
        var negative = false
        if let sign = digits.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            digits = digits.dropFirst()
            guard !digits.isEmpty else { throw invalid }
        }
        var value: UInt64 = 0
        for d in digits {
            guard d >= UInt8(ascii: "0") && d <= UInt8(ascii: "9") else { throw invalid }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(d - UInt8(ascii: "0")))
            guard !o1 && !o2 else { throw invalid }
            value = s
        }
        // strtoul negates in unsigned arithmetic: "-1" is the largest cursor.
        return negative ? 0 &- value : value
    }
}

extension Bytes {
    /// Parses a float as Redis's `string2d` (scores, weights): C's `strtod` over the whole
    /// argument, no leading space, no NaN, and no overflow to an infinity or underflow to zero
    /// (`1e1000` is refused, as `inf` is not); `inf` and hexadecimal are accepted.
    static func double(_ bytes: some Collection<UInt8>) -> Double? {
        guard !bytes.isEmpty, bytes.count < 5120 else { return nil }
        var text = [UInt8](bytes)
        text.append(0)
        // C's isspace: space, \t, \n, \v, \f, \r.
        if text[0] == 32 || (9...13).contains(text[0]) { return nil }
        return text.withUnsafeBufferPointer { buffer -> Double? in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: text.count) { start -> Double? in
                var end: UnsafeMutablePointer<CChar>? = nil
                errno = 0
                #if canImport(Glibc)
                let value = Glibc.strtod(start, &end)
                #else
                let value = Darwin.strtod(start, &end)
                #endif
                // The whole argument: a NUL inside it ends the parse early.
                guard let end, UnsafePointer(end) - start == text.count - 1, !value.isNaN else { return nil }
                if errno == ERANGE && (value.isInfinite || value == 0) { return nil }
                return value
            }
        }
    }

    /// C's `strtod` as Redis's score-range bounds use it (`zslParseRange`): the text ends at a
    /// NUL, leading spaces are skipped, an empty text is 0 (so `(` alone is "above 0"), and
    /// overflow gives an infinity; nil when characters are left over or for NaN.
    static func strtod(_ bytes: [UInt8]) -> Double? {
        let text = bytes + [0]
        return text.withUnsafeBufferPointer { buffer -> Double? in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: text.count) { start -> Double? in
                var end: UnsafeMutablePointer<CChar>? = nil
                #if canImport(Glibc)
                let value = Glibc.strtod(start, &end)
                #else
                let value = Darwin.strtod(start, &end)
                #endif
                guard let end, end.pointee == 0, !value.isNaN else { return nil }
                return value
            }
        }
    }
}

/// A C `long double` where Swift has one (x86-64: `Float80`), for what Redis computes in one:
/// INCRBYFLOAT, HINCRBYFLOAT and blocking timeouts. Elsewhere a `Double`.
#if arch(x86_64) && !os(Windows) && !os(Android)
typealias LongDouble = Float80
#else
typealias LongDouble = Double
#endif

enum LongDoubles {
    /// Redis's `string2ld` (`strtold`): no leading space, the whole argument (up to a NUL, as a
    /// C string ends there), no NaN, and no overflow to infinity or underflow to zero; `inf`
    /// and hexadecimal are accepted.
    static func parse(_ bytes: [UInt8]) -> LongDouble? {
        guard !bytes.isEmpty, bytes.count < 5 * 1024 else { return nil }
        // C's isspace: space, \t, \n, \v, \f, \r.
        if bytes[0] == 32 || (9...13).contains(bytes[0]) { return nil }
        let text = bytes + [0]
        return text.withUnsafeBufferPointer { buffer -> LongDouble? in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: text.count) { start -> LongDouble? in
                var end: UnsafeMutablePointer<CChar>? = nil
                errno = 0
                #if arch(x86_64) && !os(Windows) && !os(Android)
                let value = strtold(start, &end)
                #else
                let value = strtod(start, &end)
                #endif
                guard let end, end.pointee == 0, !value.isNaN else { return nil }
                if errno == ERANGE && (value.isInfinite || value == 0) { return nil }
                return value
            }
        }
    }

    /// The conversion to a 64-bit integer as Redis's x86-64 build makes it: toward zero, and the
    /// lowest integer for what does not fit (the processor's "integer indefinite").
    static func truncated(_ value: LongDouble) -> Int64 {
        guard value.isFinite, value < 0x1p63, value >= -0x1p63 else { return .min }
        return Int64(value)
    }

    /// Redis's `ld2string(..., LD_STR_HUMAN)`: `%.17Lf` without trailing zeros after the point,
    /// `-0` as `0` (INCRBYFLOAT's reply and stored value). Without a long double, Cairn's
    /// shortest form of the Double (`Bytes.humanDouble`).
    static func human(_ value: LongDouble) -> String {
        #if arch(x86_64) && !os(Windows) && !os(Android)
        // The largest finite long double has 4,933 integer digits.
        var buffer = [CChar](repeating: 0, count: 5 * 1024 + 32)
        let written = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%.17Lf", $0) }
        var text = Array(buffer.prefix(Int(max(written, 0))).map { UInt8(bitPattern: $0) })
        if text.contains(UInt8(ascii: ".")) {
            while text.last == UInt8(ascii: "0") { text.removeLast() }
            if text.last == UInt8(ascii: ".") { text.removeLast() }
        }
        if text == Array("-0".utf8) { text = [UInt8(ascii: "0")] }
        return String(decoding: text, as: UTF8.self)
        #else
        return Bytes.humanDouble(value)
        #endif
    }
}
