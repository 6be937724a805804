@testable import CairnEngine
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A thread of low priority (a big command's) writes through `NormalPriorityThread`, at normal
/// priority; a thread of normal priority writes itself.
@Suite struct NormalPriorityThreadTests {
    struct Refused: Error, Equatable {}

    private static func niceness() -> Int32 { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }

    @Test func aLowPriorityThreadsWriteRunsAtNormalPriority() {
        _ = NormalPriorityThread.shared  // made from this thread, of normal priority
        let seen = Mutex<[Int32]>([])
        let errors = Mutex<[Refused]>([])
        let finished = DispatchSemaphore(value: 0)
        Thread {
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
            let here = Self.niceness()
            let there = NormalPriorityThread.shared.run { Self.niceness() }
            do {
                try NormalPriorityThread.shared.run { throw Refused() }
            } catch let e as Refused {
                errors.withLock { $0.append(e) }
            } catch {}
            seen.withLock { $0 = [here, there] }
            finished.signal()
        }.start()
        finished.wait()
        #expect(seen.withLock { $0 } == [10, 0], "the caller at nice 10, the write at 0")
        #expect(errors.withLock { $0 } == [Refused()], "the write's error reaches the caller")
        let me = pthread_self()
        #expect(NormalPriorityThread.shared.run { pthread_equal(pthread_self(), me) != 0 }, "a thread of normal priority writes itself")
    }
}
