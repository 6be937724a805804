import Foundation

// MessagePack (https://github.com/msgpack/msgpack/blob/master/spec.md) through Codable: the
// encoding of object bodies. Compact and self-describing like JSON (field names are kept, so an
// old body still decodes into an old struct, or into a dictionary), standard (any language's
// MessagePack library reads the bodies), and several times faster to decode than JSON here:
// the decoder reads fields straight from the bytes, without building a tree first.
//
// Mapping: keyed containers are maps with string keys, unkeyed containers arrays; integers
// take the smallest form; Float and Double are float64; `Data` is bin; nil is nil.

// MARK: Encoding

/// Encodes a `Encodable` value as MessagePack.
struct MessagePackEncoder {
    func encode(_ value: some Encodable) throws -> [UInt8] {
        let root = EncodingBox()
        try encodeValue(value, into: root, codingPath: [])
        var out: [UInt8] = []
        out.reserveCapacity(128)
        root.write(to: &out)
        return out
    }
}

/// A value being encoded: bytes already final, or a container still being filled.
final class EncodingBox {
    enum Content {
        case empty
        case bytes([UInt8])
        case array([EncodingBox])
        case map([(String, EncodingBox)])
    }

    var content: Content = .empty

    func write(to out: inout [UInt8]) {
        switch content {
        case .empty: out.append(0xC0)
        case .bytes(let b): out += b
        case .array(let items):
            MessagePack.writeArrayHeader(items.count, to: &out)
            for item in items { item.write(to: &out) }
        case .map(let entries):
            MessagePack.writeMapHeader(entries.count, to: &out)
            for (key, value) in entries {
                MessagePack.writeString(key, to: &out)
                value.write(to: &out)
            }
        }
    }
}

/// Encodes `value` into `box`, with `Data` and `Date` in their MessagePack forms.
private func encodeValue(_ value: some Encodable, into box: EncodingBox, codingPath: [any CodingKey]) throws {
    if let data = value as? Data {
        var out: [UInt8] = []
        MessagePack.writeBinary(data, to: &out)
        box.content = .bytes(out)
        return
    }
    try value.encode(to: MPEncoder(box: box, codingPath: codingPath))
}

private struct MPEncoder: Encoder {
    let box: EncodingBox
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .map = box.content {} else { box.content = .map([]) }
        return KeyedEncodingContainer(MPKeyedEncoder<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = box.content {} else { box.content = .array([]) }
        return MPUnkeyedEncoder(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        MPSingleEncoder(box: box, codingPath: codingPath)
    }
}

private struct MPKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: EncodingBox
    var codingPath: [any CodingKey]

    private func child(_ key: Key) -> EncodingBox {
        let child = EncodingBox()
        if case .map(var entries) = box.content {
            box.content = .empty  // keep `entries` uniquely referenced while appending
            entries.append((key.stringValue, child))
            box.content = .map(entries)
        }
        return child
    }

    private func scalar(_ key: Key, _ write: (inout [UInt8]) -> Void) {
        var out: [UInt8] = []
        write(&out)
        child(key).content = .bytes(out)
    }

