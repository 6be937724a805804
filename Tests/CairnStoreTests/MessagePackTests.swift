@testable import CairnStore
import CairnTestSupport
import Foundation
import Testing

/// The MessagePack encoding of object bodies: exact bytes for spec examples, and round trips of
/// every shape Codable produces.
@Suite struct MessagePackTests {
    struct Inner: Codable, Equatable {
        var name: String
        var tags: [String]
    }

    enum Mood: String, Codable { case happy, sad }

    struct Everything: Codable, Equatable {
        var int = 0
        var negative = -1
        var extremes: [Int] = [Int.min, Int.min + 1, -129, -128, -33, -32, -1, 0, 127, 128, 255, 256, 65535, 65536, Int.max]
        var unsigned: UInt64 = .max
        var small: Int8 = -128
        var double = -0.0
        var doubles: [Double] = [.infinity, -.infinity, .leastNonzeroMagnitude, 1e300, 3.25]
        var float: Float = 1.5
        var flag = true
        var text = "héllo\0wörld 東京"
        var long = String(repeating: "x", count: 70_000)
        var missing: String? = nil
        var present: Int? = 5
        var data = Data([0, 1, 2, 255])
        var bigData = Data(repeating: 7, count: 300)
        var date = Date(timeIntervalSince1970: 1_234_567.5)
        var uuid = UUID()
        var url = URL(string: "https://example.com/a?b=c")!
        var mood = Mood.sad
        var inner = Inner(name: "n", tags: ["a", "b"])
        var inners = (0..<20).map { Inner(name: "i\($0)", tags: Array(repeating: "t", count: $0)) }
        var map: [String: Int] = Dictionary(uniqueKeysWithValues: (0..<40).map { ("k\($0)", $0) })
        var intKeys: [Int: String] = [1: "one", -2: "minus two"]
        var nested: [[Int?]] = [[1, nil, 3], [], [nil]]
        var set: Set<String> = ["x", "y"]
        var empty: [String] = []
        var emptyKey: [String: Int] = ["": 1]
    }

    @Test func roundTripsEveryCodableShape() throws {
        let value = Everything()
        let bytes = try MessagePackEncoder().encode(value)
        #expect(try MessagePackDecoder().decode(Everything.self, from: bytes) == value)
        // The dictionary view sees the same fields.
        let object = try #require(try MessagePackDecoder().object(from: bytes) as? [String: Any])
        #expect(object["text"] as? String == value.text)
        #expect(object["negative"] as? Int64 == -1)
        #expect(object["missing"] == nil)  // nil optionals are left out, as JSONEncoder does
    }

    @Test func bytesFollowTheSpecification() throws {
        struct One: Codable { var a = 1 }
        #expect(try MessagePackEncoder().encode(One()) == [0x81, 0xA1, 0x61, 0x01])
        #expect(try MessagePackEncoder().encode([-1, -33, 128, 300]) == [0x94, 0xFF, 0xD0, 0xDF, 0xCC, 0x80, 0xCD, 0x01, 0x2C])
        #expect(try MessagePackEncoder().encode(1.0) == [0xCB, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0])
        #expect(try MessagePackEncoder().encode(Optional<Int>.none) == [0xC0])
        #expect(try MessagePackEncoder().encode("abc") == [0xA3, 0x61, 0x62, 0x63])
        #expect(try MessagePackEncoder().encode(Data([9])) == [0xC4, 0x01, 0x09])
    }

    @Test func malformedInputThrowsInsteadOfCrashing() throws {
        let good = try MessagePackEncoder().encode(Everything())
        var rng = SeededGenerator(seed: 11)
        for _ in 0..<300 {
            var bad = good
            switch rng.next() % 3 {
            case 0: bad = Array(bad.prefix(Int(rng.next() % UInt64(bad.count))))
            case 1: bad[Int(rng.next() % UInt64(bad.count))] = UInt8(truncatingIfNeeded: rng.next())
            default: bad.append(UInt8(truncatingIfNeeded: rng.next()))
            }
            _ = try? MessagePackDecoder().decode(Everything.self, from: bad)
        }
        #expect(throws: (any Error).self) { try MessagePackDecoder().decode(Everything.self, from: [0x81, 0xA1]) }
        #expect(throws: (any Error).self) { try MessagePackDecoder().decode(Int8.self, from: [0xCC, 0xFF]) }
    }
}
