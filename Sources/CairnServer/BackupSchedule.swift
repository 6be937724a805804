import CairnEngine
import Dispatch

/// `backup-interval`: a background backup (as BGSAVE) every so many seconds. Checked once a
/// second so `CONFIG SET backup-interval` takes effect without a restart.
final class BackupSchedule: @unchecked Sendable {
    // `@unchecked Sendable`: `timer` is set once in `start` and cancelled at shutdown;
    // `lastRun` is touched only on `queue`.
    private let engine: Engine
    private let queue = DispatchQueue(label: "cairn.backup-schedule", qos: .utility)
    private var timer: (any DispatchSourceTimer)?
    private var lastRun = Clock.milliseconds()

    init(engine: Engine) { self.engine = engine }

    func start() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(200))
        timer.setEventHandler { [unowned self] in
            let interval = Int64(engine.configuration.backupInterval)
            let now = Clock.milliseconds()
            guard interval > 0, now - lastRun >= interval * 1000 else { return }
            // A backup flushes the memtables, which touches a WAL RocksDB failed to write.
            guard !engine.diskGuard.isFaulted && !engine.diskGuard.isReadOnly else { return }
            lastRun = now
            if !engine.backups.startBackground(engine, reason: "scheduled backup") {
                engine.logger.info("scheduled backup skipped: one is already running")
            }
        }
        timer.activate()
        self.timer = timer
    }

    func cancel() { timer?.cancel() }
}
