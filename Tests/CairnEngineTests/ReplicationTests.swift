@testable import CairnEngine
import RESP
import Rocks
import Testing

/// WAL shipping in-process: a primary's batches, read with `WALFeed` as the primary's feeder
/// reads them, applied in order on a second engine (`Replication.apply`) leave both with the
/// same data, the same families and the same sequence number.
@Suite struct ReplicationTests {
    /// Every BATCH frame the feed has now, as (sequence, bytes).
    static func batches(_ feed: WALFeed) throws -> [(UInt64, [UInt8])] {
        var out = RESPWriter(version: .v2)
        _ = try feed.read(into: &out, maxBytes: 64 << 20)
        var parser = RequestParser()
        parser.append(out.bytes)
        var result: [(UInt64, [UInt8])] = []
        while let frame = try parser.next() {
            #expect(ReplicationFrame.name(frame) == "BATCH")
            result.append((ReplicationFrame.number(frame[1])!, frame[2]))
        }
        return result
    }

    @Test func aReplicaThatAppliesThePrimarysBatchesHoldsTheSameData() throws {
        let primary = try EngineHarness()
        let replica = try EngineHarness()
        #expect(primary.engine.replicationOffset == replica.engine.replicationOffset)
        let feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        defer { feed.close() }
        primary.run("SET", "a", "1")
        primary.run("MSET", "b", "2", "c", "3")
        primary.run("HSET", "h", "f", "v", "g", "w")
        primary.run("ZADD", "z", "1", "one", "2", "two")
        primary.run("RPUSH", "l", "x", "y", "z")
        primary.run("CF.CREATE", "counts", "MERGE", "add")
        primary.run("CF.USE", "counts")
        primary.run("MERGE", "n", "5")
        primary.run("MERGE", "n", "7")
        primary.run("CF.USE", "default")
        primary.run("CF.CREATE", "gone")
        primary.run("CF.DROP", "gone")
        primary.run("DELRANGE", "[b", "(c")
        primary.run("MULTI")
        primary.run("INCR", "i")
        primary.run("HDEL", "h", "f")
        primary.run("EXEC")
        let shipped = try Self.batches(feed)
        #expect(shipped.count >= 10)
        for (sequence, data) in shipped {
            #expect(try replica.engine.replication.apply(replica.engine, sequence: sequence, data: data))
        }
        #expect(replica.engine.replicationOffset == primary.engine.replicationOffset)
        #expect(try DigestCommands.digest(replica.engine) == DigestCommands.digest(primary.engine))
        #expect(replica.run("CF.LIST") == primary.run("CF.LIST"))
        replica.run("CF.USE", "counts")
        #expect(replica.run("GET", "n") == .bulk("12"))
        replica.run("CF.USE", "default")
        #expect(replica.run("GET", "b") == .null)
        #expect(replica.run("HGETALL", "h") == primary.run("HGETALL", "h"))

        // A resent batch is skipped; one from another history is refused.
        let (first, data) = shipped[0]
        #expect(try replica.engine.replication.apply(replica.engine, sequence: first, data: data) == false)
        primary.run("SET", "later", "x")
        primary.run("SET", "later2", "y")
        let more = try Self.batches(feed)
        #expect(more.count == 2)
        #expect(throws: Replication.ApplyError.self) {
            try replica.engine.replication.apply(replica.engine, sequence: more[1].0, data: more[1].1)
        }
        #expect(replica.run("GET", "later2") == .null)
    }

    @Test func theBatchReaderFindsFamilyEvents() throws {
        let h = try EngineHarness()
        let feed = WALFeed(engine: h.engine, from: h.engine.replicationOffset + 1)
        defer { feed.close() }
        h.run("CF.CREATE", "fam", "MERGE", "max")
        h.run("CF.DROP", "fam")
        let meta = try h.engine.database.familyID(h.engine.database.family(named: Engine.metaFamilyName)!)
        var created: [String] = [], dropped: [String] = [], merges: [String?] = []
        for (_, data) in try Self.batches(feed) {
            let events = FamilyEvents.find(in: data, metaID: meta)
            created += events.created.map(\.name)
            merges += events.created.map(\.settings.merge)
            dropped += events.dropped
        }
        #expect(created == ["fam"] && merges == ["max"] && dropped == ["fam"])
    }

    @Test func aReplicaRefusesWritesButNotReads() throws {
        let h = try EngineHarness()
        h.run("SET", "k", "v")
        h.engine.replication.readOnly.store(true, ordering: .relaxed)
        #expect(h.run("SET", "k", "x") == .error("READONLY You can't write against a read only replica."))
        #expect(h.run("HSET", "h", "f", "v") == .error("READONLY You can't write against a read only replica."))
        #expect(h.run("GET", "k") == .bulk("v"))
        h.run("MULTI")
        #expect(h.run("SET", "k", "x") == .error("READONLY You can't write against a read only replica."))
        #expect(h.run("EXEC") == .error("EXECABORT Transaction discarded because of previous errors."))
    }
}
