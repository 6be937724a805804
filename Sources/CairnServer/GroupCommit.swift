import CairnEngine
import Dispatch
import Synchronization

/// Group commit for `appendfsync always`: writes go to the WAL without sync, and their replies
/// wait until one WAL sync (`flushWAL(sync: true)`) covers them.
///
/// Why not RocksDB's own `sync = true` per write: RocksDB does group concurrent sync writers
/// into one write group, but a worker queue runs one write at a time and there are only as many
/// queues as cores (2 here), so at most two writes could ever share a sync, and each write
/// would block its queue (and every client on it) for a whole fsync. Here a connection writes,
/// asks for a sync and moves on; its replies from the first unsynced write on are held (not
/// sent) until the sync that started after the write completes. One syncer runs syncs back to
/// back on its own queue: every write acknowledged while a sync runs is covered by the next
/// one, so with 50 clients one fsync acknowledges dozens of writes. A failed sync closes the
/// waiting connections instead of acknowledging what may not be durable.
final class GroupCommit: Sendable {
    private struct State {
        var waiting: [@Sendable (Bool) -> Void] = []
        var running = false
    }

    private let state = Mutex(State())
    let queue = DispatchQueue(label: "cairn.group-commit", qos: .userInitiated)
    private let engine: Engine

    init(engine: Engine) { self.engine = engine }

    /// Asks for a WAL sync covering every write that completed before this call; `done` runs
    /// (on the syncer's queue) with true once it is durable, false when the sync failed.
    func request(_ done: @escaping @Sendable (Bool) -> Void) {
        let start = state.withLock { s in
            s.waiting.append(done)
            if s.running { return false }
            s.running = true
            return true
        }
        if start { queue.async { self.run() } }
    }

    private func run() {
        while true {
            let batch = state.withLock { s in
                let b = s.waiting
                s.waiting = []
                if b.isEmpty { s.running = false }
                return b
            }
            if batch.isEmpty { return }
            let ok = engine.syncWAL()
            for done in batch { done(ok) }
        }
    }
}
