@testable import CairnEngine
import RESP
import Rocks
import Testing

/// RENAME of a collection moves its metadata only (CollectionMoves.swift): the members stay
/// under their home key, every command finds them through the metadata, and compaction keeps
/// them for as long as the collection lives wherever it went, and drops them (and the record of
/// the move) once it is gone.
@Suite struct RenameTests {
    /// Member entries of the default family.
    static func memberEntries(_ h: EngineHarness) throws -> Int { try CollectionStorageTests.memberEntries(h) }

    /// `moved` records in cairn.meta.
    static func movedRecords(_ h: EngineHarness) throws -> Int {
        let meta = h.engine.database.family(named: Engine.metaFamilyName)!
        return try h.engine.database.entries(withPrefix: CollectionMoves.recordPrefix, in: meta).count
    }

    static func compactEverything(_ h: EngineHarness) throws {
        h.run("COMPACT")
        try h.engine.database.compactRange(in: h.engine.database.family(named: Engine.metaFamilyName)!)
    }

    static func fields(_ value: RESPValue) -> [String] {
        guard case .array(let items) = value else { return [] }
        return items.compactMap { if case .bulkString(let b) = $0 { String(decoding: b, as: UTF8.self) } else { nil } }
    }

    @Test func aRenamedCollectionKeepsItsMembersThroughCompactionAndChains() throws {
        let h = try EngineHarness()
        for i in 0..<100 { h.run("HSET", "h", "f\(i)", "v\(i)") }
        h.run("RPUSH", "l", "a", "b", "c")
        h.run("ZADD", "z", "1", "one", "2", "two")
        h.run("SADD", "s", "x", "y")
        for (from, to) in [("h", "h2"), ("l", "l2"), ("z", "z2"), ("s", "s2")] {
            #expect(h.run("RENAME", from, to) == .ok)
            #expect(h.run("EXISTS", from) == .integer(0))
        }
        #expect(try Self.movedRecords(h) == 4)
        // A new collection under an old name, beside the moved one.
        h.run("HSET", "h", "new", "1")
        try Self.compactEverything(h)
        #expect(try Self.memberEntries(h) == 100 + 3 + 4 + 2 + 1)
        #expect(h.run("HLEN", "h2") == .integer(100))
        #expect(h.run("HGET", "h2", "f42") == .bulk("v42"))
        #expect(h.run("HGETALL", "h") == .array([.bulk("new"), .bulk("1")]))
        #expect(Self.fields(h.run("LRANGE", "l2", "0", "-1")) == ["a", "b", "c"])
        #expect(h.run("ZSCORE", "z2", "two") == .bulk("2"))
        #expect(h.run("SISMEMBER", "s2", "y") == .integer(1))
        // Writes to the moved collection go with its members.
        #expect(h.run("RPUSH", "l2", "d") == .integer(4))
        #expect(h.run("LPOP", "l2") == .bulk("a"))
        #expect(h.run("ZADD", "z2", "3", "three") == .integer(1))
        #expect(h.run("HSET", "h2", "f0", "changed") == .integer(0))
        // A chain of renames, then back home.
        #expect(h.run("RENAME", "h2", "h3") == .ok)
        #expect(try Self.movedRecords(h) == 4)
        try Self.compactEverything(h)
        #expect(h.run("HGET", "h3", "f0") == .bulk("changed"))
        #expect(h.run("DEL", "h") == .integer(1))
        #expect(h.run("RENAME", "h3", "h") == .ok)
        #expect(try Self.movedRecords(h) == 3)
        try Self.compactEverything(h)
        #expect(h.run("HLEN", "h") == .integer(100))
        #expect(h.run("HGET", "h", "f99") == .bulk("v99"))
        // The collection survives a restart (the home is in its metadata).
        #expect(h.run("DUMP", "z2") != .null)
    }

    @Test func membersAndRecordsOfAMovedCollectionGoOnceItIsGone() throws {
        let h = try EngineHarness()
        for i in 0..<50 { h.run("SADD", "s", "m\(i)") }
        h.run("RENAME", "s", "t")
        #expect(h.run("DEL", "t") == .integer(1))
        h.run("HSET", "x", "f", "v")
        h.run("RENAME", "x", "y")
        h.run("SET", "y", "now a string")  // overwrites the moved hash
        try Self.compactEverything(h)
        #expect(try Self.memberEntries(h) == 0)
        #expect(try Self.movedRecords(h) == 0)
    }

    @Test func renameOverAMovedCollectionDropsItsRecord() throws {
        let h = try EngineHarness()
        h.run("SADD", "a", "1")
        h.run("SADD", "b", "2")
        h.run("RENAME", "a", "a2")
        h.run("RENAME", "b", "b2")
        #expect(try Self.movedRecords(h) == 2)
        #expect(h.run("RENAME", "b2", "a2") == .ok)
        #expect(try Self.movedRecords(h) == 1)
        #expect(h.run("SMEMBERS", "a2") == .array([.bulk("2")]))
        try Self.compactEverything(h)
        #expect(try Self.memberEntries(h) == 1)
    }

    @Test func renameInsideExecCopiesAndStaysCorrect() throws {
        let h = try EngineHarness()
        for i in 0..<10 { h.run("RPUSH", "l", "e\(i)") }
        #expect(h.run("MULTI") == .ok)
        h.run("RENAME", "l", "m")
        h.run("RPUSH", "m", "last")
        #expect(h.run("EXEC") == .array([.ok, .integer(11)]))
        #expect(h.run("LINDEX", "m", "10") == .bulk("last"))
        try Self.compactEverything(h)
        #expect(h.run("LLEN", "m") == .integer(11))
        #expect(try Self.movedRecords(h) == 0)
    }
}
