import Rocks
import Testing

@Suite struct ColumnFamilyTests {
    @Test func familiesSurviveReopen() throws {
        let dir = TemporaryDirectory()
        var db = try Database.open(at: dir.path, options: testOptions())
        let users = try db.createFamily(named: "users")
        try db.put(b("k"), b("in users"), in: users)
        try db.put(b("k"), b("in default"))
        try db.close()
        db = try Database.open(at: dir.path, options: testOptions())
        #expect(db.families.map(\.name) == ["default", "users"])
        #expect(s(try db.get(b("k"), in: db.family(named: "users"))) == "in users")
        #expect(s(try db.get(b("k"))) == "in default")
        try db.close()
    }

    @Test func dropRemovesDataAndFreesTheName() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.path, options: testOptions())
        let tmp = try db.createFamily(named: "tmp")
        for i in 0..<100 { try db.put(b("k\(i)"), b("v"), in: tmp) }
        try db.dropFamily(tmp)
        #expect(tmp.isDropped)
        do {
            _ = try db.get(b("k1"), in: tmp)
            Issue.record("a dropped family must refuse reads")
        } catch StorageError.Code.familyDropped {}
        let again = try db.createFamily(named: "tmp")
        #expect(try db.get(b("k1"), in: again) == nil)
        #expect(throws: StorageError.self) { try db.createFamily(named: "tmp") }
    }

    @Test func propertiesAndStatistics() throws {
        let dir = TemporaryDirectory()
        var o = testOptions()
        o.enableStatistics = true
        let db = try Database.open(at: dir.path, options: o)
        for i in 0..<100 { try db.put(b("k\(i)"), b("v")) }
        #expect((db.integerProperty("rocksdb.estimate-num-keys") ?? 0) > 0)
        #expect(db.property("rocksdb.stats")?.contains("Compaction") == true)
        #expect(db.statisticsText()?.contains("rocksdb.") == true)
    }
}
