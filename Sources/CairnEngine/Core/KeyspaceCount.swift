import Rocks
import Synchronization

/// INFO keyspace's `db0` line: live keys and keys with a TTL, counted in the background.
///
/// A plain SET is a blind RocksDB Put, so a counter kept by the writes would cost each of them a
/// read. Instead a pass walks every user family through one snapshot, a slice per step off the
/// workers (the server steps it ten times a second on the expiry sweep's utility queue, within
/// `stepMilliseconds`), and counts what DBSIZE counts: entries whose value is a Cairn value of a
/// known type and not expired (collections count once, by their metadata; the hidden families
/// are not walked). INFO reports the last finished pass.
///
/// How it stays true:
/// - The pass records the sequence number of its snapshot. While the database's latest sequence
///   number is still that one, nothing was written since and the count is exact
///   (`Report.isCurrent`).
/// - Keys that expire after the pass stop counting on their own: the pass keeps its TTLs in a
///   histogram (`ExpiryHistogram`, one-second buckets for the next day) and a report leaves out
///   the buckets whose time has passed.
/// - A new pass starts when the count is behind the writes and either INFO asked for the
///   keyspace or the writes have settled (no new sequence number for `settleMilliseconds`), and
///   at most every `max(minimumRest, 4 × the last pass)`: at most a fifth of the time is spent
///   counting, at most `stepMilliseconds` of every 100 ms.
/// - FLUSHDB/FLUSHALL set their families' counts to zero at once, CF.DROP forgets its family's;
///   a database swap (restore, full sync, reopen) and closing forget everything and release the
///   snapshot (`forget()`), and the next step counts the new database from scratch.
///
/// Redis's INFO: https://redis.io/docs/latest/commands/info/ (keyspace section).
public final class KeyspaceCount: Sendable {
    /// What the count found in one family.
    struct Tally: Sendable {
        /// Live keys, with or without a TTL.
        var keys = 0
        var expiring = ExpiryHistogram()
    }

    /// A finished pass.
    struct Count: Sendable {
        var families: [String: Tally]
        /// Unix milliseconds of the pass's snapshot; expiry was judged at this instant.
        var takenAt: Int64
        /// The snapshot's sequence number.
        var sequence: UInt64
        var durationMilliseconds: Int64
    }

    /// A pass under way: where it stands and what it has counted so far.
    private struct Pass {
        let snapshot: Snapshot
        let generation: Int
        let startedAt: Int64
        let families: [String]
        var index = 0
        /// The first key of the current family not counted yet; nil: the family's start.
        var resumeAt: [UInt8]? = nil
        var tallies: [String: Tally] = [:]
    }

    private struct State {
        var result: Count? = nil
        var pass: Pass? = nil
        /// Moved by every reset, so a pass started before it is thrown away.
        var generation = 0
        /// INFO asked for the keyspace since the last pass started.
        var asked = false
        var seenSequence: UInt64 = 0
        var seenChangedAt: Int64 = 0
        /// No pass starts before this (Unix milliseconds).
        var restUntil: Int64 = 0
    }

    /// What INFO shows.
    public struct Report: Equatable, Sendable {
        public var keys: Int
        public var expires: Int
        /// Mean remaining TTL of the keys with one, in milliseconds (Redis's `avg_ttl`).
        public var averageTTL: Int64
        public var takenAt: Int64
        /// Nothing was written since the count's snapshot: the figures are exact now (up to keys
        /// expiring within the current second).
        public var isCurrent: Bool
        public var durationMilliseconds: Int64
    }

    /// A pass that starts rests at least this long after the previous one ended (milliseconds).
    static let minimumRest: Int64 = 500
    /// Writes count as settled after this long without a new sequence number (milliseconds).
    static let settleMilliseconds: Int64 = 1000
    /// Time a server step may use (milliseconds of each 100 ms tick).
    public static let stepMilliseconds = 10

    private let state = Mutex(State())

    init() {}

    /// INFO asked for the keyspace: a count behind the writes is renewed at the next step
    /// (once the rest after the last pass is over).
    func noteAsked() {
        state.withLock { $0.asked = true }
    }

    /// The last finished count as it stands at `now`, or nil before the first one finished.
    func report(latestSequence: UInt64, now: Int64 = Clock.milliseconds()) -> Report? {
        state.withLock { s in
            guard let result = s.result else { return nil }
            var keys = 0
            var expires = 0
            var expirySum = 0.0
            for tally in result.families.values {
                let left = tally.expiring.remaining(at: now)
                keys += tally.keys - (tally.expiring.total - left.count)
                expires += left.count
                expirySum += left.expirySum
            }
            let average = expires == 0 ? 0 : max(0, Int64((expirySum / Double(expires)).rounded()) - now)
            return Report(keys: keys, expires: expires, averageTTL: average, takenAt: result.takenAt,
                          isCurrent: latestSequence == result.sequence, durationMilliseconds: result.durationMilliseconds)
        }
    }

