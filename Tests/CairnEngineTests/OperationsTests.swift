@testable import CairnEngine
import RESP
import Testing

/// The statistics, slow log and MONITOR feed: one spot (`Engine.completed`) every executor
/// reports to, checked in-process through the grouped executors as the server runs them.
@Suite struct OperationsTests {
    static func argv(_ words: [String]) -> [[UInt8]] { words.map { Array($0.utf8) } }

    @Test func histogramBucketsHoldTheirValues() {
        var values = [0, 1, 7, 8, 9, 15, 16, 1000, 1023, 1024, 1025, 123_456, 999_999_999, Int(Int32.max)]
        var g = SystemRandomNumberGenerator()
        for _ in 0..<1000 { values.append(Int(g.next() % (1 << 40))) }
        for v in values {
            let b = CommandMetrics.bucket(v)
            #expect(CommandMetrics.upperBound(b) >= v, "value \(v) above its bucket \(b)")
            if b > 0 { #expect(CommandMetrics.upperBound(b - 1) < v, "value \(v) fits an earlier bucket") }
            // Eight sub-buckets per power of two: within 12.5%.
            #expect(Double(CommandMetrics.upperBound(b)) <= Double(v) * 1.125 + 1)
        }
    }

    @Test func percentilesAndPowerOfTwoHistogram() {
        let m = CommandMetrics(name: "get")
        #expect(m.percentilesMicroseconds([50]) == nil)
        for _ in 0..<90 { m.record(count: 1, totalNanoseconds: 1_000, failed: 0) }
        m.record(count: 10, totalNanoseconds: 10 * 100_000, failed: 2)
        let p = m.percentilesMicroseconds([50, 99])!
        #expect(p[0] >= 1 && p[0] < 1.2)
        #expect(p[1] >= 100 && p[1] < 113)
        #expect(m.calls.value == 100 && m.failedCalls.value == 2)
        let h = m.powerOfTwoHistogram()
        #expect(h.first?.upToMicroseconds == 1 && h.first?.cumulative == 90)
        #expect(h.last?.cumulative == 100)
        #expect(h.map(\.upToMicroseconds).allSatisfy { $0 & ($0 - 1) == 0 })
    }

    @Test func slowLogTrimsAsRedis() {
        let many = Self.argv(["DEL"] + (0..<40).map { "k\($0)" })
        let trimmed = SlowLog.trimmed(many)
        #expect(trimmed.count == 32)
        #expect(trimmed[31] == Array("... (10 more arguments)".utf8))
        let long = SlowLog.trimmed(Self.argv(["SET", "k", String(repeating: "a", count: 200)]))
        #expect(long[2] == Array(String(repeating: "a", count: 128).utf8) + Array("... (72 more bytes)".utf8))
        #expect(SlowLog.redacted(Self.argv(["auth", "u", "p"])) == Self.argv(["auth", "(redacted)", "(redacted)"]))
        #expect(SlowLog.redacted(Self.argv(["HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"]))
            == Self.argv(["HELLO", "3", "AUTH", "(redacted)", "(redacted)", "SETNAME", "n"]))
        #expect(SlowLog.redacted(Self.argv(["HELLO", "3", "AUTH"])) == Self.argv(["HELLO", "3", "AUTH"]))
    }

    @Test func monitorLineQuotesAsRedis() {
        let line = Monitors.line([Array("set".utf8), [0x61, 0x22, 0x5c, 0x0a, 0x01, 0xff]], address: "127.0.0.1:5555", at: 1_700_000_000_000_123)
        #expect(String(decoding: line, as: UTF8.self) == "+1700000000.000123 [0 127.0.0.1:5555] \"set\" \"a\\\"\\\\\\n\\x01\\xff\"\r\n")
    }

    @Test func everyExecutorFeedsTheStatisticsSlowLogAndMonitors() throws {
        let h = try EngineHarness { $0.slowlogLogSlowerThan = 0 }
        let lines = LinesSink()
        let sink = MonitorSink(limit: 1 << 20, wake: {}, overflow: {})
        h.engine.monitors.add(99, sink)
        var out = RESPWriter(version: .v2)
        let requests = [["GET", "a"], ["GET", "b"], ["SET", "a", "1"], ["SET", "b", "2"], ["INCR", "n"], ["SET", "c", "3", "NX"],
                        ["MULTI"], ["SET", "d", "4"], ["EXEC"]].map(Self.argv)
        h.engine.executePipeline(requests, session: h.session, out: &out)
        let stats = h.engine.stats.commands
        func calls(_ name: String) -> Int { stats[h.engine.table.find(name)!].calls.value }
        #expect(calls("get") == 2)
        #expect(calls("set") == 4)
        #expect(calls("incr") == 1)
        #expect(calls("exec") == 1 && calls("multi") == 1)
        let logged = h.engine.stats.slowLog.latest(-1).map { $0.argv.map { String(decoding: $0, as: UTF8.self) } }
        #expect(logged.count == 8, "every request but EXEC (skip_slowlog): \(logged)")
        #expect(!logged.contains(["EXEC"]))
        lines.append(sink.take())
        #expect(lines.text.components(separatedBy: "\r\n").filter { !$0.isEmpty }.count == 9)
        #expect(lines.text.contains("\"SET\" \"d\" \"4\"") && lines.text.contains("\"EXEC\""))
        h.engine.monitors.remove(99)
    }

    @Test func refusedAndFailedCallsAreCounted() throws {
        let h = try EngineHarness()
        h.run("GET")
        h.run("SET", "t", "x")
        h.run("INCRBYFLOAT", "t", "1")
        let stats = h.engine.stats.commands
        #expect(stats[h.engine.table.find("get")!].rejectedCalls.value == 1)
        #expect(stats[h.engine.table.find("incrbyfloat")!].failedCalls.value == 1)
        #expect(h.engine.stats.errorsByPrefix.first { $0.0 == "ERR" }?.1 == 2)
    }

    @Test func clientPauseHoldsWritesOnly() throws {
        let h = try EngineHarness()
        #expect(h.engine.pauseDelay(Self.argv(["SET", "k", "v"]), session: h.session) == nil)
        h.run("CLIENT", "PAUSE", "10000", "WRITE")
        #expect(h.engine.pauseDelay(Self.argv(["SET", "k", "v"]), session: h.session) != nil)
        #expect(h.engine.pauseDelay(Self.argv(["GET", "k"]), session: h.session) == nil)
        h.run("MULTI")
        #expect(h.engine.pauseDelay(Self.argv(["SET", "k", "v"]), session: h.session) == nil, "queued, not run")
        h.run("SET", "k", "v")
        #expect(h.engine.pauseDelay(Self.argv(["EXEC"]), session: h.session) != nil, "an EXEC that writes waits")
        h.run("DISCARD")
        h.run("CLIENT", "UNPAUSE")
        #expect(h.engine.pauseDelay(Self.argv(["SET", "k", "v"]), session: h.session) == nil)
        h.run("CLIENT", "PAUSE", "10000", "ALL")
        #expect(h.engine.pauseDelay(Self.argv(["PING"]), session: h.session) != nil)
        h.engine.pause.unpause()
    }
}

/// Collects MONITOR lines in a test.
final class LinesSink: @unchecked Sendable {
    var text = ""
    func append(_ bytes: [UInt8]) { text += String(decoding: bytes, as: UTF8.self) }
}
