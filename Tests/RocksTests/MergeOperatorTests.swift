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

/// Merge operators on plain values, to test the bridge to RocksDB's C merge operator with
/// (Cairn's own is `EngineMergeOperator`, over its value format).
enum MergeOperators {
    /// Decimal Int64 text, the form Redis INCR keeps ("-12"). Operands that are not integers
    /// are skipped; a base value that is not an integer is kept unchanged; overflow saturates.
    static let add: any MergeOperator = Builtin(kind: .add)
    /// Concatenation, oldest operand first.
    static let append: any MergeOperator = Builtin(kind: .append)
    /// The greater value: numerically when both parse as numbers, else bytewise.
    static let max: any MergeOperator = Builtin(kind: .max)
    /// The smaller value, compared as `max` compares.
    static let min: any MergeOperator = Builtin(kind: .min)

    static func named(_ name: String) -> (any MergeOperator)? {
        switch name.lowercased() {
        case "add": add
        case "append": append
        case "max": max
        case "min": min
        default: nil
        }
    }

    struct Builtin: MergeOperator {
        enum Kind: String, Sendable { case add, append, max, min }
        let kind: Kind
        var name: String { "rocks.\(kind.rawValue)" }

        func fullMerge(key: UnsafeRawBufferPointer, existing: UnsafeRawBufferPointer?, operands: [UnsafeRawBufferPointer]) -> [UInt8]? {
            var current = existing.map { Array($0) }
            for operand in operands { current = apply(current, operand) }
            return current ?? []
        }

        func partialMerge(key: UnsafeRawBufferPointer, operands: [UnsafeRawBufferPointer]) -> [UInt8]? {
            if kind == .add && operands.contains(where: { Integer.parse($0) == nil }) { return nil }
            var current: [UInt8]? = nil
            for operand in operands { current = apply(current, operand) }
            return current
        }

        func apply(_ current: [UInt8]?, _ operand: UnsafeRawBufferPointer) -> [UInt8] {
            guard let current else {
                if kind == .add { return Integer.parse(operand) == nil ? [UInt8(ascii: "0")] : Array(operand) }
                return Array(operand)
            }
            switch kind {
            case .append:
                return current + operand
            case .add:
                guard let delta = Integer.parse(operand) else { return current }
                guard let base = current.withUnsafeBytes({ Integer.parse($0) }) else { return current }
                let (sum, overflow) = base.addingReportingOverflow(delta)
                return Array(String(overflow ? (delta > 0 ? Int64.max : Int64.min) : sum).utf8)
            case .max, .min:
                let a = Double(String(decoding: current, as: UTF8.self))
                let b = Double(String(decoding: operand, as: UTF8.self))
                let operandWins: Bool
                if let a, let b {
                    operandWins = kind == .max ? b > a : b < a
                } else {
                    operandWins = kind == .max ? current.lexicographicallyPrecedes(operand) : operand.lexicographicallyPrecedes(current)
                }
                return operandWins ? Array(operand) : current
            }
        }
    }
}

/// Strict decimal Int64 parsing (no spaces, no '+', no leading zeros), as Redis's string2ll.
enum Integer {
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let v = Int64(text), String(v) == text else { return nil }
        return v
    }
}
