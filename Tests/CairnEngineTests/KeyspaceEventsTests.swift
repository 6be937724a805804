@testable import CairnEngine
import RESP
import Synchronization
import Testing

/// Keyspace notifications in-process (`KeyspaceEvents`): the option's parsing and canonical form,
/// the log-data blob replicas read, and the events an engine publishes (and does not) for
/// commands run alone, in EXEC, by the expiry sweep and on a replica. The comparison with
/// redis-server, command by command, is Tests/integration/test_keyspace_events.py.
@Suite struct KeyspaceEventsTests {
    /// Redis 7.0.15's answers to CONFIG SET then GET of each string (read from redis-server).
    @Test func parsesAndFormatsAsRedis() {
        let cases: [(String, String)] = [
            ("KEA", "AKE"), ("A", "A"), ("KEn", "nKE"), ("Kd", "dK"), ("g$lshzxetmndKE", "AKEm"),
            ("", ""), ("Ex", "xE"), ("Km", "Km"), ("lzhs$g", "g$lshz"),
            ("KEAn", "AKE"), ("e", "e"), ("t", "t"),
        ]
        for (given, shown) in cases {
            let parsed = KeyspaceEvents.parse(given)
            #expect(parsed != nil, "\(given)")
            #expect(parsed.map(KeyspaceEvents.format) == shown, "\(given)")
        }
        for bad in ["Kq", "KE ", "kea", "x1"] { #expect(KeyspaceEvents.parse(bad) == nil, "\(bad)") }
        // `n` stays on beside A, though not shown.
        #expect(KeyspaceEvents.parse("KEAn")!.contains(.new))
        // Without K or E nothing is published, whatever the classes.
        #expect(KeyspaceEvents.active(KeyspaceEvents.parse("A")!) == 0)
        #expect(KeyspaceEvents.active(KeyspaceEvents.parse("")!) == 0)
        #expect(KeyspaceEvents.active(KeyspaceEvents.parse("Eg")!) != 0)
    }

    @Test func configSetRefusesWithRedissText() throws {
        let h = try EngineHarness()
        #expect(h.run("CONFIG", "SET", "notify-keyspace-events", "KEq")
            == .error("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."))
        #expect(h.run("CONFIG", "SET", "notify-keyspace-events", "KEA") == .ok)
        #expect(h.run("CONFIG", "GET", "notify-keyspace-events") == .array([.bulk("notify-keyspace-events"), .bulk("AKE")]))
    }

    @Test func eventsBlobRoundTrips() {
        let events = [
            KeyspaceEvents.Event(type: .string, name: "set", key: Array("k".utf8)),
            KeyspaceEvents.Event(type: .generic, name: "del", key: [0, 255, 10, 13]),
            KeyspaceEvents.Event(type: .new, name: "new", key: Array(repeating: 7, count: 300)),
        ]
        let blob = KeyspaceEvents.encode(events)
        #expect(KeyspaceEvents.decode(blob[...]) == events)
        #expect(KeyspaceEvents.decode(Array("other log data".utf8)[...]) == nil)
        #expect(KeyspaceEvents.decode(blob.dropLast()) == nil)
    }

    /// A subscriber to every keyevent channel of `engine`: the (event, key) pairs it received.
    final class Listener: Sendable {
        final class Received: Sendable {
            let pairs = Mutex<[(String, String)]>([])
        }
        let received = Received()
        let subscriber: Subscriber

        init(_ engine: Engine, id: Int64 = 9_000) {
            let received = self.received
            subscriber = Subscriber(id: id, version: .v2) { bytes in
                var parser = ValueParser()
                parser.append(bytes)
                guard case .array(let parts)? = try? parser.next(), parts.count == 4,
                      case .bulkString(let channel) = parts[2], case .bulkString(let key) = parts[3] else { return }
                let event = String(decoding: channel.dropFirst("__keyevent@0__:".utf8.count), as: UTF8.self)
                received.pairs.withLock { $0.append((event, String(decoding: key, as: UTF8.self))) }
            }
            _ = engine.pubsub.add(subscriber, to: Array("__keyevent@0__:*".utf8), .pattern)
        }

        /// What arrived since the last call.
        func take() -> [String] {
            received.pairs.withLock { r in
                defer { r = [] }
                return r.map { "\($0.0) \($0.1)" }
            }
        }
    }

