@testable import CairnEngine
import Testing

/// The DUMP payload codec against payloads captured from redis-server 7.0's DUMP.
@Suite struct DumpPayloadTests {
    /// Collects what a payload decodes to.
    struct Collected: RDBSink {
        var type: KeyType? = nil
        var items: [String] = []
        mutating func string(_ value: [UInt8]) throws(RDBReader.Malformed) { type = .string; items.append(text(value)) }
        mutating func begin(_ type: KeyType) throws(RDBReader.Malformed) { self.type = type }
        mutating func element(_ value: [UInt8]) throws(RDBReader.Malformed) { items.append(text(value)) }
        mutating func field(_ name: [UInt8], _ value: [UInt8]) throws(RDBReader.Malformed) { items.append(text(name) + "=" + text(value)) }
        mutating func scored(_ member: [UInt8], _ score: Double) throws(RDBReader.Malformed) { items.append(text(member) + "@" + String(score)) }
        func text(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self) }
    }

    static func decode(_ payload: [UInt8]) throws -> Collected {
        #expect(DumpPayload.isIntact(payload))
        var sink = Collected()
        try DumpPayload.decode(payload, into: &sink)
        return sink
    }

    @Test func crc64IsRedisJones() {
        #expect(CRC64.checksum(Array("123456789".utf8)) == 0xe9c6_d914_c4b8_d9ca)
    }

    @Test func lzfRoundsTheRedisString() throws {
        // Redis compressed "a" * 100 to this (type 0, LZF-encoded string).
        let big: [UInt8] = [0, 195, 9, 64, 100, 1, 97, 97, 224, 87, 0, 1, 97, 97, 10, 0, 232, 163, 181, 7, 176, 109, 242, 113]
        let got = try Self.decode(big)
        #expect(got.items == [String(repeating: "a", count: 100)])
        #expect(LZF.decompress([0x01, 0x61, 0x62, 0x20, 0x01], length: 5) == Array("ababa".utf8))
        #expect(LZF.decompress([0x05, 0x61], length: 6) == nil, "a literal run past the input")
    }

    @Test func redisEncodingsDecode() throws {
        #expect(try Self.decode([0, 193, 57, 48, 10, 0, 157, 148, 234, 39, 147, 252, 8, 185]).items == ["12345"])
        #expect(try Self.decode([0, 5, 104, 101, 108, 108, 111, 10, 0, 99, 114, 223, 118, 101, 52, 32, 10]).items == ["hello"])
        let list = try Self.decode([18, 1, 2, 35, 35, 0, 0, 0, 7, 0, 129, 97, 2, 129, 98, 2, 1, 1, 2, 1, 222, 212, 2, 242, 112, 17, 1, 4, 244, 0, 0, 0, 0, 0, 1, 0, 0, 9, 255, 10, 0, 210, 100, 119, 196, 159, 141, 214, 57])
        #expect(list.type == .list && list.items == ["a", "b", "1", "2", "-300", "70000", "1099511627776"])
        let intset = try Self.decode([11, 20, 4, 0, 0, 0, 3, 0, 0, 0, 254, 255, 255, 255, 1, 0, 0, 0, 112, 17, 1, 0, 10, 0, 48, 82, 125, 248, 204, 49, 31, 59])
        #expect(intset.type == .set && intset.items == ["-2", "1", "70000"])
        let zset = try Self.decode([17, 20, 20, 0, 0, 0, 4, 0, 129, 97, 2, 1, 1, 129, 98, 2, 131, 50, 46, 53, 4, 255, 10, 0, 212, 76, 110, 164, 246, 68, 217, 215])
        #expect(zset.type == .zset && zset.items == ["a@1.0", "b@2.5"])
        let hash = try Self.decode([16, 18, 18, 0, 0, 0, 4, 0, 129, 102, 2, 129, 118, 2, 129, 103, 2, 1, 1, 255, 10, 0, 35, 193, 165, 227, 93, 250, 232, 28])
        #expect(hash.type == .hash && hash.items == ["f=v", "g=1"])
    }

    @Test func writerOutputReadsBack() throws {
        var w = DumpWriter(.zset2)
        w.length(2)
        w.string(Array("m".utf8)); w.binaryDouble(-1.5)
        w.string(Array(repeating: UInt8(ascii: "x"), count: 20000)); w.binaryDouble(.infinity)
        let payload = w.finish()
        #expect(payload.suffix(10).prefix(2) == [10, 0])
        let got = try Self.decode(payload)
        #expect(got.items == ["m@-1.5", String(repeating: "x", count: 20000) + "@inf"])
        var broken = payload
        broken[3] ^= 1
        #expect(!DumpPayload.isIntact(broken))
    }

    @Test func malformedBodiesAreRefused() {
        func sealed(_ body: [UInt8]) -> [UInt8] {
            var bytes = body + [10, 0]
            let crc = CRC64.checksum(bytes)
            for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt64(i)))) }
            return bytes
        }
        for body: [UInt8] in [[0, 5, 104, 105], [2, 0], [4, 1, 1, 102], [2, 2, 1, 97, 1, 97]] {
            var sink = RestoreLikeSink()
            #expect(throws: RDBReader.Malformed.self) { try DumpPayload.decode(sealed(body), into: &sink) }
        }
    }

    /// Refuses duplicates as RESTORE's sink does.
    struct RestoreLikeSink: RDBSink {
        var seen: Set<[UInt8]> = []
        mutating func string(_ value: [UInt8]) throws(RDBReader.Malformed) {}
        mutating func begin(_ type: KeyType) throws(RDBReader.Malformed) {}
        mutating func element(_ value: [UInt8]) throws(RDBReader.Malformed) {
            guard seen.insert(value).inserted else { throw RDBReader.Malformed() }
        }
        mutating func field(_ name: [UInt8], _ value: [UInt8]) throws(RDBReader.Malformed) {}
        mutating func scored(_ member: [UInt8], _ score: Double) throws(RDBReader.Malformed) {}
    }
}
