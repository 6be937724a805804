import Rocks
import Testing

@Suite struct SnapshotTests {
    @Test func writesAfterTheSnapshotAreInvisibleThroughIt() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.path, options: testOptions())
        try db.put(b("a"), b("1"))
        try db.put(b("gone"), b("x"))
        let snap = try db.snapshot()
        try db.put(b("a"), b("2"))
        try db.put(b("new"), b("n"))
        try db.delete(b("gone"))
        #expect(s(try snap.get(b("a"))) == "1")
        #expect(try snap.get(b("new")) == nil)
        #expect(s(try snap.get(b("gone"))) == "x")
        #expect(s(try db.get(b("a"))) == "2")
        #expect(try snap.multiGet([b("a"), b("new")]).map(s) == ["1", nil])
        let keys = try { () throws -> [String] in
            let c = try snap.makeCursor()
            defer { c.close() }
            var out: [String] = []
            c.seekToFirst()
            while c.isValid { out.append(s(c.key)!); c.next() }
            return out
        }()
        #expect(keys == ["a", "gone"])
        snap.release()
        #expect(throws: StorageError.self) { try snap.get(b("a")) }
        try db.close()
    }

    @Test func closeRefusesWhileChildrenLive() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.path, options: testOptions())
        let snap = try db.snapshot()
        do {
            try db.close()
            Issue.record("close must refuse while a snapshot is open")
        } catch StorageError.Code.busy {}
        snap.release()
        let cursor = try db.makeCursor()
        #expect(db.openCursorCount == 1)
        #expect(throws: StorageError.self) { try db.close() }
        cursor.close()
        try db.close()
        do {
            _ = try db.get(b("a"))
            Issue.record("calls after close must throw")
        } catch StorageError.Code.closed {}
    }
}
