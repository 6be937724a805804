import Dispatch
import Synchronization
import func CairnSync.withThreadName
#if canImport(Glibc)
import Glibc
#endif

/// Threads for work that may run for seconds beside the workers: a big collection command run
/// off its worker (`Outcome.runsInBackground`, LongWork.swift in CairnEngine). They run at a
/// lower scheduling priority (nice +10) than the workers, so on a machine with few cores a
/// long SUNIONSTORE takes the CPU the workers leave, and other clients' requests are not kept
/// waiting for a core behind it. Dispatch's own threads cannot be given a priority and back
/// safely (raising it again needs privileges), so these are threads of their own, made once.
///
/// `@unchecked Sendable`: `jobs` is behind its mutex, `ready` is a semaphore.
final class BackgroundThreads: @unchecked Sendable {
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let ready = DispatchSemaphore(value: 0)
    /// How much lower than the workers' these threads' priority is.
    static let niceness: Int32 = 10

    init(count: Int) {
        for _ in 0..<max(1, count) { start() }
    }

    /// Runs `job` on one of the threads, after the jobs queued before it.
    func run(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    private func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let threads = Unmanaged<BackgroundThreads>.fromOpaque(context!).takeRetainedValue()
            // Only this thread: on Linux the nice value is per thread, and 0 names the caller.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, BackgroundThreads.niceness)
            withThreadName("cairn.background") { threads.loop() }
        }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<BackgroundThreads>.fromOpaque(context).release()
        }
    }

    private func loop() -> Never {
        while true {
            ready.wait()
            let job = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            job?()
        }
    }
}
