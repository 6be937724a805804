import Foundation

/// Byte-level helpers shared by handlers: Redis's exact number parsing and formatting.
enum Bytes {
    /// Orders keys as RocksDB's default comparator does (bytewise, a prefix first): negative,
    /// zero or positive.
    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        let common = min(a.count, b.count)
        let c = a.withUnsafeBytes { x in b.withUnsafeBytes { y in common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common) } }
        return c != 0 ? Int(c) : a.count - b.count
    }

    /// Grows `value` to `count` bytes with zeros (SETRANGE, SETBIT, BITFIELD past the end), in
    /// one allocation and a `memset`: appending `repeatElement(0, ...)` went byte by byte
    /// through generic code, and an offset near 512 MB held a worker for minutes.
    static func zeroExtend(_ value: inout [UInt8], to count: Int) {
        let old = value.count
        guard count > old else { return }
        let grown = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            value.withUnsafeBytes { src in
                if old > 0 { memcpy(buffer.baseAddress!, src.baseAddress!, old) }
            }
            memset(buffer.baseAddress! + old, 0, count - old)
            initialized = count
        }
        value = grown
    }

    /// Parses a signed 64-bit decimal as Redis's `string2ll` does: no spaces, no `+`, no leading
    /// zeros, nothing after the digits.
    static func int64(_ bytes: some Collection<UInt8>) -> Int64? {
        var it = bytes.makeIterator()
        guard var c = it.next() else { return nil }
        if bytes.count == 1 && c == UInt8(ascii: "0") { return 0 }
        var negative = false
        if c == UInt8(ascii: "-") {
            negative = true
            guard let n = it.next() else { return nil }
            c = n
        }
        guard c >= UInt8(ascii: "1") && c <= UInt8(ascii: "9") else { return nil }
        var value = UInt64(c - UInt8(ascii: "0"))
        while let d = it.next() {
            guard d >= UInt8(ascii: "0") && d <= UInt8(ascii: "9") else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(d - UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            value = s
        }
        if negative {
            if value > UInt64(Int64.max) + 1 { return nil }
            return value == UInt64(Int64.max) + 1 ? Int64.min : -Int64(value)
        }
        return value > UInt64(Int64.max) ? nil : Int64(value)
    }

    static func int64(_ buffer: UnsafeRawBufferPointer) -> Int64? { int64(UnsafeRawBufferPointer(buffer)[...]) }

    static func decimal(_ n: Int64) -> [UInt8] { Array(String(n).utf8) }

    /// Formats a double in Redis's human form: fixed notation, no exponent, no trailing zeros.
    static func humanDouble(_ d: Double) -> String {
        if d.isInfinite { return d > 0 ? "inf" : "-inf" }
        if d == d.rounded() && abs(d) < 1e17 { return String(Int64(d)) }
        let shortest = String(d)
        if !shortest.contains("e") { return shortest }
        var text = String(format: "%.17f", d)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }

    /// ASCII lowercase of one byte: A-Z become a-z, every other byte stays.
    @inline(__always)
    static func lowercased(_ b: UInt8) -> UInt8 {
        b >= 65 && b <= 90 ? b | 0x20 : b
    }

    /// ASCII lowercase of a short token such as a command or option name.
    @inline(__always)
    static func lowercased(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { buffer in
            for (i, b) in bytes.enumerated() {
                buffer[i] = lowercased(b)
            }
            return bytes.count
        }
    }

    /// Case-insensitive comparison of an argument with an ASCII keyword given in upper case.
    @inline(__always)
    static func equalsKeyword(_ bytes: [UInt8], _ keyword: StaticString) -> Bool {
        guard bytes.count == keyword.utf8CodeUnitCount else { return false }
        let k = keyword.utf8Start
        for i in 0..<bytes.count {
            var b = bytes[i]
            if b >= 97 && b <= 122 { b &= 0xDF }
            if b != k[i] { return false }
        }
        return true
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}

extension Array where Element == UInt8 {
    /// True when this argument equals the upper-case keyword, ignoring ASCII case.
    @inline(__always)
    func isKeyword(_ keyword: StaticString) -> Bool { Bytes.equalsKeyword(self, keyword) }
}
