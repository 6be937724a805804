@testable import CairnEngine
import RESP
import Rocks
import Testing

/// How collections are stored: one metadata value under the key, members in the members
/// family under (family, key, version), and members of deleted collections dropped by
/// compaction (`MembersCompactionFilter`).
@Suite struct CollectionStorageTests {
    /// Entries of the members family.
    static func memberEntries(_ h: EngineHarness) throws -> Int {
        var n = 0
        try h.engine.database.withCursor(in: h.engine.defaultFamily.members) { c in
            c.seekToFirst()
            while c.isValid { n += 1; c.next() }
        }
        return n
    }

    @Test func compactionDropsTheMembersOfDeletedAndReplacedCollections() throws {
        let h = try EngineHarness()
        for i in 0..<300 { h.run("HSET", "gone", "f\(i)", "v") }
        for i in 0..<200 { h.run("HSET", "replaced", "f\(i)", "v") }
        for i in 0..<100 { h.run("HSET", "kept", "f\(i)", "v") }
        h.run("COMPACT")
        #expect(try Self.memberEntries(h) == 600)
        #expect(h.run("DEL", "gone") == .integer(1))
        #expect(h.run("SET", "replaced", "now a string") == .ok)
        #expect(h.run("HLEN", "kept") == .integer(100))
        h.run("COMPACT")
        #expect(try Self.memberEntries(h) == 100)
        #expect(h.run("HLEN", "kept") == .integer(100))
        #expect(h.run("HGET", "kept", "f42") == .bulk("v"))
    }

    @Test func memberKeysParseBack() {
        let prefix = MemberKeys.prefix(family: "fam", key: [0, 1, 2], version: 0x0102_0304_0506_0708)
        let key = prefix + [MemberKeys.Tag.member.rawValue, 9, 9]
        let parsed = key.withUnsafeBytes { MemberKeys.parse($0) }
        #expect(parsed?.family == "fam")
        #expect(parsed?.key == [0, 1, 2])
        #expect(parsed?.version == 0x0102_0304_0506_0708)
        #expect(parsed?.tagOffset == prefix.count)
    }

    @Test func orderedScoresSortAsNumbers() {
        let scores: [Double] = [-.infinity, -1e300, -2.5, -1, -0.0, 0, 1e-300, 1, 2.5, 1e300, .infinity]
        let encoded = scores.map(MemberKeys.orderedScore)
        #expect(encoded == encoded.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(encoded.map(MemberKeys.score(ordered:)) == scores.map { $0 == 0 ? 0 : $0 })
    }
}
