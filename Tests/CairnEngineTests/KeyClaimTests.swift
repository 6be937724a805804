@testable import CairnEngine
import Foundation
import Synchronization
import Testing

/// A write of many keys claims them instead of holding every stripe: writers of other keys go
/// on while it commits; writers of its keys, and WATCHes of them, wait for it.
@Suite struct KeyClaimTests {
    @Test func otherKeysAreNotHeldUpByABigWrite() throws {
        let h = try EngineHarness()
        let locks = h.engine.locks
        let family = h.engine.defaultFamily
        let bigKeys = (0..<5000).map { Array("big:\($0)".utf8) }
        let claimed = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let watchedStripe = locks.stripe(for: bigKeys[7], in: family)
        let versionBefore = locks.version(ofStripe: watchedStripe)
        let big = Thread {
            locks.withLocks(bigKeys, in: family) {
                locks.changed(bigKeys[7], in: family)
                claimed.signal()
                release.wait()  // a slow commit
            }
        }
        big.start()
        claimed.wait()
        // Another key: no wait, even though its stripe is among the claim's.
        let bigStripes = Set(bigKeys.map { locks.stripe(for: $0, in: family) })
        let other = (0...).lazy.map { Array("other:\($0)".utf8) }.first { bigStripes.contains(locks.stripe(for: $0, in: family)) }!
        let otherDone = DispatchSemaphore(value: 0)
        Thread { locks.withLock(other, in: family) {}; otherDone.signal() }.start()
        #expect(otherDone.wait(timeout: .now() + 0.5) == .success, "a writer of another key does not wait")
        #expect(locks.heldVersion(watchedStripe) == versionBefore, "the version moves when the claim ends")
        // A claimed key waits for the claim.
        let waited = Mutex(false)
        let writer = Thread {
            locks.withLock(bigKeys[7], in: family) { waited.withLock { $0 = true } }
        }
        writer.start()
        Thread.sleep(forTimeInterval: 0.2)
        #expect(waited.withLock { $0 } == false, "a writer of a claimed key waits")
        release.signal()
        var spins = 0
        while !waited.withLock({ $0 }) && spins < 500 { Thread.sleep(forTimeInterval: 0.01); spins += 1 }
        #expect(waited.withLock { $0 })
        #expect(locks.version(ofStripe: watchedStripe) != versionBefore)
    }

    @Test func bigMsetAndDelKeepWorking() throws {
        let h = try EngineHarness()
        var mset = ["MSET"]
        for i in 0..<3000 { mset += ["k\(i)", "v\(i)"] }
        #expect(h.run(mset.map { Array($0.utf8) }) == .ok)
        #expect(h.run("GET", "k2999") == .bulk("v2999"))
        var del = ["DEL"]
        for i in 0..<3000 { del.append("k\(i)") }
        del.append("missing")
        #expect(h.run(del.map { Array($0.utf8) }) == .integer(3000))
        #expect(h.run("DBSIZE") == .integer(0))
    }
}
