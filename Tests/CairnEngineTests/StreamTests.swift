@testable import CairnEngine
import RESP
import Testing

/// Stream IDs as Redis parses and orders them, the metadata's counters on disk, and the
/// consumer-group read counter and lag formulas (their replies against redis-server are in
/// Tests/integration/test_streams.py).
@Suite struct StreamTests {
    @Test func idsParseAndOrderAsRedisDoes() {
        #expect(StreamID.parse(Array("5-3".utf8)) == StreamID(ms: 5, seq: 3))
        #expect(StreamID.parse(Array("5".utf8), missingSequence: .max) == StreamID(ms: 5, seq: .max))
        #expect(StreamID.parse(Array("-".utf8)) == .zero)
        #expect(StreamID.parse(Array("+".utf8)) == .max)
        #expect(StreamID.parse(Array("+".utf8), specials: false) == nil)
        for bad in ["", "a", "1-", "-1", "1-2-3", "18446744073709551616", "1-x", " 1"] {
            #expect(StreamID.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(StreamID(ms: 1, seq: .max) < StreamID(ms: 2, seq: 0))
        #expect(StreamID(ms: 1, seq: .max).next == StreamID(ms: 2, seq: 0))
        #expect(StreamID.max.next == nil && StreamID.zero.previous == nil)
        #expect(StreamID(ms: 2, seq: 0).previous == StreamID(ms: 1, seq: .max))
        // The stored form sorts as the IDs do.
        let ids = [StreamID(ms: 2, seq: 0), StreamID(ms: 1, seq: 7), StreamID(ms: 1, seq: 300)]
        #expect(ids.sorted().map(\.bytes) == ids.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
        #expect((try? StreamID.strictForAdd(Array("7-*".utf8)))?.1 == false)
        #expect((try? StreamID.bound(Array("(5-0".utf8), start: true)) == StreamID(ms: 5, seq: 1))
        #expect((try? StreamID.bound(Array("(5".utf8), start: false)) == StreamID(ms: 5, seq: .max - 1))
    }

    @Test func metadataKeepsTheCountersThroughItsStoredForm() {
        var meta = CollectionMetadata(type: .stream, version: 42, size: 3)
        meta.stream.lastID = StreamID(ms: 9, seq: 1)
        meta.stream.maxDeletedID = StreamID(ms: 4, seq: 0)
        meta.stream.entriesAdded = 5
        meta.stream.lastNode = 2
        meta.stream.lastNodeEntries = 7
        meta.stream.lastNodeLive = 6
        let stored = meta.stored
        let offset = stored.withUnsafeBytes { ValueFormat.header(of: $0)!.payloadOffset }
        let back = CollectionMetadata(type: .stream, payload: stored[offset...], expiresAt: nil)
        #expect(back == meta)
        // An emptied stream stays; removeKey deletes it.
        var empty = back!
        empty.size = 0
        #expect(!empty.isGone)
        empty.removeKey()
        #expect(empty.isGone)
    }

    @Test func readCountersAndLagFollowRedis() {
        var counters = StreamCounters()
        counters.lastID = StreamID(ms: 5, seq: 0)
        counters.entriesAdded = 5
        let lag = StreamLag(counters: counters, length: 5, firstID: StreamID(ms: 1, seq: 0))
        // Exact while nothing was deleted: at the first entry, before it, at the last.
        #expect(lag.entriesRead(at: StreamID(ms: 1, seq: 0)) == 1)
        #expect(lag.entriesRead(at: .zero) == 0)
        #expect(lag.entriesRead(at: StreamID(ms: 5, seq: 0)) == 5)
        #expect(lag.entriesRead(at: StreamID(ms: 6, seq: 0)) == StreamLag.unknown)
        #expect(lag.lag(of: StreamGroup(name: [], lastID: .zero, entriesRead: StreamLag.unknown)) == 5)
        #expect(lag.lag(of: StreamGroup(name: [], lastID: StreamID(ms: 5, seq: 0), entriesRead: 2)) == 3)
        // A deletion ahead of the group makes its counter unknowable between the entries.
        counters.maxDeletedID = StreamID(ms: 3, seq: 0)
        let holed = StreamLag(counters: counters, length: 4, firstID: StreamID(ms: 1, seq: 0))
        #expect(holed.hasTombstones(from: StreamID(ms: 2, seq: 0)))
        #expect(!holed.hasTombstones(from: StreamID(ms: 4, seq: 0)))
        #expect(holed.lag(of: StreamGroup(name: [], lastID: StreamID(ms: 2, seq: 0), entriesRead: 2)) == nil)
    }

    @Test func approximateTrimmingRemovesWholeNodes() throws {
        let h = try EngineHarness()
        for i in 1...250 { h.run("XADD", "s", "\(i)-1", "f", "v") }
        // Nodes of 100: the first two can go and leave at least 120, the third cannot.
        #expect(h.run("XTRIM", "s", "MAXLEN", "~", "120") == .integer(100))
        #expect(h.run("XTRIM", "s", "MAXLEN", "~", "10", "LIMIT", "99") == .integer(0))
        #expect(h.run("XTRIM", "s", "MAXLEN", "~", "10") == .integer(100))
        #expect(h.run("XLEN", "s") == .integer(50))
        #expect(h.run("XTRIM", "s", "MAXLEN", "10") == .integer(40))
    }
}
