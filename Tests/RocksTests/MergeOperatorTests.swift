import Rocks
import Testing

@Suite struct MergeOperatorTests {
    func open(_ dir: TemporaryDirectory) throws -> Database {
        try Database.open(at: dir.path, options: testOptions()) { name in
            var o = ColumnFamilyOptions()
            o.mergeOperator = MergeOperators.named(name)
            return o
        }
    }

    @Test func resultsSurviveFlushCompactionAndReopen() throws {
        let dir = TemporaryDirectory()
        var db = try open(dir)
        let add = try db.createFamily(named: "add")
        let append = try db.createFamily(named: "append")
        let max = try db.createFamily(named: "max")
        let min = try db.createFamily(named: "min")
        try db.put(b("n"), b("10"), in: add)
        for round in 0..<3 {
            for i in 1...100 {
                try db.merge(b("n"), b(String(i)), in: add)
                try db.merge(b("s"), b("\(round)"), in: append)
                try db.merge(b("m"), b(String(i * (round + 1))), in: max)
                try db.merge(b("m"), b(String(-i)), in: min)
            }
            // Partial merges happen when operands meet each other in flushes and compactions.
            try db.flush(add)
            try db.flush(append)
        }
        try db.merge(b("n"), b("-5"), in: add)
        try db.merge(b("n"), b("not a number"), in: add)
        #expect(s(try db.get(b("n"), in: add)) == "15155")
        try db.compactRange(in: add)
        try db.compactRange(in: append)
        #expect(s(try db.get(b("n"), in: add)) == "15155")
        #expect(s(try db.get(b("s"), in: append)) == String(repeating: "0", count: 100) + String(repeating: "1", count: 100) + String(repeating: "2", count: 100))
        #expect(s(try db.get(b("m"), in: max)) == "300")
        #expect(s(try db.get(b("m"), in: min)) == "-100")
        try db.close()
        db = try open(dir)
        #expect(s(try db.get(b("n"), in: db.family(named: "add"))) == "15155")
        #expect(s(try db.get(b("m"), in: db.family(named: "max"))) == "300")
        try db.close()
    }

    @Test func addSaturatesInsteadOfWrapping() throws {
        let dir = TemporaryDirectory()
        let db = try open(dir)
        let add = try db.createFamily(named: "add")
        try db.put(b("n"), b(String(Int64.max - 1)), in: add)
        try db.merge(b("n"), b("5"), in: add)
        #expect(s(try db.get(b("n"), in: add)) == String(Int64.max))
    }

    @Test func concurrentMergesAndPutsGiveExactTotals() throws {
        let dir = TemporaryDirectory()
        let db = try open(dir)
        let add = try db.createFamily(named: "add")
        DispatchQueueConcurrent.perform(8) { t in
            for i in 0..<1000 {
                try? db.merge(b("total"), b("1"), in: add)
                try? db.put(b("t\(t)-\(i)"), b("x"))
                if i % 100 == 0 { _ = try? db.get(b("total"), in: add) }
            }
        }
        #expect(s(try db.get(b("total"), in: add)) == "8000")
        let count = try db.withCursor { c in
            var n = 0
            c.seekToFirst()
            while c.isValid { n += 1; c.next() }
            return n
        }
        #expect(count == 8000)
    }
}

import Dispatch

enum DispatchQueueConcurrent {
    static func perform(_ n: Int, _ body: @Sendable (Int) -> Void) {
        DispatchQueue.concurrentPerform(iterations: n, execute: body)
    }
}
