@testable import CairnEngine
import RESP
import Rocks
import Testing

@Suite struct KeyspaceCountTests {
    /// Steps until a pass finishes (or `steps` run out); true when one did.
    @discardableResult
    func count(_ h: EngineHarness, budget: Int = .max, now: Int64? = nil, steps: Int = 100) -> Bool {
        for _ in 0..<steps where h.engine.keyspaceCount.step(h.engine, budget: budget, now: now) { return true }
        return false
    }

    func report(_ h: EngineHarness, now: Int64 = Clock.milliseconds()) -> KeyspaceCount.Report? {
        h.engine.keyspaceCount.report(latestSequence: h.engine.database.latestSequenceNumber, now: now)
    }

    @Test func countsWhatDBSIZECountsInEveryFamily() async throws {
        let h = try EngineHarness()
        #expect(report(h) == nil, "no figure before the first count")
        // Absolute expiry times, so the mean TTL is known exactly however slow the machine.
        let t0 = Clock.milliseconds()
        for i in 0..<200 { h.run("SET", "s\(i)", "v") }
        for i in 0..<50 { h.run("SET", "t\(i)", "v", "PXAT", String(t0 + 1_000_000)) }
        for i in 0..<10 {
            h.run("HSET", "h\(i)", "a", "1", "b", "2", "c", "3")
            h.run("RPUSH", "l\(i)", "x", "y")
            h.run("SADD", "set\(i)", "m", "n")
            h.run("ZADD", "z\(i)", "1", "m", "2", "n")
        }
        h.run("PEXPIREAT", "h0", String(t0 + 500_000))
        // Expired but not swept: not counted, as DBSIZE does not.
        h.run("SET", "gone", "v", "PX", "1")
        try await Task.sleep(for: .milliseconds(5))
        h.run("CF.CREATE", "other")
        let other = h.otherSession()
        h.run("CF.USE", "other", on: other)
        for i in 0..<30 { h.run("SET", "o\(i)", "v", "PXAT", String(t0 + 100_000), on: other) }
        #expect(count(h, budget: 7))
        let at = Clock.milliseconds()
        let r = try #require(report(h, now: at))
        guard case .integer(let dbsize) = h.run("DBSIZE") else { Issue.record("DBSIZE"); return }
        #expect(dbsize == 290)
        #expect(r.keys == 290 + 30)
        #expect(r.expires == 50 + 1 + 30)
        #expect(r.isCurrent)
        // 50 keys at 1000 s, one at 500 s, 30 at 100 s.
        let expected = t0 + (50 * 1_000_000 + 500_000 + 30 * 100_000) / 81 - at
        #expect(abs(r.averageTTL - expected) <= 1)
        // Nothing written: no new pass, however often INFO asks.
        h.engine.keyspaceCount.noteAsked()
        #expect(!count(h, steps: 3))
        h.run("SET", "more", "v")
        #expect(report(h)?.isCurrent == false)
    }

    @Test func flushAndDropResetAtOnce() throws {
        let h = try EngineHarness()
        for i in 0..<100 { h.run("SET", "k\(i)", "v") }
        h.run("CF.CREATE", "other")
        let other = h.otherSession()
        h.run("CF.USE", "other", on: other)
        for i in 0..<20 { h.run("SET", "o\(i)", "v", on: other) }
        #expect(count(h))
        #expect(report(h)?.keys == 120)
        h.run("FLUSHDB", on: other)
        #expect(report(h)?.keys == 100)
        for i in 0..<20 { h.run("SET", "o\(i)", "v", on: other) }
        h.run("CF.DROP", "other")
        #expect(report(h)?.keys == 100)
        h.run("FLUSHALL")
        #expect(report(h)?.keys == 0)
        #expect(report(h)?.isCurrent == false, "the next count confirms it")
    }

