@testable import CairnEngine
import Foundation
import Logging
import RESP
import Rocks
import Testing

/// A new collection's members go to RocksDB ahead of its metadata, in pieces
/// (`NewCollection`): compaction keeps them while the in-flight record says the collection is
/// being written, the result is whole, and a crash in the middle leaves nothing reachable.
@Suite struct NewCollectionTests {
    /// Member entries of version `version` of set `key`, with or without the in-flight record,
    /// and no metadata: what a crash or a compaction meets between the first piece and the last.
    private func writeHalfACollection(_ engine: Engine, key: String, version: UInt64, inFlight: Bool) throws {
        let db = engine.database
        let meta = try #require(db.family(named: Engine.metaFamilyName))
        let prefix = MemberKeys.prefix(family: engine.defaultFamily.name, key: Array(key.utf8), version: version)
        var batch = WriteBatch()
        if inFlight { batch.put(Engine.inFlightKey(prefix), [], in: meta) }
        for i in 0..<100 { batch.put(MemberKeys.entryKey(prefix, .member, Array("m\(i)".utf8)), [], in: engine.defaultFamily.members) }
        try db.write(batch)
    }

    private func memberEntries(_ engine: Engine, key: String, version: UInt64) throws -> Int {
        let prefix = MemberKeys.prefix(family: engine.defaultFamily.name, key: Array(key.utf8), version: version)
        return try engine.database.entries(withPrefix: prefix, in: engine.defaultFamily.members).count
    }

    private func compactMembers(_ engine: Engine) throws {
        try engine.database.flush(engine.defaultFamily.members)
        try engine.database.compactRange(in: engine.defaultFamily.members)
    }

    @Test func compactionKeepsTheMembersOfACollectionBeingWritten() throws {
        let h = try EngineHarness()
        try writeHalfACollection(h.engine, key: "being-written", version: 7, inFlight: true)
        try writeHalfACollection(h.engine, key: "abandoned", version: 8, inFlight: false)
        try compactMembers(h.engine)
        #expect(try memberEntries(h.engine, key: "being-written", version: 7) == 100)
        #expect(try memberEntries(h.engine, key: "abandoned", version: 8) == 0, "members no key reaches are dropped")
    }

    @Test func aBigStoreGoesAheadInPiecesAndIsWhole() throws {
        let h = try EngineHarness()
        for key in ["a", "b"] {
            for start in stride(from: 0, to: 12_000, by: 1000) {
                let offset = key == "a" ? 0 : 6000
                #expect(h.run([Array("SADD".utf8), Array(key.utf8)] + (start..<start + 1000).map { Array("m\(String(format: "%06d", $0 + offset))".utf8) })
                        == .integer(1000))
            }
        }
        // As the server runs a big command: off the worker, claiming its keys (LongWork.swift).
        h.session.runsLong = true
        let before = h.engine.stats.piecewiseWrites.value
        #expect(h.run("SUNIONSTORE", "u", "a", "b") == .integer(18_000))
        #expect(h.engine.stats.piecewiseWrites.value == before + 1, "the members went ahead of the metadata")
        #expect(h.run("SCARD", "u") == .integer(18_000))
        #expect(h.run("SISMEMBER", "u", "m017999") == .integer(1))
        #expect(h.run("SINTERCARD", "2", "u", "a") == .integer(12_000))
        let meta = try #require(h.engine.database.family(named: Engine.metaFamilyName))
        #expect(try h.engine.database.entries(withPrefix: Engine.inFlightPrefix, in: meta).isEmpty, "the last write deleted the in-flight record")
        // Compaction keeps every member of the finished collection.
        try compactMembers(h.engine)
        #expect(h.run("SINTERCARD", "2", "u", "b") == .integer(12_000))
        // The same with the destination among the inputs, and a sorted set, and COPY.
        #expect(h.run("SUNIONSTORE", "a", "a", "b") == .integer(18_000))
        #expect(h.run("ZUNIONSTORE", "z", "2", "a", "b") == .integer(18_000))
        #expect(h.run("ZSCORE", "z", "m006000") == .bulk("2"))
        #expect(h.run("ZCARD", "z") == .integer(18_000))
        #expect(h.run("ZRANGE", "z", "-1", "-1") == .array([.bulk("m017999")]))
        #expect(h.run("COPY", "z", "z2") == .integer(1))
        #expect(h.run("ZCOUNT", "z2", "2", "2") == .integer(12_000))
        #expect(h.engine.stats.piecewiseWrites.value == before + 4)
        #expect(try h.engine.database.entries(withPrefix: Engine.inFlightPrefix, in: meta).isEmpty)
    }

    @Test func aStartDropsTheMembersOfACollectionACrashLeftHalfWritten() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-new-collection-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = Configuration()
        config.dir = dir
        do {
            let engine = try Engine(configuration: config, logger: Logger(label: "test"))
            try writeHalfACollection(engine, key: "crashed", version: 9, inFlight: true)
            try engine.close()
        }
        let engine = try Engine(configuration: config, logger: Logger(label: "test"))
        defer { try? engine.close() }
        let meta = try #require(engine.database.family(named: Engine.metaFamilyName))
        #expect(try engine.database.entries(withPrefix: Engine.inFlightPrefix, in: meta).isEmpty)
        try compactMembers(engine)
        #expect(try memberEntries(engine, key: "crashed", version: 9) == 0)
    }
}
