@testable import CairnStore
import Testing

/// The exact bytes of the store's big-endian encodings (index keys, body headers): a change that
/// moves one byte fails here rather than in a store written before it.
@Suite struct EncodedBytesTests {
    @Test func integerAndDoubleKeys() {
        #expect(5.keyBytes == [0x20, 0x80, 0, 0, 0, 0, 0, 0, 5])
        #expect((-2).keyBytes == [0x20, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE])
        #expect(1.0.keyBytes == [0x21, 0xBF, 0xF0, 0, 0, 0, 0, 0, 0])
        #expect((-1.0).keyBytes == [0x21, 0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    }

    @Test func referenceKeyParsesBack() {
        var key: [UInt8] = []
        "Target".appendKey(to: &key)
        7.appendKey(to: &key)
        "Owner".appendKey(to: &key)
        (-3).appendKey(to: &key)
        5.appendKey(to: &key)
        let entry = ReferenceEntry(key)
        #expect(entry?.ownerType == "Owner" && entry?.relationship == -3 && entry?.ownerKey == 5.keyBytes)
    }

    @Test func bodyHeader() {
        let header = BodyHeader(flags: 1, schemaVersion: 0x0203, revision: 0x0102_0304_0506_0708)
        #expect(header.bytes == [1, 1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(BodyHeader(header.bytes) == header)
    }
}
