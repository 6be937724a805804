public import Foundation

/// A value that can be part of a key: an object's identifier or an indexed field.
///
/// The encoding is order-preserving (comparing two encodings byte by byte gives the order of
/// the values) and self-delimiting (an encoding is never a prefix of another), so encodings
/// concatenate into compound keys that sort field by field, the way the FoundationDB tuple
/// layer does it. Each encoding starts with a tag byte:
///
/// | tag | value | payload |
/// |---|---|---|
/// | `0x05` | nil | none: nil sorts before any value |
/// | `0x10`, `0x11` | `false`, `true` | none |
/// | `0x20` | `Int` | 8 bytes big-endian, sign bit flipped |
/// | `0x21` | `Double`, `Date` (seconds since 1970) | 8 bytes: IEEE bits, all flipped when negative, else the sign bit set; `-0` is written as `+0`, every NaN as one NaN after `+infinity` |
/// | `0x30` | `String` | NFC UTF-8, `0x00` escaped as `0x00 0xFF`, ended by `0x00` |
/// | `0x40` | `UUID` | 16 bytes |
///
/// Strings are compared as Swift compares them (canonically equivalent strings are equal; order
/// by Unicode scalar values of the NFC form).
public protocol IndexValue: Sendable {
    /// Appends this value's encoding to `key`.
    func appendKey(to key: inout [UInt8])
}

extension IndexValue {
    /// This value's encoding alone.
    public var keyBytes: [UInt8] {
        var out: [UInt8] = []
        appendKey(to: &out)
        return out
    }
}

enum KeyTag {
    static let null: UInt8 = 0x05
    static let falseValue: UInt8 = 0x10
    static let trueValue: UInt8 = 0x11
    static let int: UInt8 = 0x20
    static let double: UInt8 = 0x21
    static let string: UInt8 = 0x30
    static let uuid: UInt8 = 0x40
}

extension Int: IndexValue {
    public func appendKey(to key: inout [UInt8]) {
        key.append(KeyTag.int)
        BigEndian.append(UInt64(bitPattern: Int64(self)) ^ (1 << 63), to: &key)
    }
}

extension Bool: IndexValue {
    public func appendKey(to key: inout [UInt8]) {
        key.append(self ? KeyTag.trueValue : KeyTag.falseValue)
    }
}

extension Double: IndexValue {
    public func appendKey(to key: inout [UInt8]) {
        key.append(KeyTag.double)
        // One form for equal values: -0 == +0, and every NaN is the same (positive, quiet) NaN.
        let value: Double = self.isNaN ? .nan : (self == 0 ? 0 : self)
        let bits = value.bitPattern
        BigEndian.append(bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63), to: &key)
    }
}

extension Date: IndexValue {
    public func appendKey(to key: inout [UInt8]) {
        timeIntervalSince1970.appendKey(to: &key)
    }
}

extension String: IndexValue {
    public func appendKey(to key: inout [UInt8]) {
        key.append(KeyTag.string)
        appendEscaped(KeyCodec.normalized(self), to: &key)
        key.append(0)
    }
}

extension UUID: IndexValue {
    public func appendKey(to key: inout [UInt8]) {
        key.append(KeyTag.uuid)
        withUnsafeBytes(of: uuid) { key.append(contentsOf: $0) }
    }
}

extension Optional: IndexValue where Wrapped: IndexValue {
    public func appendKey(to key: inout [UInt8]) {
        switch self {
        case .none: key.append(KeyTag.null)
        case .some(let value): value.appendKey(to: &key)
        }
    }
}

private func appendEscaped(_ utf8: String.UTF8View, to key: inout [UInt8]) {
    for byte in utf8 {
        key.append(byte)
        if byte == 0 { key.append(0xFF) }
    }
}

/// Helpers over encoded keys: skipping elements, prefix ranges.
enum KeyCodec {
    /// The NFC form's UTF-8, so canonically equivalent strings encode alike.
    static func normalized(_ s: String) -> String.UTF8View {
        // ASCII is already NFC; skip Foundation's normalization for the common case.
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return s.utf8 }
        return s.precomposedStringWithCanonicalMapping.utf8
    }

    /// The index just past the element that starts at `start`, or nil when the bytes are not a
    /// well-formed element.
    static func skipElement(_ key: [UInt8], from start: Int) -> Int? {
        guard start < key.count else { return nil }
        switch key[start] {
        case KeyTag.null, KeyTag.falseValue, KeyTag.trueValue:
            return start + 1
        case KeyTag.int, KeyTag.double:
            return start + 9 <= key.count ? start + 9 : nil
        case KeyTag.uuid:
            return start + 17 <= key.count ? start + 17 : nil
        case KeyTag.string:
            var i = start + 1
            while i < key.count {
                if key[i] == 0 {
                    if i + 1 < key.count, key[i + 1] == 0xFF {
                        i += 2
                        continue
                    }
                    return i + 1
                }
                i += 1
            }
            return nil
        default:
            return nil
        }
    }

    /// The bytes after the first `count` elements of `key` (the id at the end of an index entry).
    static func tail(_ key: [UInt8], skipping count: Int) -> [UInt8]? {
        var i = 0
        for _ in 0..<count {
            guard let next = skipElement(key, from: i) else { return nil }
            i = next
        }
        return i < key.count ? Array(key[i...]) : nil
    }

    /// The first key greater than every key starting with `prefix`; nil when there is none
    /// (the prefix is all 0xFF bytes).
    static func successor(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }

    /// A string's encoding without its terminator: the prefix shared by every string that
    /// starts with `s`.
    static func stringPrefix(_ s: String) -> [UInt8] {
        var key: [UInt8] = [KeyTag.string]
        appendEscaped(normalized(s), to: &key)
        return key
    }
}
