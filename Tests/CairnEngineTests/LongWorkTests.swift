import CairnEngine
import RESP
import Testing

/// Collection commands over many members run off the worker (LongWork.swift): the request's
/// reply is deferred work, which gives the same reply as running inline; small requests and
/// requests inside MULTI run inline.
@Suite struct LongWorkTests {
    /// A session the way the server makes one: it can be answered later.
    static func serverSession(_ h: EngineHarness) -> Session {
        let s = h.engine.makeSession(record: ClientRecord(id: h.engine.clients.makeID(), address: "127.0.0.1:9", localAddress: "127.0.0.1:7379", now: 0), canDefer: true)
        h.engine.clients.add(s.record)
        return s
    }

    /// Runs `words` on `session`: the reply, and whether it was deferred.
    static func run(_ h: EngineHarness, _ session: Session, _ words: String...) -> (RESPValue, deferred: Bool) {
        var out = RESPWriter(version: session.protocolVersion)
        let outcome = h.engine.execute(words.map { Array($0.utf8) }, session: session, out: &out)
        if let work = outcome.deferred { work(&out) }
        var parser = ValueParser()
        parser.append(out.bytes)
        return ((try? parser.next()) ?? .error("no reply"), outcome.deferred != nil)
    }

    static func fill(_ h: EngineHarness, members: Int) {
        for start in stride(from: 0, to: members, by: 1000) {
            let ids = start..<min(members, start + 1000)
            h.run(["SADD", "s1"].map { Array($0.utf8) } + ids.map { Array("m\($0)".utf8) })
            h.run(["SADD", "s2"].map { Array($0.utf8) } + ids.map { Array("m\($0 + members / 2)".utf8) })
            h.run(["RPUSH", "l"].map { Array($0.utf8) } + ids.map { Array("e\($0)".utf8) })
        }
    }

    @Test func bigCollectionCommandsAreDeferredAndAnswerAlike() throws {
        let h = try EngineHarness()
        Self.fill(h, members: 10_000)
        let s = Self.serverSession(h)
        let inline = h.session  // in-process: never deferred
        let (union, unionDeferred) = Self.run(h, s, "SUNIONSTORE", "u", "s1", "s2")
        #expect(unionDeferred)
        #expect(union == .integer(15_000))
        #expect(h.run("SCARD", "u", on: inline) == .integer(15_000))
        let (inter, interDeferred) = Self.run(h, s, "SINTERCARD", "2", "s1", "s2")
        #expect(interDeferred && inter == .integer(5_000))
        #expect(h.run("SINTERCARD", "2", "s1", "s2", on: inline) == .integer(5_000))
        let (pos, posDeferred) = Self.run(h, s, "LPOS", "l", "e9999")
        #expect(posDeferred && pos == .integer(9_999))
        // Small work stays on the worker: a short range of a big list, a small set.
        #expect(!Self.run(h, s, "LRANGE", "l", "0", "99").deferred)
        #expect(Self.run(h, s, "LRANGE", "l", "0", "-1").deferred)
        h.run("SADD", "small", "a", "b")
        #expect(!Self.run(h, s, "SMEMBERS", "small").deferred)
        // Inside MULTI the command runs in EXEC's batch, inline.
        #expect(Self.run(h, s, "MULTI").0 == .ok)
        #expect(Self.run(h, s, "SUNIONSTORE", "u2", "s1", "s2").0 == .simpleString("QUEUED"))
        let (exec, execDeferred) = Self.run(h, s, "EXEC")
        #expect(!execDeferred && exec == .array([.integer(15_000)]))
    }
}
