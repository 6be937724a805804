@testable import CairnEngine
import Testing

/// The stream payload codec against payloads captured from redis-server 7.0.15's DUMP.
@Suite struct StreamDumpTests {
    /// A stream of 5-1 {a 1, b hello}, 5-2 {a -300, b x}, 6-0 {c 70000}: one listpack (Redis left
    /// it uncompressed: LZF saved too little), 5-2 sharing the master's fields, 6-0 not.
    static let redisStream: [UInt8] = [
        19, 1, 16, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 64, 71, 71, 0, 0, 0, 25, 0, 3, 1, 0, 1, 2, 1, 129, 97,
        2, 129, 98, 2, 0, 1, 2, 1, 0, 1, 0, 1, 1, 1, 133, 104, 101, 108, 108, 111, 6, 5, 1, 2, 1, 0, 1, 1, 1, 222, 212, 2,
        129, 120, 2, 5, 1, 0, 1, 1, 1, 223, 255, 2, 1, 1, 129, 99, 2, 242, 112, 17, 1, 4, 6, 1, 255, 3, 6, 0, 5, 1, 0, 0,
        3, 0, 10, 0, 135, 202, 129, 189, 56, 223, 175, 128,
    ]

    /// The same stream after XDEL 5-2 (flagged deleted in its listpack), with group g at 5-1
    /// (entries read unknown: -1) whose consumer "al" has 5-1 pending.
    static let redisStreamWithGroup: [UInt8] = [
        19, 1, 16, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 64, 71, 71, 0, 0, 0, 25, 0, 2, 1, 1, 1, 2, 1, 129, 97,
        2, 129, 98, 2, 0, 1, 2, 1, 0, 1, 0, 1, 1, 1, 133, 104, 101, 108, 108, 111, 6, 5, 1, 3, 1, 0, 1, 1, 1, 222, 212, 2,
        129, 120, 2, 5, 1, 0, 1, 1, 1, 223, 255, 2, 1, 1, 129, 99, 2, 242, 112, 17, 1, 4, 6, 1, 255, 2, 6, 0, 5, 1, 5, 2,
        3, 1, 1, 103, 5, 1, 129, 255, 255, 255, 255, 255, 255, 255, 255, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1,
        109, 241, 71, 36, 162, 1, 0, 0, 1, 1, 2, 97, 108, 109, 241, 71, 36, 162, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0,
        0, 0, 0, 0, 0, 1, 10, 0, 183, 221, 87, 56, 50, 211, 180, 70,
    ]

    /// Collects a decoded stream.
    struct Collected: RDBSink {
        var entries: [(id: StreamID, node: UInt64, fields: [String])] = []
        var groups: [(StreamGroup, [(name: [UInt8], seen: Int64)], [PendingEntry])] = []
        var counters: StreamCounters? = nil
        mutating func string(_ value: [UInt8]) throws(RDBReader.Malformed) { throw RDBReader.Malformed() }
        mutating func begin(_ type: KeyType) throws(RDBReader.Malformed) { guard type == .stream else { throw RDBReader.Malformed() } }
        mutating func element(_ value: [UInt8]) throws(RDBReader.Malformed) { throw RDBReader.Malformed() }
        mutating func field(_ name: [UInt8], _ value: [UInt8]) throws(RDBReader.Malformed) { throw RDBReader.Malformed() }
        mutating func scored(_ member: [UInt8], _ score: Double) throws(RDBReader.Malformed) { throw RDBReader.Malformed() }
        mutating func streamEntry(_ id: StreamID, node: UInt64, fields: [[UInt8]]) throws(RDBReader.Malformed) {
            entries.append((id, node, fields.map { String(decoding: $0, as: UTF8.self) }))
        }
        mutating func streamGroup(_ group: StreamGroup, consumers: [(name: [UInt8], seen: Int64)],
                                  pending: [PendingEntry]) throws(RDBReader.Malformed) {
            groups.append((group, consumers, pending))
        }
        mutating func streamCounters(_ counters: StreamCounters) throws(RDBReader.Malformed) { self.counters = counters }
    }

