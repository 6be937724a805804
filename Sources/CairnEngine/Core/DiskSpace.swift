import Logging
import Rocks
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Disk-full mode: writes stop while the data disk has less than `min-free-disk` free, before
/// RocksDB itself runs out, and start again on their own once space returns. Reads keep working.
///
/// Why stop early rather than let RocksDB fail: a write RocksDB cannot append stops the whole
/// database (its background error), and its own recovery from running out of space needs an
/// SstFileManager, which the C API does not offer; kept away from a full disk, RocksDB still has
/// room to flush its memtables and finish compactions, and a client gets a clear error. The
/// server calls `poll(_:)` every 100 ms, which measures free space with `statvfs` (cheap), and
/// every write is admitted against that figure minus the bytes admitted since (`admit(_:)`), so
/// a burst of writes between two polls cannot overshoot the reserve. The reserve leaves room
/// for what RocksDB writes after writes stop: flushing the memtables, a new WAL file, the
/// MANIFEST. Compactions write their output before deleting their input, so the bytes RocksDB
/// estimates its pending compactions will rewrite (`rocksdb.estimate-pending-compaction-bytes`,
/// all families) are kept free on top while a compaction runs; RocksDB lowers that estimate as
/// soon as it picks a compaction, so the estimate from before it started is held until none runs.
///
/// If RocksDB reports an I/O error anyway (say a compaction ate the reserve), the engine is
/// *faulted*: writes are refused, and so are the commands that would flush memtables (backups,
/// COMPACT). Once there is room again, `poll(_:)` probes with an empty write batch, which RocksDB
/// answers with its background error until it has recovered; when the probe still fails 10 s
/// after space returned, the engine closes and reopens the database (the reopen replays the WAL,
/// so nothing acknowledged is lost).
///
/// A start on a disk with less than the reserve free opens the database read-only (writing
/// would replay the WAL into new table files and start a new WAL), so reads are served; once
/// space returns, `poll(_:)` has the server pause clients and reopens it for writing
/// (`reopenForWriting`).
///
/// A reserve larger than a quarter of the whole disk is capped there (said at start and in INFO
/// as `disk_reserve_capped`): the default, twice `write-buffer-size` plus 8 MiB, is more than a
/// small disk holds, and a server that starts, answers reads and never takes a write helps no one.
public final class DiskGuard: Sendable {
    /// The free-space figure `admit` works against: the last `statvfs`, minus bytes admitted since.
    private let estimatedFree = Atomic<Int>(.max)
    /// Bytes that must stay free: `min-free-disk` (resolved) plus pending compaction bytes.
    private let reserve = Atomic<Int>(0)
    /// Writes are refused because free space is below the reserve.
    private let full = Atomic<Bool>(false)
    /// RocksDB reported an I/O error; its WAL may be unusable until it recovers.
    private let faulted = Atomic<Bool>(false)
    /// The largest pending-compaction estimate since no compaction was running.
    private let compactionPeak = Atomic<Int>(0)
    /// When space was first back while RocksDB still refused the probe (milliseconds; 0: not).
    private let probeFailingSince = Atomic<Int64>(0)
    /// The database is open read-only because the disk was full at start.
    private let readOnly = Atomic<Bool>(false)
    /// When the last reopen for writing was started (milliseconds), so a failing one is
    /// retried every few seconds rather than every poll.
    private let lastReopen = Atomic<Int64>(0)
    /// Free bytes at the last poll (INFO).
    private let measuredFree = Atomic<Int>(-1)

    init() {}

    /// The reserve `min-free-disk` asks for: its value, or when 0 (the default) twice
    /// `write-buffer-size` (a memtable being flushed and the next one) plus 8 MiB (a new WAL
    /// file's preallocation, MANIFEST, OPTIONS and log files); at most a quarter of the disk
    /// holding `c.dir` (see the type's comment).
    public static func reserve(for c: Configuration) -> Int {
        let asked = c.minFreeDisk > 0 ? c.minFreeDisk : 2 * c.writeBufferSize + 8 * 1024 * 1024
        guard let total = totalBytes(at: c.dir) else { return asked }
        return min(asked, total / 4)
    }

    /// Whether `reserve(for:)` is less than `min-free-disk` asks for.
    public static func reserveIsCapped(for c: Configuration) -> Bool {
        let asked = c.minFreeDisk > 0 ? c.minFreeDisk : 2 * c.writeBufferSize + 8 * 1024 * 1024
        return reserve(for: c) < asked
    }