    mutating func encodeNil(forKey key: Key) throws { scalar(key) { $0.append(0xC0) } }
    mutating func encode(_ value: Bool, forKey key: Key) throws { scalar(key) { $0.append(value ? 0xC3 : 0xC2) } }
    mutating func encode(_ value: String, forKey key: Key) throws { scalar(key) { MessagePack.writeString(value, to: &$0) } }
    mutating func encode(_ value: Double, forKey key: Key) throws { scalar(key) { MessagePack.writeDouble(value, to: &$0) } }
    mutating func encode(_ value: Float, forKey key: Key) throws { scalar(key) { MessagePack.writeDouble(Double(value), to: &$0) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { scalar(key) { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { scalar(key) { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { scalar(key) { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { scalar(key) { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { scalar(key) { MessagePack.writeInt(value, to: &$0) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { scalar(key) { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { scalar(key) { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { scalar(key) { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { scalar(key) { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { scalar(key) { MessagePack.writeUInt(value, to: &$0) } }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encodeValue(value, into: child(key), codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        MPEncoder(box: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        MPEncoder(box: child(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        MPEncoder(box: child(Key(stringValue: "super")!), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        MPEncoder(box: child(key), codingPath: codingPath + [key])
    }
}

private struct MPUnkeyedEncoder: UnkeyedEncodingContainer {
    let box: EncodingBox
    var codingPath: [any CodingKey]
    var count: Int {
        if case .array(let items) = box.content { return items.count }
        return 0
    }

    private func child() -> EncodingBox {
        let child = EncodingBox()
        if case .array(var items) = box.content {
            box.content = .empty
            items.append(child)
            box.content = .array(items)
        }
        return child
    }

    private func scalar(_ write: (inout [UInt8]) -> Void) {
        var out: [UInt8] = []
        write(&out)
        child().content = .bytes(out)
    }

    mutating func encodeNil() throws { scalar { $0.append(0xC0) } }
    mutating func encode(_ value: Bool) throws { scalar { $0.append(value ? 0xC3 : 0xC2) } }
    mutating func encode(_ value: String) throws { scalar { MessagePack.writeString(value, to: &$0) } }
    mutating func encode(_ value: Double) throws { scalar { MessagePack.writeDouble(value, to: &$0) } }
    mutating func encode(_ value: Float) throws { scalar { MessagePack.writeDouble(Double(value), to: &$0) } }
    mutating func encode(_ value: Int) throws { scalar { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int64) throws { scalar { MessagePack.writeInt(value, to: &$0) } }
    mutating func encode(_ value: UInt64) throws { scalar { MessagePack.writeUInt(value, to: &$0) } }
    mutating func encode(_ value: UInt8) throws { scalar { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value, into: child(), codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        MPEncoder(box: child(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        MPEncoder(box: child(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { MPEncoder(box: child(), codingPath: codingPath) }
}

private struct MPSingleEncoder: SingleValueEncodingContainer {
    let box: EncodingBox
    var codingPath: [any CodingKey]

    private func scalar(_ write: (inout [UInt8]) -> Void) {
        var out: [UInt8] = []
        write(&out)
        box.content = .bytes(out)
    }

    mutating func encodeNil() throws { scalar { $0.append(0xC0) } }
    mutating func encode(_ value: Bool) throws { scalar { $0.append(value ? 0xC3 : 0xC2) } }
    mutating func encode(_ value: String) throws { scalar { MessagePack.writeString(value, to: &$0) } }
    mutating func encode(_ value: Double) throws { scalar { MessagePack.writeDouble(value, to: &$0) } }
    mutating func encode(_ value: Float) throws { scalar { MessagePack.writeDouble(Double(value), to: &$0) } }
    mutating func encode(_ value: Int) throws { scalar { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int8) throws { scalar { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int16) throws { scalar { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int32) throws { scalar { MessagePack.writeInt(Int64(value), to: &$0) } }
    mutating func encode(_ value: Int64) throws { scalar { MessagePack.writeInt(value, to: &$0) } }
    mutating func encode(_ value: UInt) throws { scalar { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt8) throws { scalar { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt16) throws { scalar { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt32) throws { scalar { MessagePack.writeUInt(UInt64(value), to: &$0) } }
    mutating func encode(_ value: UInt64) throws { scalar { MessagePack.writeUInt(value, to: &$0) } }
    mutating func encode<T: Encodable>(_ value: T) throws { try encodeValue(value, into: box, codingPath: codingPath) }
}

// MARK: Wire format

enum MessagePack {
    static func writeInt(_ v: Int64, to out: inout [UInt8]) {
        if v >= 0 { return writeUInt(UInt64(v), to: &out) }
        if v >= -32 {
            out.append(UInt8(bitPattern: Int8(v)))
        } else if v >= Int64(Int8.min) {
            out += [0xD0, UInt8(bitPattern: Int8(v))]
        } else if v >= Int64(Int16.min) {
            out.append(0xD1)
            big(UInt64(UInt16(bitPattern: Int16(v))), 2, &out)
        } else if v >= Int64(Int32.min) {
            out.append(0xD2)
            big(UInt64(UInt32(bitPattern: Int32(v))), 4, &out)
        } else {
            out.append(0xD3)
            big(UInt64(bitPattern: v), 8, &out)
        }
    }

    static func writeUInt(_ v: UInt64, to out: inout [UInt8]) {
        if v < 0x80 {
            out.append(UInt8(v))
        } else if v <= 0xFF {
            out += [0xCC, UInt8(v)]
        } else if v <= 0xFFFF {
            out.append(0xCD)
            big(v, 2, &out)
        } else if v <= 0xFFFF_FFFF {
            out.append(0xCE)
            big(v, 4, &out)
        } else {
            out.append(0xCF)
            big(v, 8, &out)
        }
    }

    static func writeDouble(_ v: Double, to out: inout [UInt8]) {
        out.append(0xCB)
        big(v.bitPattern, 8, &out)
    }

    static func writeString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { utf8 in
            writeLength(utf8.count, fix: (0xA0, below: 32), bits8: 0xD9, bits16: 0xDA, bits32: 0xDB, to: &out)
            out.append(contentsOf: utf8)
        }
    }

    static func writeBinary(_ data: Data, to out: inout [UInt8]) {
        writeLength(data.count, fix: nil, bits8: 0xC4, bits16: 0xC5, bits32: 0xC6, to: &out)
        out.append(contentsOf: data)
    }

    static func writeArrayHeader(_ n: Int, to out: inout [UInt8]) {
        writeLength(n, fix: (0x90, below: 16), bits8: nil, bits16: 0xDC, bits32: 0xDD, to: &out)
    }

    static func writeMapHeader(_ n: Int, to out: inout [UInt8]) {
        writeLength(n, fix: (0x80, below: 16), bits8: nil, bits16: 0xDE, bits32: 0xDF, to: &out)
    }

    /// A length in the smallest form the type has: its fix form (tag | n), or a tag then 1, 2 or
    /// 4 big-endian bytes.
    private static func writeLength(
        _ n: Int, fix: (tag: UInt8, below: Int)?, bits8: UInt8?, bits16: UInt8, bits32: UInt8, to out: inout [UInt8]
    ) {
        if let fix, n < fix.below {
            out.append(fix.tag | UInt8(n))
        } else if let bits8, n <= 0xFF {
            out += [bits8, UInt8(n)]
        } else if n <= 0xFFFF {
            out.append(bits16)
            big(UInt64(n), 2, &out)
        } else {
            out.append(bits32)
            big(UInt64(n), 4, &out)
        }
    }

    private static func big(_ v: UInt64, _ bytes: Int, _ out: inout [UInt8]) {
        for i in stride(from: bytes - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(i * 8))) }
    }
}

// MARK: Decoding

/// Decodes MessagePack into a `Decodable` type.
struct MessagePackDecoder {
    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decode(type, from: bytes[...])
    }

    func decode<T: Decodable>(_ type: T.Type, from bytes: ArraySlice<UInt8>) throws -> T {
        try bytes.withUnsafeBufferPointer { buffer in
            let reader = MPReader(buffer)
            var position = 0
            let value = try reader.decodeValue(T.self, at: &position, codingPath: [])
            guard position == buffer.count else { throw reader.corrupt("trailing bytes after the value", []) }
            return value
        }
    }

    /// The MessagePack value as Foundation objects (`[String: Any]`, `[Any]`, `String`, `Int64`,
    /// `UInt64`, `Double`, `Bool`, `Data`, `NSNull`), for migrations that move fields by hand.
    func object(from bytes: [UInt8]) throws -> Any {
        try bytes.withUnsafeBufferPointer { buffer in
            var position = 0
            return try MPReader(buffer).anyValue(at: &position)
        }
    }
}

/// Reads MessagePack from a buffer that outlives the decoding (the decoder's `withUnsafeBufferPointer`).
struct MPReader {
    let bytes: UnsafeBufferPointer<UInt8>

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func corrupt(_ what: String, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: "MessagePack: \(what)"))
    }

    func byte(_ p: inout Int) throws -> UInt8 {
        guard p < bytes.count else { throw corrupt("unexpected end", []) }
        defer { p += 1 }
        return bytes[p]
    }

    func uint(_ p: inout Int, _ n: Int) throws -> UInt64 {
        guard p + n <= bytes.count else { throw corrupt("unexpected end", []) }
        var v: UInt64 = 0
        for i in 0..<n { v = v << 8 | UInt64(bytes[p + i]) }
        p += n
        return v
    }

    /// The length of a string at `p` (advancing past its header), or nil when it is not a string.
    func stringLength(_ p: inout Int) throws -> Int? {
        let b = bytes[p]
        switch b {
        case 0xA0...0xBF:
            p += 1
            return Int(b & 0x1F)
        case 0xD9:
            p += 1
            return Int(try uint(&p, 1))
        case 0xDA:
            p += 1
            return Int(try uint(&p, 2))
        case 0xDB:
            p += 1
            return Int(try uint(&p, 4))
        default: return nil
        }
    }

    func string(_ p: inout Int, _ path: [any CodingKey]) throws -> String {
        guard p < bytes.count, let n = try stringLength(&p), p + n <= bytes.count else { throw corrupt("expected a string", path) }
        defer { p += n }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[p..<(p + n)]), as: UTF8.self)
    }

    /// Array header: element count.
    func arrayCount(_ p: inout Int, _ path: [any CodingKey]) throws -> Int {
        let b = try byte(&p)
        switch b {
        case 0x90...0x9F: return Int(b & 0x0F)
        case 0xDC: return Int(try uint(&p, 2))
        case 0xDD: return Int(try uint(&p, 4))
        default: throw corrupt("expected an array", path)
        }
    }

    /// Map header: entry count.
    func mapCount(_ p: inout Int, _ path: [any CodingKey]) throws -> Int {
        let b = try byte(&p)
        switch b {
        case 0x80...0x8F: return Int(b & 0x0F)
        case 0xDE: return Int(try uint(&p, 2))
        case 0xDF: return Int(try uint(&p, 4))
        default: throw corrupt("expected a map", path)
        }
    }

    /// Moves `p` past one value.
    func skip(_ p: inout Int) throws {
        let b = try byte(&p)
        switch b {
        case 0x00...0x7F, 0xE0...0xFF, 0xC0, 0xC2, 0xC3: return
        case 0x80...0x8F: for _ in 0..<(Int(b & 0x0F) * 2) { try skip(&p) }
        case 0x90...0x9F: for _ in 0..<Int(b & 0x0F) { try skip(&p) }
        case 0xA0...0xBF: p += Int(b & 0x1F)
        case 0xC4, 0xD9: p += Int(try uint(&p, 1))
        case 0xC5, 0xDA: p += Int(try uint(&p, 2))
        case 0xC6, 0xDB: p += Int(try uint(&p, 4))
        case 0xCC, 0xD0: p += 1
        case 0xCD, 0xD1: p += 2
        case 0xCA, 0xCE, 0xD2: p += 4
        case 0xCB, 0xCF, 0xD3: p += 8
        case 0xDC: for _ in 0..<Int(try uint(&p, 2)) { try skip(&p) }
        case 0xDD: for _ in 0..<Int(try uint(&p, 4)) { try skip(&p) }
        case 0xDE: for _ in 0..<(Int(try uint(&p, 2)) * 2) { try skip(&p) }
        case 0xDF: for _ in 0..<(Int(try uint(&p, 4)) * 2) { try skip(&p) }
        default: throw corrupt("unsupported type byte \(b)", [])
        }
        guard p <= bytes.count else { throw corrupt("unexpected end", []) }
    }

    func isNil(_ p: Int) -> Bool { p < bytes.count && bytes[p] == 0xC0 }

    func bool(_ p: inout Int, _ path: [any CodingKey]) throws -> Bool {
        switch try byte(&p) {
        case 0xC2: return false
        case 0xC3: return true
        default: throw corrupt("expected a boolean", path)
        }
    }

    /// Any integer form as Int64 (a uint64 above Int64.max throws).
    func int(_ p: inout Int, _ path: [any CodingKey]) throws -> Int64 {
        let b = try byte(&p)
        switch b {
        case 0x00...0x7F: return Int64(b)
        case 0xE0...0xFF: return Int64(Int8(bitPattern: b))
        case 0xCC: return Int64(try uint(&p, 1))
        case 0xCD: return Int64(try uint(&p, 2))
        case 0xCE: return Int64(try uint(&p, 4))
        case 0xCF:
            let v = try uint(&p, 8)
            guard v <= UInt64(Int64.max) else { throw corrupt("integer out of range", path) }
            return Int64(v)
        case 0xD0: return Int64(Int8(bitPattern: UInt8(try uint(&p, 1))))
        case 0xD1: return Int64(Int16(bitPattern: UInt16(try uint(&p, 2))))
        case 0xD2: return Int64(Int32(bitPattern: UInt32(try uint(&p, 4))))
        case 0xD3: return Int64(bitPattern: try uint(&p, 8))
        default: throw corrupt("expected an integer", path)
        }
    }

    func uint64(_ p: inout Int, _ path: [any CodingKey]) throws -> UInt64 {
        if p < bytes.count, bytes[p] == 0xCF {
            p += 1
            return try uint(&p, 8)
        }
        let v = try int(&p, path)
        guard v >= 0 else { throw corrupt("negative value for an unsigned integer", path) }
        return UInt64(v)
    }

    func double(_ p: inout Int, _ path: [any CodingKey]) throws -> Double {
        guard p < bytes.count else { throw corrupt("unexpected end", path) }
        switch bytes[p] {
        case 0xCB:
            p += 1
            return Double(bitPattern: try uint(&p, 8))
        case 0xCA:
            p += 1
            return Double(Float(bitPattern: UInt32(try uint(&p, 4))))
        default:
            return Double(try int(&p, path))
        }
    }

    func binary(_ p: inout Int, _ path: [any CodingKey]) throws -> Data {
        let b = try byte(&p)
        let n: Int
        switch b {
        case 0xC4: n = Int(try uint(&p, 1))
        case 0xC5: n = Int(try uint(&p, 2))
        case 0xC6: n = Int(try uint(&p, 4))
        default: throw corrupt("expected binary data", path)
        }
        guard p + n <= bytes.count else { throw corrupt("unexpected end", path) }
        defer { p += n }
        return Data(UnsafeBufferPointer(rebasing: bytes[p..<(p + n)]))
    }

    func checkedInt<I: FixedWidthInteger>(_ p: inout Int, _ path: [any CodingKey]) throws -> I {
        if I.isSigned {
            guard let v = I(exactly: try int(&p, path)) else { throw corrupt("integer out of range for \(I.self)", path) }
            return v
        }
        guard let v = I(exactly: try uint64(&p, path)) else { throw corrupt("integer out of range for \(I.self)", path) }
        return v
    }

    /// Decodes the value at `p`. With `advance`, `p` ends past it (containers whose callers
    /// know where the next value starts pass false and save a walk over the value).
    func decodeValue<T: Decodable>(_ type: T.Type, at p: inout Int, codingPath: [any CodingKey], advance: Bool = true) throws -> T {
        // Fast paths for the common leaves; `Data` in its bin form.
        if T.self == String.self { return try string(&p, codingPath) as! T }
        if T.self == Int.self { return try checkedInt(&p, codingPath) as Int as! T }
        if T.self == Double.self { return try double(&p, codingPath) as! T }
        if T.self == Bool.self { return try bool(&p, codingPath) as! T }
        if T.self == Data.self { return try binary(&p, codingPath) as! T }
        let decoder = MPDecoder(reader: self, start: p, codingPath: codingPath)
        let value = try T(from: decoder)
        if advance { p = decoder.end() }
        return value
    }

    func anyValue(at p: inout Int) throws -> Any {
        guard p < bytes.count else { throw corrupt("unexpected end", []) }
        let b = bytes[p]
        switch b {
        case 0xC0:
            p += 1
            return NSNull()
        case 0xC2, 0xC3: return try bool(&p, [])
        case 0xCA, 0xCB: return try double(&p, [])
        case 0xCF: return try uint64(&p, [])
        case 0xC4, 0xC5, 0xC6: return try binary(&p, [])
        case 0xA0...0xBF, 0xD9, 0xDA, 0xDB: return try string(&p, [])
        case 0x90...0x9F, 0xDC, 0xDD:
            let n = try arrayCount(&p, [])
            return try (0..<n).map { _ in try anyValue(at: &p) }
        case 0x80...0x8F, 0xDE, 0xDF:
            let n = try mapCount(&p, [])
            var out: [String: Any] = [:]
            for _ in 0..<n {
                let key = try string(&p, [])
                out[key] = try anyValue(at: &p)
            }
            return out
        default: return try int(&p, [])
        }
    }
}

/// A decoder positioned on one value. `end()` is where that value ends, once a container has
/// been taken from it.
private final class MPDecoder: Decoder {
    let reader: MPReader
    let start: Int
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(reader: MPReader, start: Int, codingPath: [any CodingKey]) {
        self.reader = reader
        self.start = start
        self.codingPath = codingPath
    }

    /// The position after this decoder's value.
    func end() -> Int {
        var p = start
        _ = try? reader.skip(&p)
        return p
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try MPKeyedDecoder<Key>(reader: reader, start: start, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try MPUnkeyedDecoder(reader: reader, start: start, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        MPSingleDecoder(reader: reader, position: start, codingPath: codingPath)
    }
}

private struct MPKeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: MPReader
    var codingPath: [any CodingKey]
    /// Each entry: key bytes (start, length) and where its value starts.
    let entries: [(keyStart: Int, keyLength: Int, value: Int)]

    init(reader: MPReader, start: Int, codingPath: [any CodingKey]) throws {
        self.reader = reader
        self.codingPath = codingPath
        var p = start
        let n = try reader.mapCount(&p, codingPath)
        var entries: [(keyStart: Int, keyLength: Int, value: Int)] = []
        entries.reserveCapacity(n)
        for _ in 0..<n {
            guard p < reader.bytes.count, let length = try reader.stringLength(&p) else {
                throw reader.corrupt("map keys must be strings", codingPath)
            }
            let keyStart = p
            p += length
            entries.append((keyStart, length, p))
            try reader.skip(&p)
        }
        self.entries = entries
    }

    var allKeys: [Key] {
        entries.compactMap { e in
            Key(stringValue: String(decoding: UnsafeBufferPointer(rebasing: reader.bytes[e.keyStart..<(e.keyStart + e.keyLength)]), as: UTF8.self))
        }
    }

    private func position(_ key: Key) -> Int? {
        var name = key.stringValue
        return name.withUTF8 { utf8 in
            guard let wanted = utf8.baseAddress, utf8.count > 0 else { return entries.first { $0.keyLength == 0 }?.value }
            for e in entries where e.keyLength == utf8.count {
                if memcmp(reader.bytes.baseAddress! + e.keyStart, wanted, e.keyLength) == 0 { return e.value }
            }
            return nil
        }
    }

    private func require(_ key: Key) throws -> Int {
        guard let p = position(key) else {
            throw DecodingError.keyNotFound(
                key, DecodingError.Context(codingPath: codingPath, debugDescription: "no value for '\(key.stringValue)'"))
        }
        return p
    }

    func contains(_ key: Key) -> Bool { position(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { reader.isNil(try require(key)) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        var p = try require(key)
        return try reader.bool(&p, codingPath + [key])
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        var p = try require(key)
        return try reader.string(&p, codingPath + [key])
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        var p = try require(key)
        return try reader.double(&p, codingPath + [key])
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        var p = try require(key)
        return Float(try reader.double(&p, codingPath + [key]))
    }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    private func integer<I: FixedWidthInteger>(_ key: Key) throws -> I {
        var p = try require(key)
        return try reader.checkedInt(&p, codingPath + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        var p = try require(key)
        return try reader.decodeValue(T.self, at: &p, codingPath: codingPath + [key], advance: false)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard var p = position(key), !reader.isNil(p) else { return nil }
        return try reader.decodeValue(T.self, at: &p, codingPath: codingPath + [key], advance: false)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try MPKeyedDecoder<NestedKey>(reader: reader, start: try require(key), codingPath: codingPath + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try MPUnkeyedDecoder(reader: reader, start: try require(key), codingPath: codingPath + [key])
    }

    func superDecoder() throws -> any Decoder {
        MPDecoder(reader: reader, start: try require(Key(stringValue: "super")!), codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        MPDecoder(reader: reader, start: try require(key), codingPath: codingPath + [key])
    }
}

private struct MPUnkeyedDecoder: UnkeyedDecodingContainer {
    let reader: MPReader
    var codingPath: [any CodingKey]
    let count: Int?
    var currentIndex = 0
    var position: Int
    var isAtEnd: Bool { currentIndex >= count! }

    init(reader: MPReader, start: Int, codingPath: [any CodingKey]) throws {
        self.reader = reader
        self.codingPath = codingPath
        var p = start
        count = try reader.arrayCount(&p, codingPath)
        position = p
    }

    private mutating func next<T>(_ body: (MPReader, [any CodingKey], inout Int) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                T.self, DecodingError.Context(codingPath: codingPath, debugDescription: "the array has no more elements"))
        }
        var p = position
        let value = try body(reader, codingPath, &p)
        position = p
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, reader.isNil(position) else { return false }
        position += 1
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next { r, path, p in try r.bool(&p, path) } }
    mutating func decode(_ type: String.Type) throws -> String { try next { r, path, p in try r.string(&p, path) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next { r, path, p in try r.double(&p, path) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next { r, path, p in Float(try r.double(&p, path)) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next { r, path, p in try r.checkedInt(&p, path) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next { r, path, p in try r.checkedInt(&p, path) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next { r, path, p in try r.checkedInt(&p, path) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next { r, path, p in try r.checkedInt(&p, path) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next { r, path, p in try r.decodeValue(T.self, at: &p, codingPath: path) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next { r, path, p in
            let c = try MPKeyedDecoder<NestedKey>(reader: r, start: p, codingPath: path)
            try r.skip(&p)
            return KeyedDecodingContainer(c)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next { r, path, p in
            let c = try MPUnkeyedDecoder(reader: r, start: p, codingPath: path)
            try r.skip(&p)
            return c
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next { r, path, p in
            let d = MPDecoder(reader: r, start: p, codingPath: path)
            try r.skip(&p)
            return d
        }
    }
}

private struct MPSingleDecoder: SingleValueDecodingContainer {
    let reader: MPReader
    var position: Int
    var codingPath: [any CodingKey]

    func decodeNil() -> Bool { reader.isNil(position) }
    func decode(_ type: Bool.Type) throws -> Bool {
        var p = position
        return try reader.bool(&p, codingPath)
    }
    func decode(_ type: String.Type) throws -> String {
        var p = position
        return try reader.string(&p, codingPath)
    }
    func decode(_ type: Double.Type) throws -> Double {
        var p = position
        return try reader.double(&p, codingPath)
    }
    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    private func integer<I: FixedWidthInteger>() throws -> I {
        var p = position
        return try reader.checkedInt(&p, codingPath)
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        var p = position
        return try reader.decodeValue(T.self, at: &p, codingPath: codingPath, advance: false)
    }
}
