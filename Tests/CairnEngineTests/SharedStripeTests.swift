@testable import CairnEngine
import Foundation
import Synchronization
import Testing

/// Blind writes (poller rounds of plain SETs and MSETs) hold their stripes shared: two of them
/// run together, while anything that reads before it writes, and a WATCH's version read, waits
/// for both and then sees what they changed.
@Suite struct SharedStripeTests {
    @Test func blindWritesShareAStripeAndExclusiveHoldersWaitForThem() throws {
        let h = try EngineHarness()
        let locks = h.engine.locks
        let family = h.engine.defaultFamily
        let first = Array("blind:0".utf8)
        let stripe = locks.stripe(for: first, in: family)
        // Two more keys of the same stripe.
        let others: [[UInt8]] = Array((1...).lazy.map { Array("blind:\($0)".utf8) }.filter { locks.stripe(for: $0, in: family) == stripe }.prefix(2))
        let versionBefore = locks.version(ofStripe: stripe)

        let firstInside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread {
            locks.withLocks([(first, family)], shared: true) {
                locks.changed(first, in: family)
                firstInside.signal()
                release.wait()
            }
        }.start()
        firstInside.wait()

        let secondInside = DispatchSemaphore(value: 0)
        Thread {
            locks.withLocks([(others[0], family)], shared: true) {
                locks.changed(others[0], in: family)
                secondInside.signal()
                release.wait()
            }
        }.start()
        #expect(secondInside.wait(timeout: .now() + 10) == .success, "a second blind write of the stripe goes in beside the first")

        let exclusiveRan = Mutex(false)
        let exclusiveDone = DispatchSemaphore(value: 0)
        Thread {
            locks.withLock(others[1], in: family) { exclusiveRan.withLock { $0 = true } }
            exclusiveDone.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(exclusiveRan.withLock { $0 } == false, "a read-modify-write of the stripe waits for the blind writes")

        release.signal()
        release.signal()
        #expect(exclusiveDone.wait(timeout: .now() + 10) == .success)
        #expect(exclusiveRan.withLock { $0 })
        #expect(locks.version(ofStripe: stripe) == versionBefore + 2, "each blind write moved the version once")
    }
}
