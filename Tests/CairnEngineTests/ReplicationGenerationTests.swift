@testable import CairnEngine
import RESP
import Rocks
import Testing

/// A replica's link belongs to one generation: REPLICAOF (another primary, or NO ONE) ends it
/// at once, though its thread may go on for a while. What it then reports or writes must
/// change nothing, or it would mark the new link down for good or apply an old primary's
/// batches.
@Suite struct ReplicationGenerationTests {
    /// Whether `body` threw `ApplyError.linkEnded`.
    static func linkEnded(_ body: () throws -> Bool) -> Bool {
        do {
            _ = try body()
            return false
        } catch {
            guard case .linkEnded? = error as? Replication.ApplyError else { return false }
            return true
        }
    }

    @Test func aLinkWhoseGenerationEndedAppliesNothingAndReportsNothing() throws {
        let primary = try EngineHarness()
        let replica = try EngineHarness()
        let feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        defer { feed.close() }
        primary.run("SET", "a", "1")
        primary.run("SET", "b", "2")
        let shipped = try ReplicationTests.batches(feed)
        #expect(shipped.count == 2)

        let r = replica.engine.replication
        #expect(replica.run("REPLICAOF", "127.0.0.1", "1") == .ok)
        let old = r.generation
        #expect(try r.apply(replica.engine, sequence: shipped[0].0, data: shipped[0].1, generation: old))
        r.noteLink(up: true, generation: old)

        #expect(replica.run("REPLICAOF", "127.0.0.1", "2") == .ok)
        let current = r.generation
        #expect(current != old)
        r.noteLink(up: true, generation: current)
        // The old link goes on: its batch is refused and written nowhere, its reports ignored.
        #expect(Self.linkEnded { try r.apply(replica.engine, sequence: shipped[1].0, data: shipped[1].1, generation: old) })
        #expect(replica.run("GET", "b") == .null)
        r.noteLink(up: false, generation: old)
        r.noteSync(inProgress: true, generation: old)
        r.requireFullSync(generation: old)
        let id = r.replicationID
        r.continued(primaryID: String(repeating: "f", count: 40), latest: 0, dir: replica.engine.configuration.dir, generation: old)
        let s = r.state.withLock { $0 }
        #expect(s.linkUp && !s.syncInProgress && !s.mustSyncInFull && s.id == id)
        // The current link applies it.
        #expect(try r.apply(replica.engine, sequence: shipped[1].0, data: shipped[1].1, generation: current))
        #expect(replica.run("GET", "b") == .bulk("2"))

        // Promotion ends the link too, after its last batch: nothing lands past the second id's end.
        primary.run("SET", "c", "3")
        let more = try ReplicationTests.batches(feed)
        r.noteLink(up: false, generation: current)  // else REPLICAOF NO ONE asks the primary to hand over
        #expect(replica.run("REPLICAOF", "NO", "ONE") == .ok)
        #expect(Self.linkEnded { try r.apply(replica.engine, sequence: more[0].0, data: more[0].1, generation: current) })
        let promoted = r.state.withLock { $0 }
        #expect(promoted.secondID == id && promoted.secondOffset == replica.engine.replicationOffset)
    }

    @Test func aPrimarysNewIdKeepsTheOldOneAsTheSecondUpToTheOffset() throws {
        let h = try EngineHarness()
        let r = h.engine.replication
        h.run("REPLICAOF", "127.0.0.1", "1")
        let generation = r.generation
        let old = r.replicationID
        let feeds = r.feedGeneration
        let newID = String(repeating: "a", count: 40)
        r.continued(primaryID: newID, latest: 7, dir: h.engine.configuration.dir, generation: generation)
        let s = r.state.withLock { $0 }
        #expect(s.id == newID && s.secondID == old && s.secondOffset == 7)
        // Its own replicas reconnect to learn the new id.
        #expect(r.feedGeneration == feeds + 1)
        // Told the same id again, nothing changes.
        r.continued(primaryID: newID, latest: 9, dir: h.engine.configuration.dir, generation: generation)
        #expect(r.state.withLock { $0.secondOffset } == 7 && r.feedGeneration == feeds + 1)
    }
}