    /// True while a pass is under way.
    var isCounting: Bool { state.withLock { $0.pass != nil } }

    /// After FLUSHDB or FLUSHALL emptied `families` (`all`: every family): their counts are zero
    /// from now on, and a pass under way is thrown away. The count stays marked behind the writes
    /// (the flush was one), so the next pass confirms it.
    func emptied(_ families: [String], all: Bool, now: Int64 = Clock.milliseconds()) {
        state.withLock { s in
            s.generation += 1
            if all {
                let sequence = s.result?.sequence ?? 0
                s.result = Count(families: [:], takenAt: now, sequence: sequence, durationMilliseconds: 0)
            } else {
                for name in families { s.result?.families[name] = Tally() }
            }
        }
    }

    /// After CF.DROP (here or replicated): the family's keys no longer count.
    func familyDropped(_ name: String) {
        state.withLock { s in
            s.generation += 1
            s.result?.families[name] = nil
        }
    }

    /// Forgets every count and releases the pass's snapshot: before the database is swapped or
    /// closed. No step may run meanwhile (the server pauses or drains the sweep's queue first).
    func forget() {
        state.withLock { s in
            s.generation += 1
            s.pass?.snapshot.release()
            s.pass = nil
            s.result = nil
            s.asked = false
            s.restUntil = 0
        }
    }

    /// Counts for up to `milliseconds` (and at most `budget` entries), starting a pass when one
    /// is due. True when a pass finished. Called from one queue at a time; `now` fixes the clock
    /// (tests): the time budget then no longer ends the step, only `budget` does.
    @discardableResult
    public func step(_ engine: Engine, milliseconds: Int = KeyspaceCount.stepMilliseconds, budget: Int = .max, now fixedNow: Int64? = nil) -> Bool {
        let startedAt = fixedNow ?? Clock.milliseconds()
        let database = engine.database
        let latest = database.latestSequenceNumber
        guard var pass = state.withLock({ s -> Pass? in
            if latest != s.seenSequence {
                s.seenSequence = latest
                s.seenChangedAt = startedAt
            }
            if let pass = s.pass {
                if pass.generation == s.generation { return pass }
                // Reset since its last step (FLUSHALL, CF.DROP): its counts predate that.
                pass.snapshot.release()
                s.pass = nil
            }
            if let result = s.result {
                guard latest != result.sequence, startedAt >= s.restUntil,
                    s.asked || startedAt - s.seenChangedAt >= KeyspaceCount.settleMilliseconds
                else { return nil }
            }
            guard let snapshot = try? database.snapshot() else { return nil }
            s.asked = false
            s.pass = Pass(snapshot: snapshot, generation: s.generation, startedAt: startedAt, families: engine.allFamilies.map(\.name))
            return s.pass
        }) else { return false }

        let deadline = startedAt + Int64(milliseconds)
        var examined = 0
        var failed = false
        var options = ReadOptions()
        options.fillCache = false
        while pass.index < pass.families.count && examined < budget {
            let name = pass.families[pass.index]
            // Dropped since the pass started (its reset throws this pass away anyway).
            guard let family = engine.family(named: name) else {
                pass.index += 1
                pass.resumeAt = nil
                continue
            }
            var tally = pass.tallies[name] ?? Tally()
            var finished = false
            do {
                let cursor = try pass.snapshot.makeCursor(in: family.handle, options: options)
                defer { cursor.close() }
                if let resumeAt = pass.resumeAt { cursor.seek(resumeAt) } else { cursor.seekToFirst() }
                let countedAt = pass.startedAt
                while cursor.isValid && examined < budget {
                    examined += 1
                    let expiry: Int64?? = cursor.withValue { raw in
                        guard let h = ValueFormat.header(of: raw), KeyType(rawValue: h.type) != nil, !h.isExpired(now: countedAt)
                        else { return nil }
                        return .some(h.expiresAt)
                    }
                    if let expiry {
                        tally.keys += 1
                        if let expiresAt = expiry { tally.expiring.add(expiresAt, countedAt: countedAt) }
                    }
                    cursor.next()
                    if examined & 127 == 0, fixedNow == nil, Clock.milliseconds() >= deadline { break }
                }
                finished = !cursor.isValid
                if finished { try cursor.check() } else { pass.resumeAt = cursor.key }
            } catch {
                engine.logger.warning("keyspace count stopped in family \(name): \(error)")
                failed = true
            }
            pass.tallies[name] = tally
            if failed { break }
            if finished {
                pass.index += 1
                pass.resumeAt = nil
            } else {
                break
            }
        }

        let endedAt = fixedNow ?? Clock.milliseconds()
        let done = !failed && pass.index == pass.families.count
        let finalPass = pass
        return state.withLock { s in
            guard s.generation == finalPass.generation, s.pass != nil else {
                // Reset meanwhile (FLUSHALL, CF.DROP): the counts predate it.
                finalPass.snapshot.release()
                if s.pass?.generation == finalPass.generation { s.pass = nil }
                return false
            }
            if failed {
                finalPass.snapshot.release()
                s.pass = nil
                s.restUntil = endedAt + KeyspaceCount.minimumRest
                return false
            }
            guard done else {
                s.pass = finalPass
                return false
            }
            finalPass.snapshot.release()
            s.pass = nil
            var families = finalPass.tallies
            for key in families.keys { families[key]?.expiring.seal() }
            let duration = endedAt - finalPass.startedAt
            s.result = Count(families: families, takenAt: finalPass.startedAt, sequence: finalPass.snapshot.sequenceNumber,
                             durationMilliseconds: duration)
            s.restUntil = endedAt + max(KeyspaceCount.minimumRest, 4 * duration)
            return true
        }
    }
}

