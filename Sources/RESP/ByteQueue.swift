#if canImport(Glibc)
import Glibc
#endif

/// A growable byte buffer with a read position: bytes are appended at the end and consumed
/// from the front without moving the rest until enough has been consumed to be worth it.
struct ByteQueue: Sendable {
    var storage: [UInt8] = []
    var start = 0

    var count: Int { storage.count - start }
    var isEmpty: Bool { start == storage.count }

    mutating func append(_ bytes: UnsafeRawBufferPointer) { storage.append(contentsOf: bytes) }
    mutating func append(_ bytes: [UInt8]) { storage.append(contentsOf: bytes) }

    /// Index of the first `byte` at or after `from`, or nil.
    func index(of byte: UInt8, from: Int) -> Int? {
        guard from < storage.count else { return nil }
        return storage.withUnsafeBytes { raw -> Int? in
            guard let p = memchr(raw.baseAddress! + from, Int32(byte), raw.count - from) else { return nil }
            return raw.baseAddress!.distance(to: UnsafeRawPointer(p))
        }
    }

    /// Parses a signed decimal in `storage[from..<to]`; nil when it is not one.
    func integer(from: Int, to: Int) -> Int64? {
        guard to > from, to - from <= 20 else { return nil }
        var i = from
        var negative = false
        if storage[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
            guard i < to else { return nil }
        }
        // Negative numbers are built downwards, so Int64.min (`:-9223372036854775808`, a
        // counter's floor) parses: its magnitude does not fit an Int64.
        var v: Int64 = 0
        while i < to {
            let d = storage[i]
            guard d >= 48 && d <= 57 else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let digit = Int64(d - 48)
            let (s, o2) = negative ? m.subtractingReportingOverflow(digit) : m.addingReportingOverflow(digit)
            if o1 || o2 { return nil }
            v = s
            i += 1
        }
        return v
    }

    /// Drops consumed bytes: at once when everything was consumed, otherwise once the consumed
    /// part is large, so a long pipeline is not copied once per request.
    mutating func compact() {
        if start == storage.count {
            if storage.capacity > 4 << 20 {
                storage = []
            } else {
                storage.removeAll(keepingCapacity: true)
            }
            start = 0
        } else if start > 256 * 1024 && start > storage.count / 2 {
            storage.removeFirst(start)
            start = 0
        }
    }
}
