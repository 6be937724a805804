public import Synchronization

/// Counters INFO reports. Relaxed atomics: each is an independent tally.
public final class EngineStats: Sendable {
    public let commandsProcessed = Atomic<Int>(0)
    public let connectionsReceived = Atomic<Int>(0)
    public let rejectedConnections = Atomic<Int>(0)
    public let keyspaceHits = Atomic<Int>(0)
    public let keyspaceMisses = Atomic<Int>(0)
    public let expiredKeys = Atomic<Int>(0)
    public let errorReplies = Atomic<Int>(0)
    public let netInputBytes = Atomic<Int>(0)
    public let netOutputBytes = Atomic<Int>(0)
    public let walSyncs = Atomic<Int>(0)
    /// Big writes committed in pieces: behind a journal entry (`Engine.writeClaimed`), or a new
    /// collection's members ahead of its metadata (`NewCollection`).
    public let piecewiseWrites = Atomic<Int>(0)
    /// Server-side iterators (ITER.OPEN) alive now; a gauge, not reset by CONFIG RESETSTAT.
    public let openIterators = Atomic<Int>(0)
    /// Expired values the compaction filter dropped (see `ExpiryCompactionFilter`).
    public let expiredValuesCompacted = Atomic<Int>(0)
    /// Range compactions the expiry sweep ran after emptying a large part of a family.
    public let sweepCompactions = Atomic<Int>(0)
    /// Per command: calls, time, refusals, failures, latency histogram (INFO commandstats,
    /// latencystats, LATENCY HISTOGRAM).
    public let commands = CommandMetricsTable(CommandTable.standard)
    public let slowLog = SlowLog()
    public let latency = LatencyMonitor()
    /// Error replies by their first word (`ERR`, `WRONGTYPE`): INFO errorstats. Locked, but only
    /// errors take the lock.
    let errorCounts = Mutex<[String: Int]>([:])
    /// instantaneous_ops_per_sec and the kbps lines, sampled by the server (`sampleRates`).
    let rates = Mutex(RateSamples())
    /// The largest RSS seen by INFO memory or MEMORY STATS (`used_memory_peak`).
    public let peakMemory = Atomic<Int>(0)

    /// A random 40-hex-digit id for this run of the server (INFO `run_id`), as Redis's.
    public let runID: String = {
        var g = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef")
        return String((0..<40).map { _ in hex[Int(g.next() % 16)] })
    }()

    /// The resident size when the engine started (MEMORY STATS `startup.allocated`).
    let startupMemory = InfoReport.residentBytes()

    public init() {}

    /// Takes the slow log's and the latency monitor's thresholds from the configuration.
    func apply(_ c: Configuration) {
        slowLog.apply(c)
        latency.apply(c)
    }

    /// Counts an error reply by its prefix.
    func noteError(_ prefix: String) {
        errorReplies.increment()
        errorCounts.withLock { $0[prefix, default: 0] += 1 }
    }

    var errorsByPrefix: [(String, Int)] { errorCounts.withLock { $0.sorted { $0.key < $1.key } } }

    /// Takes one sample of the counters behind the instantaneous rates (Redis samples every
    /// 100 ms and averages the last 16).
    public func sampleRates(now: Int64) {
        let values = [commandsProcessed.value, netInputBytes.value, netOutputBytes.value]
        rates.withLock { $0.add(values, at: now) }
    }

    /// Per-second rates of commands, input bytes and output bytes over the last samples.
    var instantaneous: [Double] { rates.withLock { $0.averages } }

    func reset() {
        commandsProcessed.store(0, ordering: .relaxed)
        connectionsReceived.store(0, ordering: .relaxed)
        rejectedConnections.store(0, ordering: .relaxed)
        keyspaceHits.store(0, ordering: .relaxed)
        keyspaceMisses.store(0, ordering: .relaxed)
        expiredKeys.store(0, ordering: .relaxed)
        errorReplies.store(0, ordering: .relaxed)
        netInputBytes.store(0, ordering: .relaxed)
        netOutputBytes.store(0, ordering: .relaxed)
        walSyncs.store(0, ordering: .relaxed)
        piecewiseWrites.store(0, ordering: .relaxed)
        sweepCompactions.store(0, ordering: .relaxed)
        expiredValuesCompacted.store(0, ordering: .relaxed)
        commands.reset()
        errorCounts.withLock { $0.removeAll() }
        peakMemory.store(0, ordering: .relaxed)
    }
}

/// The last 16 per-second rates of a few counters, as Redis's `trackInstantaneousMetric`.
struct RateSamples {
    static let count = 16
    private var last: (time: Int64, values: [Int])? = nil
    private var samples: [[Double]] = []

    mutating func add(_ values: [Int], at now: Int64) {
        if let last, now > last.time {
            let rate = zip(values, last.values).map { Double(max(0, $0 - $1)) * 1000 / Double(now - last.time) }
            samples.append(rate)
            if samples.count > RateSamples.count { samples.removeFirst() }
        }
        last = (now, values)
    }

    var averages: [Double] {
        guard let width = samples.first?.count else { return [0, 0, 0] }
        return (0..<width).map { i in samples.reduce(0) { $0 + $1[i] } / Double(samples.count) }
    }
}

extension Atomic where Value == Int {
    @inline(__always)
    public func increment(by n: Int = 1) { _ = add(n, ordering: .relaxed) }
    public var value: Int { load(ordering: .relaxed) }
}