/// The expiry times of the keys a count met, in buckets: one second wide for the day after the
/// count, one hour wide for the year after, and a bucket per power of two of milliseconds beyond.
/// So a report can leave out the keys that have expired since the count, within a second, in at
/// most about 95,000 buckets a family however many keys there are.
struct ExpiryHistogram: Sendable {
    private struct Bucket: Sendable {
        var count = 0
        /// Sum of the expiry times (Unix milliseconds), for the mean TTL.
        var expirySum = 0.0
    }

    private var building: [Int64: Bucket] = [:]
    /// Sealed form: bucket ends (every key of a bucket has expired at its end) in order, and the
    /// count and expiry sum of the buckets from each index to the last.
    private var ends: [Int64] = []
    private var countFrom: [Int] = []
    private var sumFrom: [Double] = []
    /// Keys added.
    private(set) var total = 0

    static let second: Int64 = 1000
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000

    /// The instant every key of `expiresAt`'s bucket has expired by.
    static func bucketEnd(_ expiresAt: Int64, countedAt: Int64) -> Int64 {
        let ahead = expiresAt - countedAt
        func roundedUp(_ width: Int64) -> Int64 {
            let (q, r) = expiresAt.quotientAndRemainder(dividingBy: width)
            return r == 0 ? expiresAt : (q + 1) * width
        }
        if ahead <= day { return roundedUp(second) }
        if ahead <= 366 * day { return roundedUp(hour) }
        // Past 2^62 ms (146 million years) one last bucket.
        if ahead > Int64(1) << 62 { return Int64.max }
        let power = Int64(1) << min(62, 64 - UInt64(ahead - 1).leadingZeroBitCount)
        let (end, overflow) = countedAt.addingReportingOverflow(power)
        return overflow ? Int64.max : end
    }

    mutating func add(_ expiresAt: Int64, countedAt: Int64) {
        let end = ExpiryHistogram.bucketEnd(expiresAt, countedAt: countedAt)
        var bucket = building[end] ?? Bucket()
        bucket.count += 1
        bucket.expirySum += Double(expiresAt)
        building[end] = bucket
        total += 1
    }

    /// Turns the buckets into the sorted form `remaining` reads.
    mutating func seal() {
        let sorted = building.sorted { $0.key < $1.key }
        building = [:]
        ends = sorted.map(\.key)
        countFrom = Array(repeating: 0, count: sorted.count + 1)
        sumFrom = Array(repeating: 0, count: sorted.count + 1)
        for i in stride(from: sorted.count - 1, through: 0, by: -1) {
            countFrom[i] = countFrom[i + 1] + sorted[i].value.count
            sumFrom[i] = sumFrom[i + 1] + sorted[i].value.expirySum
        }
    }

    /// The keys whose bucket has not ended by `now` (sealed histograms only) and the sum of
    /// their expiry times.
    func remaining(at now: Int64) -> (count: Int, expirySum: Double) {
        guard !ends.isEmpty else { return (0, 0) }
        var low = 0, high = ends.count
        while low < high {
            let mid = (low + high) / 2
            if ends[mid] <= now { low = mid + 1 } else { high = mid }
        }
        return (countFrom[low], sumFrom[low])
    }
}
