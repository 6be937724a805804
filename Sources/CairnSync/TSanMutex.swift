#if CAIRN_TSAN
#if canImport(Glibc)
import Glibc
#endif

/// Only in ThreadSanitizer builds (`scripts/sanitize thread` passes `-DCAIRN_TSAN`): stands in
/// for `Synchronization.Mutex`. On Linux that Mutex locks with raw futex system calls, which
/// TSan cannot see, so every access it guards is reported as a race (checked with a two-thread
/// program: one false report per Mutex). Same use, `Mutex(value)` and `withLock { }`, over a
/// pthread mutex that TSan understands.
///
/// A module that uses `Mutex` declares `typealias Mutex<Value> = CairnSync.Mutex<Value>` under
/// `#if CAIRN_TSAN` (its `TSanMutex.swift`): a module-level name shadows both imports, so its
/// code says `Mutex` either way. The alias has to be in each module, an import cannot replace
/// it: a file that imports both Synchronization and CairnSync finds `Mutex` "ambiguous for type
/// lookup" (two imported modules do not shadow each other), and a rule that every file naming
/// `Mutex` import CairnSync instead of Synchronization would let a file that forgets lock with
/// the futex Mutex, unnoticed until a TSan run. (One shared file was tried and taken back:
/// commit c1bf389.)
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
#endif
