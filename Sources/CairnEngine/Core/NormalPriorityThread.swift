import Dispatch
import Synchronization
import func CairnSync.withThreadName
#if canImport(Glibc)
import Glibc
#endif

/// Runs, for a thread of lower scheduling priority (a big command run off its worker, at nice
/// +10: the server's `BackgroundThreads`), the work other clients may wait on: its RocksDB
/// writes, and the moments its claim holds every key-lock stripe (`KeyLocks`), on a thread of
/// normal priority.
///
/// RocksDB commits writes in groups: the first writer in leads its group and writes the WAL
/// and the memtable for every writer that joined it, who wait. A big command's piece leading a
/// group made other clients' small writes wait for a thread the scheduler runs last: with two
/// busy processes beside cairnd on two cores, a victim's SET waited up to 150-210 ms during a
/// ZUNIONSTORE of a million members, and 25-70 ms with the command's thread reniced to 0.
/// Holding every stripe while preempted stops every worker the same way. The reads and the
/// merging stay at low priority. The thread is made once, by the first engine (from a thread
/// of normal priority: a thread inherits its creator's nice value, and an unprivileged one
/// cannot lower it again).
final class NormalPriorityThread: @unchecked Sendable {  // `job` passes between the threads through the semaphores, one caller at a time
    static let shared = NormalPriorityThread()

    private var job: (() -> Void)?
    private let ready = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    /// One caller at a time hands its work over.
    private let turn = Mutex<Void>(())
    private var started = false

    private init() {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let thread = Unmanaged<NormalPriorityThread>.fromOpaque(context!).takeRetainedValue()
            thread.loop()
        }, context)
        if created == 0 {
            pthread_detach(thread)
            started = true
        } else {
            Unmanaged<NormalPriorityThread>.fromOpaque(context).release()
        }
    }

    /// Runs `work` on this thread when the calling thread's priority is below normal, else
    /// right here; returns or throws what it does.
    func run<T>(_ work: () throws -> T) throws -> T {
        guard started, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) > 0 else { return try work() }
        var result: Result<T, any Error>!
        withoutActuallyEscaping(work) { work in
            // The caller waits until it ran, so the closure outlives no frame.
            turn.withLock { _ in
                job = { result = Result { try work() } }
                ready.signal()
                done.wait()
            }
        }
        return try result.get()
    }

    /// `run` for work that cannot fail.
    func run<T>(_ work: () -> T) -> T {
        // The only error `run` passes on is the one `work` throws.
        try! run { () throws -> T in work() }
    }

    private func loop() -> Never {
        withThreadName("cairn.priority") {
            while true {
                ready.wait()
                job?()
                job = nil
                done.signal()
            }
        }
    }
}
