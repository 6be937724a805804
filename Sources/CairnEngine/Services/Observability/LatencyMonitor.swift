import Synchronization

/// Latency events as Redis's latency monitor keeps them: for each event class (`command`,
/// `fast-command`), the latest spike, the worst, and one sample per second of the last 160
/// seconds with a spike. Only requests at or over `latency-monitor-threshold` milliseconds
/// are recorded; 0 (the default) turns the monitor off.
/// https://redis.io/docs/latest/operate/oss_and_stack/management/optimization/latency-monitor/
public final class LatencyMonitor: Sendable {
    public struct Sample: Sendable {
        /// Unix seconds.
        public var time: Int64
        public var milliseconds: Int
    }

    public struct Event: Sendable {
        public var history: [Sample] = []
        public var max = 0
        public var latest: Sample { history[history.count - 1] }
    }

    static let historyLength = 160
    let thresholdMilliseconds = Atomic<Int>(0)
    private let events = Mutex<[String: Event]>([:])

    init() {}

    func apply(_ c: Configuration) {
        thresholdMilliseconds.store(c.latencyMonitorThreshold, ordering: .relaxed)
    }

    /// Records `milliseconds` for `event` if the monitor is on and it reaches the threshold.
    @inline(__always)
    func note(_ event: String, milliseconds: Int, now: Int64) {
        let threshold = thresholdMilliseconds.load(ordering: .relaxed)
        guard threshold > 0 && milliseconds >= threshold else { return }
        add(event, milliseconds: milliseconds, now: now)
    }

    func add(_ event: String, milliseconds: Int, now: Int64) {
        let seconds = now / 1000
        events.withLock { all in
            var e = all[event] ?? Event()
            e.max = Swift.max(e.max, milliseconds)
            if let last = e.history.last, last.time == seconds {
                // One sample per second: the worst of that second.
                e.history[e.history.count - 1].milliseconds = Swift.max(last.milliseconds, milliseconds)
            } else {
                e.history.append(Sample(time: seconds, milliseconds: milliseconds))
                if e.history.count > LatencyMonitor.historyLength { e.history.removeFirst() }
            }
            all[event] = e
        }
    }

    public var all: [(name: String, event: Event)] {
        events.withLock { $0.map { ($0.key, $0.value) } }.sorted { $0.name < $1.name }
    }

    public func event(_ name: String) -> Event? { events.withLock { $0[name] } }

    /// Forgets the named events (every event when `names` is empty); the number forgotten.
    @discardableResult
    public func reset(_ names: [String]) -> Int {
        events.withLock { all in
            guard !names.isEmpty else {
                defer { all.removeAll() }
                return all.count
            }
            return Set(names).reduce(0) { $0 + (all.removeValue(forKey: $1) == nil ? 0 : 1) }
        }
    }
}
