import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A clock for durations: CLOCK_MONOTONIC in nanoseconds (a vDSO call, no system call).
enum MonotonicClock {
    @inline(__always)
    static func nanoseconds() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }
}

/// What INFO `commandstats` and `latencystats` and `LATENCY HISTOGRAM` report of one command
/// (or subcommand): calls, time spent, refusals, failures and a latency histogram.
///
/// Every counter is a relaxed atomic, so recording a call takes no lock. The histogram has
/// fixed logarithmic buckets over nanoseconds: eight sub-buckets per power of two, so a
/// percentile is known within 12.5% (Redis's HdrHistogram keeps two significant digits), and
/// a command costs a few kilobytes whatever it serves.
///
/// `@unchecked Sendable`: `buckets` is allocated once, never moves, and is only touched
/// through its atomics.
public final class CommandMetrics: @unchecked Sendable {
    public let name: String
    let calls = Atomic<Int>(0)
    let nanoseconds = Atomic<Int>(0)
    /// Refused before it ran: arity, authentication, permissions, size limits, MULTI rules.
    let rejectedCalls = Atomic<Int>(0)
    /// Ran and answered an error.
    let failedCalls = Atomic<Int>(0)
    private let buckets: UnsafeMutablePointer<Atomic<Int>>

    static let subBucketBits = 3
    static let subBuckets = 1 << subBucketBits
    /// Powers of two covered: up to 2^44 ns (about 4.9 hours); slower calls land in the last.
    static let powers = 45
    static let bucketCount = powers * subBuckets

    init(name: String) {
        self.name = name
        buckets = .allocate(capacity: CommandMetrics.bucketCount)
        for i in 0..<CommandMetrics.bucketCount { (buckets + i).initialize(to: Atomic(0)) }
    }

    deinit {
        buckets.deinitialize(count: CommandMetrics.bucketCount)
        buckets.deallocate()
    }

    /// The bucket a duration falls in: values below 8 ns each have their own; above, the
    /// power of two and the three bits after the leading one.
    static func bucket(_ ns: Int) -> Int {
        guard ns >= subBuckets else { return max(0, ns) }
        let msb = Int.bitWidth - 1 - ns.leadingZeroBitCount
        let shift = msb - subBucketBits
        let index = (shift + 1) * subBuckets + ((ns >> shift) & (subBuckets - 1))
        return min(index, bucketCount - 1)
    }

    /// The largest duration in nanoseconds that falls in `bucket` (what a percentile reports,
    /// as HdrHistogram reports the highest equivalent value).
    static func upperBound(_ bucket: Int) -> Int {
        guard bucket >= subBuckets else { return bucket }
        let shift = bucket / subBuckets - 1
        let mantissa = subBuckets + bucket % subBuckets
        return ((mantissa + 1) << shift) - 1
    }

    /// Records `count` calls that took `totalNanoseconds` together (a grouped batch records
    /// its requests at their average), `failed` of them answering an error.
    func record(count: Int, totalNanoseconds: Int, failed: Int) {
        calls.increment(by: count)
        nanoseconds.increment(by: totalNanoseconds)
        if failed > 0 { failedCalls.increment(by: failed) }
        buckets[CommandMetrics.bucket(totalNanoseconds / max(count, 1))].increment(by: count)
    }

    var hasData: Bool { calls.value > 0 || rejectedCalls.value > 0 || failedCalls.value > 0 }

    /// Counts per bucket, read without stopping writers (each bucket is read once).
    func histogram() -> [Int] {
        (0..<CommandMetrics.bucketCount).map { buckets[$0].value }
    }

    /// The durations in microseconds at each of `percentiles` (0...100), from one reading of
    /// the histogram; nil when there were no calls.
    func percentilesMicroseconds(_ percentiles: [Double]) -> [Double]? {
        let counts = histogram()
        let total = counts.reduce(0, +)
        guard total > 0 else { return nil }
        return percentiles.map { p in
            // The smallest bucket whose cumulative count reaches p% of the calls.
            let wanted = max(1, Int((p / 100 * Double(total)).rounded(.up)))
            var seen = 0
            for (i, c) in counts.enumerated() {
                seen += c
                if seen >= wanted { return Double(CommandMetrics.upperBound(i)) / 1000 }
            }
            return Double(CommandMetrics.upperBound(counts.count - 1)) / 1000
        }
    }

    /// `LATENCY HISTOGRAM`'s buckets as Redis reports them: cumulative counts at each power of
    /// two microseconds from 1 (`1`, `2`, `4`... where `1` is 1,024 ns, as Redis iterates),
    /// listed only where the count grows.
    func powerOfTwoHistogram() -> [(upToMicroseconds: Int, cumulative: Int)] {
        let counts = histogram()
        let total = counts.reduce(0, +)
        var out: [(Int, Int)] = []
        var cumulative = 0
        var i = 0
        var key = 1
        while cumulative < total {
            while i < counts.count && CommandMetrics.upperBound(i) < key * 1024 {
                cumulative += counts[i]
                i += 1
            }
            if cumulative != (out.last?.1 ?? 0) { out.append((key, cumulative)) }
            key *= 2
        }
        return out
    }

    func reset() {
        calls.store(0, ordering: .relaxed)
        nanoseconds.store(0, ordering: .relaxed)
        rejectedCalls.store(0, ordering: .relaxed)
        failedCalls.store(0, ordering: .relaxed)
        for i in 0..<CommandMetrics.bucketCount { buckets[i].store(0, ordering: .relaxed) }
    }
}

/// The metrics of every command and subcommand of a table, by `Command.index`.
public final class CommandMetricsTable: Sendable {
    let all: [CommandMetrics]

    init(_ table: CommandTable) {
        all = table.indexedNames.map { CommandMetrics(name: $0) }
    }

    subscript(_ command: Command) -> CommandMetrics { all[command.index] }

    func reset() { for m in all { m.reset() } }
}
