import CairnEngine
import Dispatch
import RESP
import Testing

@Suite struct ConcurrencyTests {
    /// INCR from many sessions on many threads at once: the stripe locks make each
    /// read-add-write atomic, so the total is exact.
    @Test func concurrentIncrIsExact() throws {
        let h = try EngineHarness()
        let sessions = (0..<8).map { _ in h.otherSession() }
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for _ in 0..<500 { _ = h.run(["INCR", "counter"].map { Array($0.utf8) }, on: sessions[i]) }
        }
        #expect(h.run("GET", "counter") == .bulk("4000"))
    }

    /// Grouped increments (`executeBatched`, as the workers run a poller round's INCRs) from
    /// several threads at once on shared keys: each reads its counters before taking their
    /// locks and again under them when a stripe moved, so every increment counts.
    @Test func concurrentGroupedIncrementsAreExact() throws {
        let h = try EngineHarness()
        let sessions = (0..<4).map { _ in h.otherSession() }
        let keys = (0..<40).map { "c\($0)" }
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for round in 0..<150 {
                // Each round: every key once, in an order of its own, and a SET of another key.
                let order = keys.indices.map { keys[($0 + round * (i + 1)) % keys.count] }
                var requests = order.map { ["INCR", $0].map { Array($0.utf8) } }
                requests.append(["SET", "other\(round % 7)", "x"].map { Array($0.utf8) })
                _ = h.engine.executeBatched([Engine.BatchedRun(session: sessions[i], requests: requests, version: .v2)])
            }
        }
        for key in keys { #expect(h.run("GET", key) == .bulk("600"), "\(key)") }
    }
}
