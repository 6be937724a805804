@testable import CairnEngine
import CairnTestSupport
import RESP
import Testing

/// The HyperLogLog encodings (HyperLogLog/): the layout of a new value, the packed dense
/// registers, the sparse opcodes agreeing with the dense form, promotion, and the estimate's
/// error, what Redis's PFSELFTEST checks. Byte equality with redis-server is checked by
/// Tests/integration/test_hyperloglog.py.
@Suite struct HyperLogLogTests {
    @Test func aNewValueIsSparseWithOneXZeroAndAValidZeroCache() {
        let hll = HyperLogLog()
        #expect(hll.bytes == Array("HYLL".utf8) + [1, 0, 0, 0] + [UInt8](repeating: 0, count: 8) + [0x7f, 0xff])
        #expect(hll.bytes.withUnsafeBytes(HyperLogLog.cachedCardinality) == 0)
        #expect(hll.bytes.withUnsafeBytes(HyperLogLog.histogram)?[0] == HyperLogLog.registerCount)
    }

    @Test func denseRegistersKeepTheirValuesAndLeaveTheirNeighboursAlone() {
        var rng = SeededGenerator(seed: 3)
        var bytes = [UInt8](repeating: 0, count: HyperLogLog.denseSize)
        for _ in 0..<20 {
            let values = (0..<HyperLogLog.registerCount).map { _ in UInt8.random(in: 0...63, using: &rng) }
            for (i, v) in values.enumerated() { DenseRegisters.set(&bytes, i, to: v) }
            let read = bytes.withUnsafeBytes { raw in (0..<HyperLogLog.registerCount).map { DenseRegisters.get(raw, $0) } }
            #expect(read == values)
            var histogram = [Int](repeating: 0, count: 64)
            for v in values { histogram[Int(v)] += 1 }
            #expect(bytes.withUnsafeBytes(DenseRegisters.histogram) == histogram)
        }
    }

    @Test func sparseAndDenseAgreeAndTheErrorStaysSmall() {
        var sparse = HyperLogLog()
        var dense = HyperLogLog()
        let madeDense = dense.makeDense()
        #expect(madeDense)
        var checkpoint = 1
        for j in 1...200_000 {
            let element = Array("element-\(j)".utf8)
            _ = sparse.add(element, sparseMaxBytes: HyperLogLog.defaultSparseMaxBytes)
            _ = dense.add(element, sparseMaxBytes: HyperLogLog.defaultSparseMaxBytes)
            guard j == checkpoint else { continue }
            checkpoint *= 10
            if j < HyperLogLog.defaultSparseMaxBytes / 2 { #expect(sparse.encoding == .sparse, "sparse at \(j)") }
            let a = sparse.bytes.withUnsafeBytes(HyperLogLog.histogram)!
            let b = dense.bytes.withUnsafeBytes(HyperLogLog.histogram)!
            #expect(a == b, "sparse and dense registers at \(j)")
            let estimate = HyperLogLogEstimator.cardinality(b)
            // Six standard errors, as PFSELFTEST allows (1.04 / sqrt(m)).
            let allowed = j == 10 ? 1.0 : (1.04 / 128 * 6 * Double(j)).rounded(.up)
            #expect(abs(Double(estimate) - Double(j)) <= allowed, "estimate \(estimate) for \(j)")
        }
        #expect(sparse.encoding == .dense)
    }

    @Test func aRegisterPast32OrAValuePastTheLimitPromotes() {
        var hll = HyperLogLog()
        var changes = [hll.raise(100, to: 5, sparseMaxBytes: 3000)]
        #expect(hll.encoding == .sparse)
        changes.append(hll.raise(100, to: 5, sparseMaxBytes: 3000))
        changes.append(hll.raise(200, to: 40, sparseMaxBytes: 3000))
        #expect(changes == [.changed, .unchanged, .changed])
        #expect(hll.encoding == .dense)
        let registers = hll.bytes.withUnsafeBytes { raw in [DenseRegisters.get(raw, 100), DenseRegisters.get(raw, 200)] }
        #expect(registers == [5, 40])

        var small = HyperLogLog()
        // XZERO VAL XZERO after the first change: 16 + 5 bytes, just within 21.
        changes = [small.raise(1000, to: 3, sparseMaxBytes: 21)]
        #expect(small.encoding == .sparse && small.bytes.count == 21)
        changes.append(small.raise(5000, to: 3, sparseMaxBytes: 21))
        #expect(changes == [.changed, .changed])
        #expect(small.encoding == .dense)
    }

    @Test func adjacentEqualValuesMergeIntoOneOpcode() {
        var hll = HyperLogLog()
        let changes = (0..<4).map { hll.raise($0, to: 2, sparseMaxBytes: 3000) }
        #expect(changes == [.changed, .changed, .changed, .changed])
        #expect(SparseRegisters.decode(hll.bytes) == "v:2,4 Z:16380")
        let change = hll.raise(1, to: 3, sparseMaxBytes: 3000)
        #expect(change == .changed)
        #expect(SparseRegisters.decode(hll.bytes) == "v:2,1 v:3,1 v:2,2 Z:16380")
    }

    @Test func corruptSparseRunsAreFound() {
        var short = HyperLogLog()
        short.bytes = Array(short.bytes[0..<16]) + SparseRegisters.xzero(100)
        #expect(short.bytes.withUnsafeBytes(HyperLogLog.histogram) == nil)
        let change = short.raise(5000, to: 1, sparseMaxBytes: 3000)
        #expect(change == .corrupted)
        let converted = short.makeDense()
        #expect(!converted)
        var long = HyperLogLog()
        long.bytes += [0x80]
        var registers = [UInt8](repeating: 0, count: HyperLogLog.registerCount)
        #expect(!long.bytes.withUnsafeBytes { HyperLogLog.merge($0, into: &registers) })
    }

    @Test func commandsRoundTripThroughTheEngine() throws {
        let h = try EngineHarness()
        #expect(h.run("PFADD", "k", "a", "b", "c") == .integer(1))
        #expect(h.run("PFCOUNT", "k") == .integer(3))
        #expect(h.run("PFCOUNT", "k", "missing") == .integer(3))
        #expect(h.run("PFMERGE", "m", "k") == .ok)
        #expect(h.run("PFCOUNT", "m") == .integer(3))
        h.run("SET", "s", "x")
        #expect(h.run("PFADD", "s", "a") == .error("WRONGTYPE Key is not a valid HyperLogLog string value."))
    }
}

