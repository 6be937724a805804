#if CAIRN_TSAN
import Rocks

/// Only in ThreadSanitizer builds: `Synchronization.Mutex` is invisible to TSan on Linux, so
/// this module uses the pthread-based one from `Rocks/TSanMutex.swift` (a module-local name
/// shadows both imports).
typealias Mutex<Value> = Rocks.Mutex<Value>
#endif
