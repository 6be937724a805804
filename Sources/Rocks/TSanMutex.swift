#if CAIRN_TSAN
import CairnSync

/// Only in ThreadSanitizer builds: `Synchronization.Mutex` is invisible to TSan on Linux, so
/// this module uses the pthread-based one from `CairnSync` (a module-level name shadows both
/// imports; importing CairnSync alone would not, see CairnSync/TSanMutex.swift).
typealias Mutex<Value> = CairnSync.Mutex<Value>
#endif
