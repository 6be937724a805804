import Rocks
import Testing

@Suite struct CursorTests {
    func filled() throws -> (TemporaryDirectory, Database) {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.path, options: testOptions())
        for k in ["a", "b", "c", "d", "e", "p:1", "p:2", "p:3", "q:1"] { try db.put(b(k), b("v" + k)) }
        return (dir, db)
    }

    func collect(_ db: Database, _ options: ReadOptions = .default, reverse: Bool = false) throws -> [String] {
        try db.withCursor(options: options) { c in
            var out: [String] = []
            if reverse { c.seekToLast() } else { c.seekToFirst() }
            while c.isValid {
                out.append(s(c.key)!)
                if reverse { c.prev() } else { c.next() }
            }
            try c.check()
            return out
        }
    }

    @Test func boundsAndReverse() throws {
        let (_, db) = try filled()
        var o = ReadOptions()
        o.lowerBound = b("b")
        o.upperBound = b("e")
        #expect(try collect(db, o) == ["b", "c", "d"])
        #expect(try collect(db, o, reverse: true) == ["d", "c", "b"])
        #expect(try collect(db, reverse: true).first == "q:1")
    }

    @Test func seekAndSeekForPrev() throws {
        let (_, db) = try filled()
        try db.withCursor { c in
            c.seek(b("cc"))
            #expect(s(c.key) == "d")
            #expect(s(c.value) == "vd")
            c.seekForPrev(b("cc"))
            #expect(s(c.key) == "c")
            c.seek(b("zzz"))
            #expect(!c.isValid)
        }
    }

    @Test func prefixIteration() throws {
        let (_, db) = try filled()
        var o = ReadOptions()
        o.lowerBound = b("p:")
        o.upperBound = b("p;")
        #expect(try collect(db, o) == ["p:1", "p:2", "p:3"])
    }
}
