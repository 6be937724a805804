import CairnEngine
import RESP
import Testing

/// Consecutive plain GETs of one read run as one batched MultiGet (`executePlainGets`): each
/// reply must be exactly what a GET alone would answer.
@Suite struct GroupedGetTests {
    /// Runs `requests` through the grouped path and decodes every reply.
    func grouped(_ h: EngineHarness, _ keys: [String]) throws -> [RESPValue] {
        var out = RESPWriter(version: h.session.protocolVersion)
        h.engine.executePlainGets(keys.map { [Array("GET".utf8), Array($0.utf8)] }, session: h.session, out: &out)
        var parser = ValueParser()
        parser.append(out.bytes)
        var replies: [RESPValue] = []
        while let v = try parser.next() { replies.append(v) }
        return replies
    }

    @Test func groupedRepliesEqualSingleGets() async throws {
        let h = try EngineHarness()
        h.run("SET", "a", "1")
        h.run("SET", "b", "two")
        h.run([Array("SET".utf8), Array("bin".utf8), [0, 255, 13, 10]])
        h.run("SET", "brief", "v", "PX", "1")
        try await Task.sleep(for: .milliseconds(10))
        let keys = ["a", "missing", "b", "brief", "bin", "a"]
        let singles = keys.map { h.run("GET", $0) }
        #expect(try grouped(h, keys) == singles)
        #expect(singles[3] == .null, "an expired key reads as missing")
        #expect(singles[4] == .bulkString([0, 255, 13, 10]))
    }

    @Test func groupedGetsReadTheSessionsFamilyAndSnapshot() throws {
        let h = try EngineHarness()
        h.run("SET", "k", "default")
        h.run("CF.CREATE", "other")
        h.run("CF.USE", "other")
        h.run("SET", "k", "old")
        let snapshot = h.run("SNAPSHOT.CREATE")
        h.run("SET", "k", "new")
        #expect(try grouped(h, ["k", "k"]) == [.bulk("new"), .bulk("new")])
        guard case .integer(let id) = snapshot else { Issue.record("no snapshot id"); return }
        h.run("SNAPSHOT.USE", String(id))
        #expect(try grouped(h, ["k", "nope"]) == [.bulk("old"), .null])
        h.run("SNAPSHOT.USE", "NONE")
        h.run("CF.USE", "default")
        #expect(try grouped(h, ["k", "k"]) == [.bulk("default"), .bulk("default")])
    }
}