    @Test func aResetThrowsAwayAPassUnderWay() throws {
        let h = try EngineHarness()
        for i in 0..<1000 { h.run("SET", "k\(i)", "v") }
        #expect(!h.engine.keyspaceCount.step(h.engine, budget: 100))
        #expect(h.engine.keyspaceCount.isCounting)
        #expect(h.engine.database.openSnapshotCount == 1)
        h.run("FLUSHALL")
        #expect(report(h)?.keys == 0)
        // The pass's keys predate the flush: it is dropped, its snapshot released, and a new
        // one counts the emptied database.
        h.engine.keyspaceCount.noteAsked()
        #expect(count(h, budget: 100, now: Clock.milliseconds() + 10_000))
        #expect(report(h)?.keys == 0)
        #expect(report(h)?.isCurrent == true)
        #expect(h.engine.database.openSnapshotCount == 0)
        // Forgetting (a database swap, closing) releases a pass's snapshot.
        h.run("SET", "a", "v")
        h.engine.keyspaceCount.noteAsked()
        h.run("SET", "b", "v")
        #expect(!h.engine.keyspaceCount.step(h.engine, budget: 1, now: Clock.milliseconds() + 30_000))
        #expect(h.engine.database.openSnapshotCount == 1)
        h.engine.keyspaceCount.forget()
        #expect(h.engine.database.openSnapshotCount == 0)
        #expect(report(h) == nil)
    }

    @Test func overwritesDoNotGrowTheCount() throws {
        let h = try EngineHarness()
        for round in 0..<5 {
            for i in 0..<300 { h.run("SET", "k\(i)", "\(round)") }
            h.engine.keyspaceCount.noteAsked()
            #expect(count(h, now: Clock.milliseconds() + Int64(round + 1) * 10_000))
            #expect(report(h)?.keys == 300)
        }
    }

    @Test func keysLeaveTheCountWhenTheyExpire() throws {
        let h = try EngineHarness()
        let t0 = Clock.milliseconds()
        for i in 0..<10 { h.run("SET", "soon\(i)", "v", "PXAT", String(t0 + 3_000)) }
        for i in 0..<5 { h.run("SET", "later\(i)", "v", "PXAT", String(t0 + 2 * 86_400_000)) }
        h.run("SET", "plain", "v")
        #expect(count(h, now: t0))
        #expect(report(h, now: t0)?.keys == 16)
        #expect(report(h, now: t0)?.expires == 15)
        // Without another pass: once their second is over they no longer count.
        #expect(report(h, now: t0 + 4_000)?.keys == 6)
        #expect(report(h, now: t0 + 4_000)?.expires == 5)
        let average = try #require(report(h, now: t0 + 4_000)).averageTTL
        #expect(average == 2 * 86_400_000 - 4_000)
        // Past the hour bucket of the far ones.
        #expect(report(h, now: t0 + 2 * 86_400_000 + 3_600_000)?.keys == 1)
        #expect(report(h, now: t0 + 2 * 86_400_000 + 3_600_000)?.averageTTL == 0)
    }

    @Test func bucketsCoverTheirKeys() {
        let t0: Int64 = 1_700_000_000_123
        for ahead: Int64 in [1, 999, 1000, 1001, 86_400_000, 86_400_001, 366 * 86_400_000, 366 * 86_400_000 + 1, 1 << 40, (1 << 62) - 5, 1 << 62, Int64.max - t0] {
            let end = ExpiryHistogram.bucketEnd(t0 + ahead, countedAt: t0)
            #expect(end >= t0 + ahead)
        }
        #expect(ExpiryHistogram.bucketEnd(t0 + 1500, countedAt: t0) == 1_700_000_002_000)
        var h = ExpiryHistogram()
        for i in 0..<200_000 { h.add(t0 + Int64(i) * 9_973, countedAt: t0) }
        h.seal()
        #expect(h.total == 200_000)
        #expect(h.remaining(at: t0).count == 200_000)
        // Within the first day, one-second buckets: exact to the second.
        #expect(h.remaining(at: t0 + 9_973 * 1000 + 1000).count == 200_000 - 1001)
        #expect(h.remaining(at: t0 + 9_973 * 200_000 + 3_600_000).count == 0)
    }

    @Test func stepsStopAtTheirTimeBudget() throws {
        let h = try EngineHarness()
        var batch: [[UInt8]] = [Array("MSET".utf8)]
        for i in 0..<300_000 { batch += [Array("k\(i)".utf8), Array("v".utf8)] }
        _ = h.run(batch)
        let clock = ContinuousClock()
        var steps = 0
        var longest = Duration.zero
        var finished = false
        while !finished {
            let elapsed = clock.measure { finished = h.engine.keyspaceCount.step(h.engine, milliseconds: 2) }
            longest = max(longest, elapsed)
            steps += 1
        }
        #expect(steps > 10, "300,000 keys take far more than 2 ms to walk: the budget ends each step")
        // Loose on purpose: tests run in parallel on two cores.
        #expect(longest < .seconds(1))
        #expect(report(h)?.keys == 300_000)
    }
}
