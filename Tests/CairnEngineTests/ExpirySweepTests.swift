import CairnEngine
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
        // Nothing left with a TTL: after a full pass the sweep rests until a TTL write.
        for _ in 0..<5 { h.engine.expirySweep.step(h.engine, budget: 500) }
        #expect(h.engine.expirySweep.isResting)
        h.run("SET", "again", "v", "EX", "100")
        #expect(!h.engine.expirySweep.isResting)
    }
}