    /// The size of the file system holding `path`, or nil.
    static func totalBytes(at path: String) -> Int? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        let (bytes, overflow) = Int(st.f_blocks).multipliedReportingOverflow(by: Int(st.f_frsize))
        return overflow ? .max : bytes
    }

    /// Free bytes for an unprivileged writer on the file system holding `path`, or nil.
    static func freeBytes(at path: String) -> Int? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        let (bytes, overflow) = Int(st.f_bavail).multipliedReportingOverflow(by: Int(st.f_frsize))
        return overflow ? .max : bytes
    }

    /// True while writes are refused (disk-full mode).
    public var refusesWrites: Bool {
        full.load(ordering: .relaxed) || faulted.load(ordering: .relaxed) || readOnly.load(ordering: .relaxed)
    }

    /// True while the database is open read-only because the disk was full at start.
    public var isReadOnly: Bool { readOnly.load(ordering: .relaxed) }

    /// Whether a start must open the database read-only: it exists and the disk holding it has
    /// less than `min-free-disk` free.
    static func mustOpenReadOnly(_ c: Configuration) -> Bool {
        var st = stat()
        guard stat("\(c.dir)/CURRENT", &st) == 0, let free = freeBytes(at: c.dir) else { return false }
        return free < reserve(for: c)
    }

    func openedReadOnly() {
        readOnly.store(true, ordering: .relaxed)
        full.store(true, ordering: .relaxed)
    }

    /// True while RocksDB's WAL may have failed: WAL syncs, flushes and closing must wait.
    public var isFaulted: Bool { faulted.load(ordering: .relaxed) }

    /// Admits a write of about `bytes` bytes, or returns false (and enters disk-full mode) when
    /// it would leave less than the reserve free.
    func admit(_ bytes: Int, engine: Engine) -> Bool {
        if refusesWrites { return false }
        let left = estimatedFree.subtract(bytes, ordering: .relaxed).newValue
        guard left < reserve.load(ordering: .relaxed) else { return true }
        enterFull(engine, free: max(left, 0))
        return false
    }

    /// Notes a failed storage call: RocksDB ran out of space (or failed to write) after all.
    func noteFailure(_ error: StorageError, engine: Engine) {
        guard error.code == .noSpace || error.code == .ioError else { return }
        if !faulted.exchange(true, ordering: .relaxed) {
            engine.logger.error("disk-full mode: RocksDB reported \(error); writes are refused and WAL syncs paused until it recovers")
        }
    }

    /// Measures free space and enters or leaves disk-full mode. The server calls this every
    /// 100 ms, on the queue that syncs the WAL (so it is paused with it during a restore).
    public func poll(_ engine: Engine) {
        let config = engine.configuration
        let pending = engine.pendingCompactionBytes
        let running = engine.database.integerProperty("rocksdb.num-running-compactions") ?? 0
        // While none runs, the estimate only waits (it counts from when one starts): counting
        // it would keep writes refused, and without writes RocksDB schedules no compaction.
        let held = running > 0 ? max(compactionPeak.load(ordering: .relaxed), pending) : pending
        compactionPeak.store(held, ordering: .relaxed)
        let base = DiskGuard.reserve(for: config)
        let reserve = base + (running > 0 ? held : 0)
        self.reserve.store(reserve, ordering: .relaxed)
        guard let free = DiskGuard.freeBytes(at: config.dir) else { return }
        measuredFree.store(free, ordering: .relaxed)
        estimatedFree.store(free, ordering: .relaxed)
        if free < reserve { enterFull(engine, free: free) }
        if readOnly.load(ordering: .relaxed) {
            if free >= reserve + reserve / 8 { reopen(engine, why: "space returned on the data disk") }
            return
        }
        // A stopped RocksDB keeps its WALs until a flush succeeds, so the disk may stay below
        // the reserve until it recovers: recovery needs only room for that flush.
        if faulted.load(ordering: .relaxed) && free >= base / 2 && !probe(engine) {
            let now = Clock.milliseconds()
            let since = probeFailingSince.load(ordering: .relaxed)
            if since == 0 {
                probeFailingSince.store(now, ordering: .relaxed)
            } else if now - since >= 10_000 {
                reopen(engine, why: "RocksDB did not recover from its write error by itself")
            }
            return
        }
        if free < reserve || faulted.load(ordering: .relaxed) { return }
        // A little above the reserve, so a flush that frees a few MiB does not flip the mode.
        if full.load(ordering: .relaxed) && free >= reserve + reserve / 8 {
            full.store(false, ordering: .relaxed)
            engine.logger.notice("disk-full mode ends: \(free / 1_048_576) MiB free, \(reserve / 1_048_576) MiB kept free; writes resume")
        }
    }

    /// Closes and reopens the database for writing, off this queue (the server pauses it while
    /// the database is swapped), at most every 5 s.
    private func reopen(_ engine: Engine, why: String) {
        let now = Clock.milliseconds()
        guard now - lastReopen.load(ordering: .relaxed) >= 5000 else { return }
        lastReopen.store(now, ordering: .relaxed)
        let work: @Sendable () -> Void = { [self] in
            let body = { (sessions: [Session]) in
                guard engine.reopenForWriting(sessions: sessions, why: why) else { return }
                self.readOnly.store(false, ordering: .relaxed)
                self.faulted.store(false, ordering: .relaxed)
                self.probeFailingSince.store(0, ordering: .relaxed)
            }
            if let hooks = engine.hooks { hooks.withClientsPaused(body) } else { body([]) }
        }
        if let hooks = engine.hooks { hooks.runInBackground(work) } else { work() }
    }

    /// An empty write: fails with RocksDB's background error until RocksDB has recovered.
    private func probe(_ engine: Engine) -> Bool {
        do {
            try engine.database.write(WriteBatch())
        } catch {
            return false
        }
        faulted.store(false, ordering: .relaxed)
        probeFailingSince.store(0, ordering: .relaxed)
        engine.logger.notice("RocksDB recovered from its write error")
        return true
    }

    private func enterFull(_ engine: Engine, free: Int) {
        guard !full.exchange(true, ordering: .relaxed) else { return }
        let reserve = reserve.load(ordering: .relaxed)
        engine.logger.warning("disk-full mode: \(free / 1_048_576) MiB free on the data disk, below the \(reserve / 1_048_576) MiB kept free (min-free-disk plus pending compactions); writes are refused, reads still work")
    }

    /// INFO lines: `disk_full`, `disk_free_bytes` (at the last poll), `disk_reserve_bytes` (kept
    /// free), `disk_reserve_capped` (1 when min-free-disk was more than a quarter of the disk).
    func infoLines(_ c: Configuration) -> [(String, String)] {
        [
            ("disk_full", refusesWrites ? "1" : "0"),
            ("disk_free_bytes", String(measuredFree.load(ordering: .relaxed))),
            ("disk_reserve_bytes", String(reserve.load(ordering: .relaxed))),
            ("disk_reserve_capped", DiskGuard.reserveIsCapped(for: c) ? "1" : "0"),
        ]
    }
}