    @Test func offPublishesNothingAndOnPublishesAfterEachWrite() throws {
        let h = try EngineHarness()
        let listener = Listener(h.engine)
        h.run("SET", "a", "1")
        h.run("LPUSH", "l", "x")
        #expect(listener.take().isEmpty)
        h.run("CONFIG", "SET", "notify-keyspace-events", "EAn")
        h.run("SET", "a", "2", "EX", "100")
        h.run("SET", "b", "1")
        h.run("LPOP", "l")
        h.run("DEL", "a", "missing")
        h.run("HSET", "h", "f", "v")
        h.run("RENAME", "h", "h2")
        #expect(listener.take() == [
            "set a", "expire a", "new b", "set b", "lpop l", "del l", "del a", "new h", "hset h",
            "new h2", "rename_from h", "rename_to h2",
        ])
        // A write that fails publishes nothing.
        #expect(h.run("INCR", "b") == .integer(2))
        #expect(listener.take() == ["incrby b"])
        h.run("SET", "s", "text")
        _ = listener.take()
        #expect(h.run("INCR", "s") == .error("ERR value is not an integer or out of range"))
        #expect(h.run("LPUSH", "s", "x") == .error("WRONGTYPE Operation against a key holding the wrong kind of value"))
        #expect(listener.take().isEmpty)
    }

    @Test func keyMissesOnlyForReads() throws {
        let h = try EngineHarness()
        let listener = Listener(h.engine)
        h.run("CONFIG", "SET", "notify-keyspace-events", "Em")
        h.run("GET", "a")
        h.run("HGET", "h", "f")
        h.run("LCS", "x", "y")
        h.run("INCR", "n")  // a write's lookup: no miss
        h.run("OBJECT", "ENCODING", "o")  // Redis's OBJECT looks up without a miss
        #expect(listener.take() == ["keymiss a", "keymiss h", "keymiss x", "keymiss y"])
    }

    @Test func execPublishesWhenItCommits() throws {
        let h = try EngineHarness()
        let listener = Listener(h.engine)
        h.run("CONFIG", "SET", "notify-keyspace-events", "EA")
        h.run("MULTI")
        h.run("SET", "a", "1")
        h.run("SADD", "s", "m")
        h.run("INCR", "a")
        #expect(listener.take().isEmpty)
        h.run("EXEC")
        #expect(listener.take() == ["set a", "sadd s", "incrby a"])
        // A batched round of two connections: each one's events in its order.
        let other = h.otherSession()
        let runs = [
            Engine.BatchedRun(session: h.session, requests: [["HSET", "h", "f", "1"], ["HINCRBY", "h", "f", "1"]].map { $0.map { Array($0.utf8) } }, version: .v2),
            Engine.BatchedRun(session: other, requests: [["RPUSH", "l", "x"], ["RPOP", "l"]].map { $0.map { Array($0.utf8) } }, version: .v2),
        ]
        _ = h.engine.executeBatched(runs)
        #expect(listener.take() == ["hset h", "hincrby h", "rpush l", "rpop l", "del l"])
    }

    @Test func theSweepAndReadsPublishExpiredOnce() throws {
        let h = try EngineHarness()
        let listener = Listener(h.engine)
        h.run("CONFIG", "SET", "notify-keyspace-events", "Ex")
        h.run("SET", "a", "1", "PX", "1")
        h.run("SET", "b", "1", "PX", "1")
        h.run("SET", "c", "1", "EX", "100")
        let later = Clock.milliseconds() + 50
        while Clock.milliseconds() < later {}
        h.run("GET", "a")
        h.run("GET", "a")
        #expect(listener.take() == ["expired a"])
        h.engine.expirySweep.step(h.engine, now: Clock.milliseconds())
        #expect(listener.take() == ["expired b"])
        h.engine.expirySweep.step(h.engine, now: Clock.milliseconds())
        #expect(listener.take().isEmpty)
        // A write that finds its key expired: `expired` first, then its own events.
        h.run("CONFIG", "SET", "notify-keyspace-events", "Ex$n")
        h.run("SET", "w", "1", "PX", "1")
        let after = Clock.milliseconds() + 20
        while Clock.milliseconds() < after {}
        _ = listener.take()
        h.run("SET", "w", "2")
        h.run("LPUSHX", "w", "x")  // WRONGTYPE: a string, nothing expires again
        #expect(listener.take() == ["expired w", "new w", "set w"])
    }

    /// The primary's events travel in its batches (log data); the replica publishes them once it
    /// applied each batch, filtered by its own setting.
    @Test func aReplicaPublishesThePrimarysEvents() throws {
        let primary = try EngineHarness()
        let replica = try EngineHarness()
        primary.run("CONFIG", "SET", "notify-keyspace-events", "EA")
        replica.run("CONFIG", "SET", "notify-keyspace-events", "Eg$l")
        let listener = Listener(replica.engine)
        // As a replica's PSYNC does: from now on the primary keeps its WAL (and writes the
        // events of commands run alone for replicas).
        primary.engine.replication.keepWAL(primary.engine)
        let feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        defer { feed.close() }
        primary.run("SET", "a", "1")
        primary.run("HSET", "h", "f", "v")  // class h: off on the replica
        primary.run("MULTI")
        primary.run("RPUSH", "l", "x")
        primary.run("DEL", "a")
        primary.run("EXEC")
        primary.run("SET", "e", "1", "PX", "1")
        let later = Clock.milliseconds() + 20
        while Clock.milliseconds() < later {}
        primary.engine.expirySweep.step(primary.engine, now: Clock.milliseconds())
        // A write that finds its key expired: replicas see the primary's deletion as `del`.
        primary.run("SET", "w", "1", "PX", "1")
        let after = Clock.milliseconds() + 20
        while Clock.milliseconds() < after {}
        primary.run("MULTI")
        primary.run("INCR", "w")
        primary.run("EXEC")
        for (sequence, data) in try ReplicationTests.batches(feed) {
            #expect(try replica.engine.replication.apply(replica.engine, sequence: sequence, data: data))
        }
        #expect(replica.engine.replicationOffset == primary.engine.replicationOffset)
        #expect(listener.take() == ["set a", "rpush l", "del a", "set e", "expire e", "del e", "set w", "expire w", "del w", "incrby w"])
    }
}
