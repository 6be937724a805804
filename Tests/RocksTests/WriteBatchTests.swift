import Rocks
import Testing

@Suite struct WriteBatchTests {
    @Test func atomicAcrossFamilies() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.path, options: testOptions())
        let users = try db.createFamily(named: "users")
        let index = try db.createFamily(named: "index")
        var batch = WriteBatch()
        batch.put(b("u1"), b("ann"), in: users)
        batch.put(b("ann"), b("u1"), in: index)
        batch.put(b("plain"), b("x"))
        batch.delete(b("nothing"))
        #expect(batch.count == 4)
        try db.write(batch)
        #expect(s(try db.get(b("u1"), in: users)) == "ann")
        #expect(s(try db.get(b("ann"), in: index)) == "u1")
        #expect(s(try db.get(b("plain"))) == "x")
    }

    @Test func aBatchWithAnInvalidPartWritesNothing() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.path, options: testOptions())
        let live = try db.createFamily(named: "live")
        let doomed = try db.createFamily(named: "doomed")
        var batch = WriteBatch()
        batch.put(b("k1"), b("v"), in: live)
        batch.put(b("k2"), b("v"))
        batch.put(b("k3"), b("v"), in: doomed)
        try db.dropFamily(doomed)
        #expect(throws: StorageError.self) { try db.write(batch) }
        #expect(try db.get(b("k1"), in: live) == nil)
        #expect(try db.get(b("k2")) == nil)
    }

    @Test func deleteRangeInBatchAndDirect() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.path, options: testOptions())
        for i in 0..<10 { try db.put(b("k\(i)"), b("v")) }
        var batch = WriteBatch()
        batch.deleteRange(from: b("k2"), to: b("k5"))
        try db.write(batch)
        try db.deleteRange(from: b("k7"), to: b("k9"))
        let left = try db.multiGet((0..<10).map { b("k\($0)") }).map { $0 != nil }
        #expect(left == [true, true, false, false, false, true, true, false, false, true])
    }
}