    static func decode(_ payload: [UInt8]) throws -> Collected {
        #expect(DumpPayload.isIntact(payload))
        var sink = Collected()
        try DumpPayload.decode(payload, into: &sink)
        return sink
    }

    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func listpackEncodingsAreRedis() {
        // Redis's listpack of a, b, 1, 2, -300, 70000, 2^40 (from a captured quicklist node).
        var w = ListpackWriter()
        for s in ["a", "b", "1", "2", "-300", "70000", "1099511627776"] { w.append(Self.bytes(s)) }
        #expect(w.finish() == [35, 0, 0, 0, 7, 0, 129, 97, 2, 129, 98, 2, 1, 1, 2, 1, 222, 212, 2, 242, 112, 17, 1, 4, 244,
                               0, 0, 0, 0, 0, 1, 0, 0, 9, 255])
    }

    @Test func listpackStringsAndIntegersReadBack() throws {
        let values = ["007", "-0", "+5", "", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                      "-4096", "4095", "-32768", "8388607", "-2147483648", String(repeating: "x", count: 63),
                      String(repeating: "y", count: 64), String(repeating: "z", count: 5000), String(repeating: "w", count: 20000)]
        var w = ListpackWriter()
        for v in values { w.append(Self.bytes(v)) }
        #expect(try Listpack.entries(w.finish()).map { String(decoding: $0, as: UTF8.self) } == values)
        #expect(ListpackWriter.strictInteger(Self.bytes("007")) == nil && ListpackWriter.strictInteger(Self.bytes("-0")) == nil)
    }

    @Test func redisPayloadDecodes() throws {
        let got = try Self.decode(Self.redisStreamWithGroup)
        #expect(got.entries.map(\.id) == [StreamID(ms: 5, seq: 1), StreamID(ms: 6, seq: 0)])
        #expect(got.entries.map(\.fields) == [["a", "1", "b", "hello"], ["c", "70000"]])
        #expect(got.entries.map(\.node) == [1, 1])
        let c = try #require(got.counters)
        #expect(c.lastID == StreamID(ms: 6, seq: 0) && c.maxDeletedID == StreamID(ms: 5, seq: 2) && c.entriesAdded == 3)
        #expect(c.lastNode == 1 && c.lastNodeEntries == 3 && c.lastNodeLive == 2)
        #expect(got.groups.count == 1)
        let (g, consumers, pending) = got.groups[0]
        #expect(g.name == Self.bytes("g") && g.lastID == StreamID(ms: 5, seq: 1) && g.entriesRead == -1)
        #expect(consumers.map(\.name) == [Self.bytes("al")])
        #expect(pending.map(\.id) == [StreamID(ms: 5, seq: 1)] && pending[0].deliveryCount == 1 && pending[0].consumer == Self.bytes("al"))
        #expect(pending[0].deliveryTime == consumers[0].seen)
    }

    @Test func redis72PayloadDecodes() throws {
        // STREAM_LISTPACKS_3: a consumer's active time follows its seen time.
        var body = Array(Self.redisStreamWithGroup.dropLast(10))
        body[0] = 21
        let name = try #require((0..<(body.count - 3)).first { body[$0..<($0 + 3)] == [2, 97, 108] })
        body.insert(contentsOf: [9, 9, 9, 9, 0, 0, 0, 0], at: name + 3 + 8)
        var w = DumpWriter()
        for b in body { w.byte(b) }
        let got = try Self.decode(w.finish())
        #expect(got.entries.count == 2 && got.groups.count == 1)
        #expect(got.groups[0].1.map { $0.name } == [Self.bytes("al")] && got.groups[0].2.count == 1)
        #expect(got.groups[0].1[0].seen == got.groups[0].2[0].deliveryTime)
    }

    @Test func writerGivesRedisBytes() {
        var w = StreamDumpWriter()
        w.entry(StreamID(ms: 5, seq: 1), node: 1, fields: ["a", "1", "b", "hello"].map(Self.bytes))
        w.entry(StreamID(ms: 5, seq: 2), node: 1, fields: ["a", "-300", "b", "x"].map(Self.bytes))
        w.entry(StreamID(ms: 6, seq: 0), node: 1, fields: ["c", "70000"].map(Self.bytes))
        var counters = StreamCounters()
        counters.lastID = StreamID(ms: 6, seq: 0)
        counters.entriesAdded = 3
        #expect(w.finish(counters: counters, groups: []) == Self.redisStream)
    }

    @Test func writerOutputReadsBack() throws {
        var w = StreamDumpWriter()
        for i in 0..<250 {
            let fields = i % 3 == 0 ? ["f", "\(i)", "g", String(repeating: "v", count: i * 20)] : ["other", "-\(i)"]
            w.entry(StreamID(ms: UInt64(100 + i / 2), seq: UInt64(i % 2)), node: UInt64(1 + i / 100), fields: fields.map(Self.bytes))
        }
        var counters = StreamCounters()
        counters.lastID = StreamID(ms: 999, seq: 0)
        counters.maxDeletedID = StreamID(ms: 50, seq: 0)
        counters.entriesAdded = 300
        let group = StreamGroup(name: Self.bytes("grp"), lastID: StreamID(ms: 110, seq: 1), entriesRead: -1)
        let pending = [PendingEntry(id: StreamID(ms: 100, seq: 0), deliveryTime: 7, deliveryCount: 2, consumer: Self.bytes("b")),
                       PendingEntry(id: StreamID(ms: 100, seq: 1), deliveryTime: 8, deliveryCount: 1, consumer: Self.bytes("a"))]
        let consumers: [(name: [UInt8], seen: Int64)] = [(Self.bytes("a"), 5), (Self.bytes("b"), 6)]
        let payload = w.finish(counters: counters, groups: [StreamDumpWriter.Group(group: group, pending: pending, consumers: consumers)])
        let got = try Self.decode(payload)
        let nodes: [UInt64] = got.entries.map { $0.node }
        let expected: [UInt64] = (0..<250).map { UInt64(1 + $0 / 100) }
        #expect(nodes == expected)
        #expect(got.entries[3].fields == ["f", "3", "g", String(repeating: "v", count: 60)])
        let c = try #require(got.counters)
        #expect(c.lastID == counters.lastID && c.maxDeletedID == counters.maxDeletedID && c.entriesAdded == 300)
        #expect(c.lastNode == 3 && c.lastNodeEntries == 50 && c.lastNodeLive == 50)
        let (g, seen, owners) = (got.groups[0].0, got.groups[0].1.map { $0.seen }, got.groups[0].2.map { $0.consumer })
        #expect(g.entriesRead == -1 && owners == [Self.bytes("b"), Self.bytes("a")])
        #expect(seen == [5, 6])
    }

    @Test func malformedStreamsAreRefused() {
        let body = Array(Self.redisStreamWithGroup.dropLast(10))
        func payload(_ body: [UInt8]) -> [UInt8] {
            var w = DumpWriter()
            for b in body { w.byte(b) }
            return w.finish()
        }
        // Every truncation, and every byte changed, either decodes or throws; none traps.
        for n in 0..<body.count {
            var sink = Collected()
            #expect(throws: RDBReader.Malformed.self) { try DumpPayload.decode(payload(Array(body.prefix(n))), into: &sink) }
        }
        for i in 0..<body.count {
            for flip: UInt8 in [0x01, 0x02, 0x80, 0xff] {
                var changed = body
                changed[i] ^= flip
                var sink = Collected()
                _ = try? DumpPayload.decode(payload(changed), into: &sink)
            }
        }
        // The live count the master entry claims (2) must be what the node holds.
        var wrongCount = body
        wrongCount[27] = 3
        var sink = Collected()
        #expect(throws: RDBReader.Malformed.self) { try DumpPayload.decode(payload(wrongCount), into: &sink) }
        // Entries added (3) below the stream's length.
        var fewerAdded = Array(Self.redisStream.dropLast(10))
        #expect(fewerAdded[92] == 3 && fewerAdded[99] == 3)
        fewerAdded[99] = 2
        #expect(throws: RDBReader.Malformed.self) { try DumpPayload.decode(payload(fewerAdded), into: &sink) }
    }
}
