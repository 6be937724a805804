@testable import CairnEngine
import RESP
import Rocks
import Testing

/// A replica writes batches that arrived together and follow one another as one RocksDB write.
/// Its operations must still get the primary's sequence numbers, and a follower of the
/// replica (after a failover, or a replica of it) that stands inside such a batch must still
/// continue from there.
@Suite struct ReplicationJoinedBatchTests {
    typealias Shipped = [(UInt64, [UInt8])]

    static func received(_ shipped: Shipped.SubSequence) -> [Replication.ReceivedBatch] {
        shipped.map { Replication.ReceivedBatch(sequence: $0.0, data: $0.1) }
    }

    /// A primary's writes as separate batches, none changing a family.
    static func primaryWithBatches() throws -> (EngineHarness, Shipped) {
        let primary = try EngineHarness()
        let feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        defer { feed.close() }
        primary.run("SET", "a", "1")
        primary.run("MSET", "b", "2", "c", "3", "d", "4")
        primary.run("HSET", "h", "f", "v", "g", "w")
        primary.run("ZADD", "z", "1", "one", "2", "two")
        primary.run("DEL", "c")
        primary.run("RPUSH", "l", "x", "y", "z")
        primary.run("INCR", "n")
        primary.run("DELRANGE", "[b", "(c")
        primary.run("SET", "e", "5")
        let shipped = try ReplicationTests.batches(feed)
        return (primary, shipped)
    }

    @Test func batchesThatFollowOneAnotherAreOneWriteWithThePrimarysSequenceNumbers() throws {
        let (primary, shipped) = try Self.primaryWithBatches()
        #expect(shipped.count == 9)
        let replica = try EngineHarness()
        let result = try replica.engine.replication.apply(replica.engine, Self.received(shipped[...]))
        #expect(result.batches == shipped.count && result.writes == 1)
        #expect(replica.engine.replicationOffset == primary.engine.replicationOffset)
        #expect(try DigestCommands.digest(replica.engine) == DigestCommands.digest(primary.engine))

        // The replica's WAL holds one batch: the primary's records in order, numbered from
        // the first batch's sequence, so every operation has the primary's sequence number.
        let iterator = try replica.engine.database.updates(since: shipped[0].0)
        let entry = try #require(try iterator.next())
        #expect(entry.sequence == shipped[0].0)
        #expect(entry.data == SerializedBatch.joined(shipped.map(\.1), sequence: shipped[0].0))
        #expect(try iterator.next() == nil)
    }

    @Test func aFollowerContinuesFromInsideAJoinedBatch() throws {
        let (primary, shipped) = try Self.primaryWithBatches()
        let replica = try EngineHarness()
        try replica.engine.replication.apply(replica.engine, Self.received(shipped[...]))
        for k in 1..<shipped.count {
            // A follower that has the primary's first k batches (written one by one).
            let follower = try EngineHarness()
            try follower.engine.replication.apply(follower.engine, Self.received(shipped[..<k]))
            let from = shipped[k].0
            #expect(follower.engine.replicationOffset + 1 == from)
            // The replica (now, say, a primary) can continue it: a partial sync.
            #expect(replica.engine.replication.walReaches(back: from, in: replica.engine.database))
            let feed = WALFeed(engine: replica.engine, from: from)
            defer { feed.close() }
            let sent = try ReplicationTests.batches(feed)
            #expect(sent.count == 1 && sent[0].0 == from)
            #expect(sent[0].1 == SerializedBatch.joined(shipped[k...].map(\.1), sequence: from))
            for (sequence, data) in sent {
                #expect(try follower.engine.replication.apply(follower.engine, sequence: sequence, data: data))
            }
            #expect(follower.engine.replicationOffset == primary.engine.replicationOffset)
            #expect(try DigestCommands.digest(follower.engine) == DigestCommands.digest(primary.engine))
        }
        // Not inside any batch: past the end, or a sequence the WAL never had.
        #expect(!replica.engine.replication.walReaches(back: primary.engine.replicationOffset + 2, in: replica.engine.database))
    }

    @Test func aFamilyChangeIsWrittenAloneAndAnAppliedPrefixIsSkipped() throws {
        let primary = try EngineHarness()
        let feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        defer { feed.close() }
        primary.run("SET", "a", "1")
        primary.run("SET", "b", "2")
        primary.run("CF.CREATE", "counts", "MERGE", "add")
        primary.run("CF.USE", "counts")
        primary.run("MERGE", "n", "5")
        primary.run("MERGE", "n", "7")
        primary.run("CF.USE", "default")
        primary.run("SET", "c", "3")
        let shipped = try ReplicationTests.batches(feed)
        #expect(shipped.count == 6)
        let replica = try EngineHarness()
        #expect(try replica.engine.replication.apply(replica.engine, sequence: shipped[0].0, data: shipped[0].1))
        // The first is here already; the second alone (the family follows); the family's
        // record alone; the three after it together.
        let result = try replica.engine.replication.apply(replica.engine, Self.received(shipped[...]))
        #expect(result.batches == 5 && result.writes == 3)
        #expect(replica.engine.replicationOffset == primary.engine.replicationOffset)
        #expect(try DigestCommands.digest(replica.engine) == DigestCommands.digest(primary.engine))
        replica.run("CF.USE", "counts")
        #expect(replica.run("GET", "n") == .bulk("12"))
    }

    @Test func aGapStopsAfterTheBatchesBeforeIt() throws {
        let (primary, shipped) = try Self.primaryWithBatches()
        _ = primary
        let replica = try EngineHarness()
        var batches = Self.received(shipped[..<3])
        batches += Self.received(shipped[4...])
        #expect(throws: Replication.ApplyError.self) {
            try replica.engine.replication.apply(replica.engine, batches)
        }
        // The three before the gap were written (as one).
        let third = shipped[2]
        #expect(replica.engine.replicationOffset == third.0 + UInt64(SerializedBatch.count(third.1)!) - 1)
    }

    @Test func aBatchsRestFromASequenceInsideIt() throws {
        var batch = WriteBatch()
        batch.put(Array("k1".utf8), Array("v1".utf8))
        batch.delete(Array("k2".utf8))
        batch.merge(Array("k3".utf8), Array("1".utf8))
        batch.deleteRange(from: Array("a".utf8), to: Array("b".utf8))
        batch.put(Array("k4".utf8), Array("v4".utf8))
        let data = batch.data
        let rest = try #require(SerializedBatch.suffix(of: data, startingAt: 100, from: 103))
        #expect(SerializedBatch.count(rest) == 2)
        var reader = BatchReader(rest)
        #expect(reader.next()?.kind == .rangeDeletion)
        #expect(reader.next().map { Array($0.key) } == Array("k4".utf8))
        #expect(reader.next() == nil && reader.readAll)
        #expect(rest[0..<8].elementsEqual([103, 0, 0, 0, 0, 0, 0, 0]))
        #expect(SerializedBatch.suffix(of: data, startingAt: 100, from: 100) == data.withSequence(100))
        #expect(SerializedBatch.suffix(of: data, startingAt: 100, from: 105) == nil)
        #expect(SerializedBatch.suffix(of: data, startingAt: 100, from: 99) == nil)
    }
}

private extension Array where Element == UInt8 {
    /// The batch with its header's sequence set to `sequence`.
    func withSequence(_ sequence: UInt64) -> [UInt8] {
        var copy = self
        for i in 0..<8 { copy[i] = UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(i))) }
        return copy
    }
}
