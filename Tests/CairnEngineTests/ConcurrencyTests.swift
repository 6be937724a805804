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
}
