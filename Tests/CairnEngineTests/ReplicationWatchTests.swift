@testable import CairnEngine
import RESP
import Testing

/// A WATCH on a replica fires when a replicated batch changes the watched key, as in Redis:
/// `Replication.apply` moves the lock stripes of the keys each batch writes.
@Suite struct ReplicationWatchTests {
    /// A primary and a replica fed from it in-process.
    final class Pair {
        let primary: EngineHarness
        let replica: EngineHarness
        let feed: WALFeed

        init() throws {
            primary = try EngineHarness()
            replica = try EngineHarness()
            feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        }

        deinit { feed.close() }

        /// Applies every batch the primary wrote since the last call.
        func ship() throws {
            for (sequence, data) in try ReplicationTests.batches(feed) {
                try replica.engine.replication.apply(replica.engine, sequence: sequence, data: data)
            }
        }

        /// On the replica: WATCH `key` (in the replica's current family), run `change` on the
        /// primary and ship it, then MULTI, GET, EXEC; the EXEC's reply.
        func exec(watching key: String, after change: () -> Void) throws -> RESPValue {
            #expect(replica.run("WATCH", key) == .ok)
            change()
            try ship()
            replica.run("MULTI")
            replica.run("GET", key)
            return replica.run("EXEC")
        }
    }

    static let aborted = RESPValue.null

    @Test func aReplicatedWriteOfTheWatchedKeyAbortsTheExec() throws {
        let p = try Pair()
        p.primary.run("SET", "k", "1")
        try p.ship()
        #expect(try p.exec(watching: "k") { p.primary.run("SET", "k", "2") } == Self.aborted)
        // Another key leaves it alone; so does nothing at all.
        #expect(try p.exec(watching: "k") { p.primary.run("SET", "other", "x") } == .array([.bulk("2")]))
        #expect(try p.exec(watching: "k") {} == .array([.bulk("2")]))
        // Deletion, expiry set, MERGE's family, a pipelined group of writes: each fires.
        #expect(try p.exec(watching: "k") { p.primary.run("DEL", "k") } == Self.aborted)
        #expect(try p.exec(watching: "k") { p.primary.run("MSET", "a", "1", "k", "3") } == Self.aborted)
        #expect(try p.exec(watching: "k") { p.primary.run("EXPIRE", "k", "100") } == Self.aborted)
        #expect(try p.exec(watching: "a") { p.primary.run("MULTI"); p.primary.run("INCR", "a"); p.primary.run("EXEC") } == Self.aborted)
    }

    @Test func aMemberWriteFiresAWatchOfItsCollection() throws {
        let p = try Pair()
        p.primary.run("HSET", "h", "f", "1", "g", "2")
        p.primary.run("SADD", "s", "m")
        try p.ship()
        // Only the field's entry changes (the hash's size does not).
        #expect(try p.exec(watching: "h") { p.primary.run("HSET", "h", "f", "9") } == Self.aborted)
        #expect(try p.exec(watching: "h") { p.primary.run("HSET", "hh", "f", "9") } == .array([.error("WRONGTYPE Operation against a key holding the wrong kind of value")]))
        #expect(try p.exec(watching: "s") { p.primary.run("SADD", "s", "n") } == Self.aborted)
    }

    @Test func watchesAreKeptApartByFamily() throws {
        let p = try Pair()
        p.primary.run("CF.CREATE", "side", "MERGE", "add")
        try p.ship()
        // The same key in another family is another key.
        #expect(try p.exec(watching: "k") { p.primary.run("CF.USE", "side"); p.primary.run("SET", "k", "x") } == .array([.null]))
        p.replica.run("CF.USE", "side")
        #expect(try p.exec(watching: "n") { p.primary.run("MERGE", "n", "1") } == Self.aborted)
        #expect(try p.exec(watching: "n") { p.primary.run("CF.USE", "default"); p.primary.run("SET", "n", "y") } == .array([.bulk("1")]))
    }

    @Test func aRangeDeletionFiresEveryWatch() throws {
        let p = try Pair()
        p.primary.run("SET", "k", "1")
        try p.ship()
        #expect(try p.exec(watching: "k") { p.primary.run("DELRANGE", "[a", "[b") } == Self.aborted)
        #expect(try p.exec(watching: "k") { p.primary.run("FLUSHDB") } == Self.aborted)
    }

    @Test func theStripesAreThoseOfTheKeysWritten() throws {
        let p = try Pair()
        p.primary.run("MSET", "x", "1", "y", "2")
        p.primary.run("RPUSH", "l", "a")
        let locks = p.replica.engine.locks
        let family = p.replica.engine.defaultFamily
        let batches = try ReplicationTests.batches(p.feed)
        #expect(batches.count == 2)
        let mset = ReplicatedWrites.find(in: batches[0].1, engine: p.replica.engine)
        #expect(mset == ReplicatedWrites(stripes: Set(["x", "y"].map { locks.stripe(for: Array($0.utf8), in: family) }).sorted()))
        let push = ReplicatedWrites.find(in: batches[1].1, engine: p.replica.engine)
        #expect(push == ReplicatedWrites(stripes: [locks.stripe(for: Array("l".utf8), in: family)]))
        // A batch it cannot read to its end fires every WATCH.
        var truncated = batches[0].1
        truncated.removeLast()
        #expect(ReplicatedWrites.find(in: truncated, engine: p.replica.engine).all)
    }
}