extension CommandError {
    /// A write refused in disk-full mode (or failed by RocksDB for lack of space).
    static let diskFull = CommandError("ERR", "write failed: no space left on the data disk; reads still work")
}

extension Engine {
    /// What RocksDB estimates its pending compactions will rewrite, over every family.
    var pendingCompactionBytes: Int {
        let db = database
        let families = allFamilies.map(\.handle) + Engine.hiddenFamilyNames.compactMap { db.family(named: $0) }
        return families.reduce(0) { sum, f in
            sum + Int(clamping: db.integerProperty("rocksdb.estimate-pending-compaction-bytes", in: f) ?? 0)
        }
    }

    /// Commands that make RocksDB flush its memtables or close the database, so touch the WAL
    /// even though they write nothing themselves.
    private static let touchesWAL: Set<String> = ["compact", "bgsave", "backup.create", "backup.restore", "checkpoint"]

    /// Why `command` may not run now because of disk-full mode, or nil. A write is admitted
    /// against the free space (`DiskGuard.admit`) with the size of its arguments; EXEC with
    /// the sum of its queued writes, and refused whole (its transaction discarded) rather than
    /// applying the transaction's reads and failing its writes.
    func diskRefusal(_ command: Command, _ argv: [[UInt8]], session: Session) -> CommandError? {
        if command.flags.contains(.write) {
            return diskGuard.admit(argv.reduce(0) { $0 + $1.count }, engine: self) ? nil : .diskFull
        }
        if command.name == "exec", let queued = session.queued {
            var bytes = 0, writes = false
            for q in queued {
                guard case .success(let c) = lookup(q, first: q[0]), c.flags.contains(.write) else { continue }
                writes = true
                bytes += q.reduce(0) { $0 + $1.count }
            }
            guard writes, !diskGuard.admit(bytes, engine: self) else { return nil }
            session.queued = nil
            session.watched = []
            session.transactionFailed = false
            return .diskFull
        }
        if (diskGuard.isFaulted || diskGuard.isReadOnly) && Engine.touchesWAL.contains(command.name) {
            return CommandError("ERR", "not now: the data disk filled up and RocksDB has not recovered yet; try again once writes work")
        }
        return nil
    }
}
