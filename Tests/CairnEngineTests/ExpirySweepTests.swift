@testable import CairnEngine
import RESP
import Rocks
import Testing

@Suite struct ExpirySweepTests {
    @Test func sweepDeletesExpiredKeysAndRestsWithoutTTLs() async throws {
        let h = try EngineHarness()
        for i in 0..<3000 { h.run("SET", "t\(i)", "v", "PX", "20") }
        for i in 0..<500 { h.run("SET", "p\(i)", "v") }
        h.run("CF.CREATE", "other")
        h.run("CF.USE", "other")
        for i in 0..<700 { h.run("SET", "o\(i)", "v", "PX", "20") }
        try await Task.sleep(for: .milliseconds(60))
        var deleted = 0
        for _ in 0..<20 { deleted += h.engine.expirySweep.step(h.engine, budget: 500) }
        #expect(deleted == 3700)
        // Gone from storage itself, not just hidden by reads.
        #expect(try h.engine.database.get(Array("t1".utf8)) == nil)
        #expect(try h.engine.database.get(Array("p1".utf8)) != nil)
        #expect(h.engine.stats.expiredKeys.value == 3700)
        // Nothing left with a TTL. One more pass a second later catches writes that raced the
        // first; after it the sweep rests until a TTL write.
        #expect(!h.engine.expirySweep.isResting)
        try await Task.sleep(for: .milliseconds(1100))
        for _ in 0..<10 { h.engine.expirySweep.step(h.engine, budget: 500) }
        #expect(h.engine.expirySweep.isResting)
        h.run("SET", "again", "v", "EX", "100")
        #expect(!h.engine.expirySweep.isResting)
    }

    @Test func passesWaitForTheEarliestExpiry() throws {
        let h = try EngineHarness()
        for i in 0..<100 { h.run("SET", "later\(i)", "v", "EX", "100") }
        // The steps run on a clock the test sets, so a stalled machine cannot reorder them.
        let t0 = Clock.milliseconds()
        // The first pass meets only keys due in 100 s: nothing to delete, and no new pass
        // starts before they fall due, however often the timer steps.
        #expect(h.engine.expirySweep.step(h.engine, now: t0) == 0)
        #expect(!h.engine.expirySweep.isResting)
        h.run("SET", "soon", "v", "PX", "50")
        // Due by now, but a pass ran less than a second ago.
        #expect(h.engine.expirySweep.step(h.engine, now: t0 + 900) == 0)
        #expect(h.engine.expirySweep.step(h.engine, now: t0 + 5_000) == 1)
        #expect(try h.engine.database.get(Array("soon".utf8)) == nil)
        // The remaining keys are due at t0 + 100 s: steps before that find no pass to run.
        #expect(h.engine.expirySweep.step(h.engine, now: t0 + 50_000) == 0)
        #expect(h.engine.expirySweep.step(h.engine, now: t0 + 101_000) == 100)
    }

    @Test func stepsStopAtTheirTimeBudget() async throws {
        let h = try EngineHarness()
        var batch: [[UInt8]] = [Array("MSET".utf8)]
        for i in 0..<200_000 { batch += [Array("k\(i)".utf8), Array("v".utf8)] }
        _ = h.run(batch)
        h.run("SET", "t", "v", "PX", "1")
        try await Task.sleep(for: .milliseconds(10))
        let clock = ContinuousClock()
        let elapsed = clock.measure { h.engine.expirySweep.step(h.engine, milliseconds: 5) }
        // 200,000 keys take far longer than 5 ms to walk: the budget, not the keys, ended the
        // step, before it reached `t` (the last key). The bound on time is loose on purpose:
        // tests run in parallel on two cores.
        #expect(try h.engine.database.get(Array("t".utf8)) != nil, "the step stopped before reaching t")
        #expect(elapsed < .seconds(2))
    }

    @Test func massExpiryCompactsTheEmptiedRange() async throws {
        let h = try EngineHarness()
        for i in 0..<20_000 { h.run("SET", "e\(i)", "v", "PX", "1") }
        h.run("SET", "z", "kept")
        try await Task.sleep(for: .milliseconds(20))
        var deleted = 0
        // Until the pass ends (on a busy machine the step that deletes the last keys may run out
        // of time before it reaches the family's end, where the compaction is decided).
        for _ in 0..<50 where deleted < 20_000 || h.engine.stats.sweepCompactions.value == 0 {
            deleted += h.engine.expirySweep.step(h.engine, milliseconds: 1000)
        }
        #expect(deleted == 20_000)
        #expect(h.engine.stats.sweepCompactions.value == 1)
        // Compaction left no table file with the deleted keys or their tombstones.
        #expect((h.engine.database.integerProperty("rocksdb.estimate-num-keys") ?? 0) <= 10)
        #expect(h.run("GET", "z") == .bulk("kept"))
    }
}
