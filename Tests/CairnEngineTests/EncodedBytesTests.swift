@testable import CairnEngine
import Testing

/// The exact bytes of the big-endian encodings the engine writes to disk (docs/value-format.md)
/// and to DUMP payloads: a change to the codec that moves one byte fails here rather than in a
/// database or a payload written before it.
@Suite struct EncodedBytesTests {
    static let pattern: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
    static let minusTwo: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]

    @Test func valueHeader() {
        #expect(ValueFormat.encode([7]) == [0x10, 0, 7])
        #expect(ValueFormat.encode([7], expiresAt: 0x0102_0304_0506_0708) == [0x10, 1] + Self.pattern + [7])
        #expect(ValueFormat.encode([7], expiresAt: -2) == [0x10, 1] + Self.minusTwo + [7])
        let h = ValueFormat.header(of: [0x13, 1] + Self.pattern + [9])
        #expect(h == ValueFormat.Header(type: 3, expiresAt: 0x0102_0304_0506_0708, payloadOffset: 10))
        #expect(ValueFormat.header(of: [0x10, 1] + Self.minusTwo)?.expiresAt == -2)
        #expect(ValueFormat.header(of: [0x10, 1, 0, 0, 0, 0, 0, 0, 0]) == nil, "an expiry one byte short")
    }

    @Test func collectionMetadata() {
        var list = CollectionMetadata(type: .list, version: 0x0102_0304_0506_0708, size: 3)
        list.tail = CollectionMetadata.listStart + 3
        let payload = list.payload
        #expect(payload == Self.pattern + [0, 0, 0, 0, 0, 0, 0, 3] + [0x80, 0, 0, 0, 0, 0, 0, 0] + [0x80, 0, 0, 0, 0, 0, 0, 3])
        let back = CollectionMetadata(type: .list, payload: payload, expiresAt: nil)
        #expect(back?.version == 0x0102_0304_0506_0708 && back?.size == 3)
        #expect(back?.head == CollectionMetadata.listStart && back?.tail == CollectionMetadata.listStart + 3)
        let hash = CollectionMetadata(type: .hash, version: 9, size: 0x0100)
        #expect(hash.payload == [0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 1, 0])
    }

    @Test func memberKeys() {
        let prefix = MemberKeys.prefix(family: "f", key: [9, 8], version: 0x0102_0304_0506_0708)
        #expect(prefix == [0, 1, 0x66, 0, 0, 0, 2, 9, 8] + Self.pattern)
        let parsed = (prefix + [1]).withUnsafeBytes { MemberKeys.parse($0) }
        #expect(parsed?.family == "f" && parsed?.key == [9, 8] && parsed?.version == 0x0102_0304_0506_0708)
        #expect(parsed?.tagOffset == prefix.count)
        #expect(MemberKeys.familyRange("f").lower == [0, 1, 0x66])
        #expect(MemberKeys.position(0x8000_0000_0000_0001) == [0x80, 0, 0, 0, 0, 0, 0, 1])
    }

    @Test func scores() {
        // Order-preserving: the sign bit set for positive numbers, every bit flipped for negative.
        #expect(MemberKeys.orderedScore(1) == [0xBF, 0xF0, 0, 0, 0, 0, 0, 0])
        #expect(MemberKeys.orderedScore(-1) == [0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(MemberKeys.orderedScore(0) == [0x80, 0, 0, 0, 0, 0, 0, 0])
        #expect(MemberKeys.orderedScore(-0.0) == [0x80, 0, 0, 0, 0, 0, 0, 0])
        #expect(MemberKeys.score(ordered: [0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == -1)
        // A member's value: the IEEE bits as they are.
        #expect(MemberKeys.scoreValue(-1.5) == [0xBF, 0xF8, 0, 0, 0, 0, 0, 0])
        #expect(MemberKeys.score(value: [0xBF, 0xF8, 0, 0, 0, 0, 0, 0]) == -1.5)
    }

    @Test func dumpLengths() throws {
        func written(_ n: Int) -> [UInt8] {
            var w = DumpWriter()
            w.length(n)
            return w.bytes
        }
        #expect(written(63) == [63])
        #expect(written(300) == [0x41, 0x2C])
        #expect(written(70000) == [0x80, 0, 0x01, 0x11, 0x70])
        #expect(written(1 << 32 | 5) == [0x81, 0, 0, 0, 1, 0, 0, 0, 5])
        for n in [63, 300, 70000, 1 << 32 | 5] {
            var r = RDBReader(written(n))
            #expect(try r.length() == (UInt64(n), false))
        }
    }
}
