public import Synchronization

#if CAIRN_TSAN
#if canImport(Glibc)
import Glibc
#endif

/// The server's `Mutex`. In ThreadSanitizer builds (`scripts/sanitize thread` passes
/// `-DCAIRN_TSAN`) it stands in for `Synchronization.Mutex`: on Linux that Mutex locks with raw
/// futex system calls, which TSan cannot see, so every access it guards is reported as a race
/// (checked with a two-thread program: one false report per Mutex). Same use, `Mutex(value)` and
/// `withLock { }`, over a pthread mutex that TSan understands.
///
/// A file that imports both Synchronization and CairnSync sees this `Mutex`: a module's
/// declaration shadows the same name in a module it imports. Each server file that names `Mutex`
/// imports CairnSync (scripts/test checks), so the swap reaches every lock.
public final class Mutex<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
#else
/// The server's `Mutex`: Synchronization's, except in ThreadSanitizer builds (see above).
public typealias Mutex<Value: ~Copyable> = Synchronization.Mutex<Value>
#endif
