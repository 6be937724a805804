@testable import CairnEngine
import CairnTestSupport
import Foundation
import RESP
import Synchronization
import Testing

/// The value cache (`value-cache-size`) changes no answer: every write path that changes a key
/// makes the next read see the change, whether the read was answered from the cache before or
/// not, alone or grouped, and a read never goes back in time under concurrent writers.
@Suite struct ValueCacheTests {
    static func cached(_ size: Int = 1 << 20) throws -> EngineHarness {
        try EngineHarness { $0.valueCacheSize = size }
    }

    static func hits(_ h: EngineHarness) -> Int { h.engine.valueCache.hits.load(ordering: .relaxed) }

    /// Reads `key` three times (a key enters the cache on its second read in a while, and the
    /// third must hit it), so the write after it is checked against a cached value.
    static func warm(_ h: EngineHarness, _ key: String, expect value: RESPValue) {
        #expect(h.run("GET", key) == value)
        #expect(h.run("GET", key) == value)
        let before = hits(h)
        #expect(h.run("GET", key) == value)
        #expect(hits(h) == before + 1, "GET \(key) was not answered from the cache")
    }

    /// Every kind of write, each after the key's value was read into the cache.
    @Test func everyWritePathIsSeenAfterACachedRead() throws {
        let h = try Self.cached()
        let cases: [(write: [String], expect: RESPValue)] = [
            (["SET", "k", "2"], .bulk("2")),
            (["APPEND", "k", "x"], .bulk("2x")),
            (["SET", "k", "10"], .bulk("10")),
            (["INCR", "k"], .bulk("11")),
            (["INCRBYFLOAT", "k", "0.5"], .bulk("11.5")),
            (["SETRANGE", "k", "0", "9"], .bulk("91.5")),
            (["MSET", "k", "m", "other", "o"], .bulk("m")),
            (["GETSET", "k", "g"], .bulk("g")),
            (["SET", "k", "e", "EX", "1000"], .bulk("e")),
            (["PEXPIREAT", "k", "1"], .null),
            (["SET", "k", "back"], .bulk("back")),
            (["DEL", "k"], .null),
            (["SET", "k", "v"], .bulk("v")),
            (["RENAME", "other", "k"], .bulk("o")),
            (["SET", "src", "copied"], .bulk("o")),
            (["COPY", "src", "k", "REPLACE"], .bulk("copied")),
            (["GETDEL", "k"], .null),
            (["SET", "k", "w"], .bulk("w")),
            (["EVAL", "return redis.call('SET', KEYS[1], 'lua')", "1", "k"], .bulk("lua")),
            (["DELRANGE", "[a", "[z"], .null),
            (["SET", "k", "x"], .bulk("x")),
            (["FLUSHDB"], .null),
            (["SET", "k", "y"], .bulk("y")),
            (["UNLINK", "k"], .null),
            (["HSET", "k", "f", "v"], .error("WRONGTYPE Operation against a key holding the wrong kind of value")),
            (["DEL", "k"], .null),
            (["SET", "k", "z"], .bulk("z")),
        ]
        #expect(h.run("GET", "k") == .null)
        for (write, expect) in cases {
            if case .bulkString = h.run("GET", "k") { Self.warm(h, "k", expect: h.run("GET", "k")) }
            h.run(write.map { Array($0.utf8) })
            #expect(h.run("GET", "k") == expect, "after \(write)")
        }
    }

    @Test func transactionsAndMergesAreSeen() throws {
        let h = try Self.cached()
        h.run("SET", "k", "1")
        Self.warm(h, "k", expect: .bulk("1"))
        h.run("MULTI")
        h.run("SET", "k", "2")
        h.run("EXEC")
        #expect(h.run("GET", "k") == .bulk("2"))

        #expect(h.run("CF.CREATE", "counts", "MERGE", "add") == .ok)
        #expect(h.run("CF.USE", "counts") == .ok)
        h.run("MERGE", "n", "5")
        Self.warm(h, "n", expect: .bulk("5"))
        h.run("MERGE", "n", "7")
        #expect(h.run("GET", "n") == .bulk("12"))
        // A family dropped and made again under the same name starts empty.
        Self.warm(h, "n", expect: .bulk("12"))
        #expect(h.run("CF.USE", "default") == .ok)
        #expect(h.run("CF.DROP", "counts") == .ok)
        #expect(h.run("CF.CREATE", "counts", "MERGE", "add") == .ok)
        #expect(h.run("CF.USE", "counts") == .ok)
        #expect(h.run("GET", "n") == .null)
    }

    /// A read through a snapshot sees the snapshot, whatever the cache holds, and a write after
    /// the snapshot shows on the live reads.
    @Test func snapshotReadsDoNotUseTheCache() throws {
        let h = try Self.cached()
        h.run("SET", "k", "old")
        guard case .integer(let id) = h.run("SNAPSHOT.CREATE") else { Issue.record("no snapshot"); return }
        h.run("SET", "k", "new")
        Self.warm(h, "k", expect: .bulk("new"))
        #expect(h.run("SNAPSHOT.USE", String(id)) == .ok)
        #expect(h.run("GET", "k") == .bulk("old"))
        var out = RESPWriter(version: .v2)
        h.engine.executePipeline([[Array("GET".utf8), Array("k".utf8)], [Array("GET".utf8), Array("k".utf8)]], session: h.session, out: &out)
        #expect(out.bytes == Array("$3\r\nold\r\n$3\r\nold\r\n".utf8))
        #expect(h.run("SNAPSHOT.USE", "NONE") == .ok)
        #expect(h.run("GET", "k") == .bulk("new"))
    }

    /// A restore replaces the database: what the cache held of the old one is gone.
    @Test func aRestoreEmptiesTheCache() throws {
        let h = try Self.cached()
        h.run("SET", "k", "backed-up")
        #expect(h.run("BACKUP.CREATE") == .integer(1))
        h.run("SET", "k", "later")
        Self.warm(h, "k", expect: .bulk("later"))
        #expect(h.run("BACKUP.RESTORE", "1") == .ok)
        #expect(h.run("GET", "k") == .bulk("backed-up"))
    }

    /// A replica's applied batches move the stripes of the keys they write, so a value the
    /// replica's cache holds is read again.
    @Test func aReplicasAppliedBatchesAreSeen() throws {
        let primary = try EngineHarness()
        let replica = try Self.cached()
        let feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        defer { feed.close() }
        func ship() throws {
            for (sequence, data) in try ReplicationTests.batches(feed) {
                #expect(try replica.engine.replication.apply(replica.engine, sequence: sequence, data: data))
            }
        }
        primary.run("SET", "k", "1")
        try ship()
        Self.warm(replica, "k", expect: .bulk("1"))
        primary.run("SET", "k", "2")
        try ship()
        #expect(replica.run("GET", "k") == .bulk("2"))
        Self.warm(replica, "k", expect: .bulk("2"))
        primary.run("DELRANGE", "[a", "[z")
        try ship()
        #expect(replica.run("GET", "k") == .null)
    }

    /// A write of many keys commits in pieces under a claim (`LargeWrites`); the cache is not
    /// used while it runs and every key reads new after it.
    @Test func aBigWriteInPiecesIsSeen() throws {
        let h = try Self.cached(8 << 20)
        h.run("SET", "key:1", "old")
        Self.warm(h, "key:1", expect: .bulk("old"))
        var argv = [Array("MSET".utf8)]
        for i in 0..<10_000 { argv += [Array("key:\(i)".utf8), Array("new".utf8)] }
        #expect(h.run(argv) == .ok)
        #expect(h.engine.stats.piecewiseWrites.load(ordering: .relaxed) >= 1)
        #expect(h.run("GET", "key:1") == .bulk("new"))
    }

    /// A key enters on its second read; a cached key that was written is read once from
    /// RocksDB and is back in the cache at once (it had proved hot).
    @Test func admissionOnTheSecondReadAndAfterAWrite() throws {
        let h = try Self.cached()
        h.run("SET", "k", "1")
        h.run("GET", "k")
        #expect(h.engine.valueCache.usage.entries == 0)
        h.run("GET", "k")
        #expect(h.engine.valueCache.usage.entries == 1)
        Self.warm(h, "k", expect: .bulk("1"))
        h.run("SET", "k", "2")
        let before = Self.hits(h)
        #expect(h.run("GET", "k") == .bulk("2"))  // stale entry dropped, read, admitted again
        #expect(h.run("GET", "k") == .bulk("2"))
        #expect(Self.hits(h) == before + 1)
    }

    /// A missing key is cached as missing, alone and grouped, until something writes it.
    @Test func missingKeysAreCachedUntilWritten() throws {
        let h = try Self.cached()
        Self.warm(h, "absent", expect: .null)
        var out = RESPWriter(version: .v2)
        let get = [Array("GET".utf8), Array("absent".utf8)]
        let before = Self.hits(h)
        h.engine.executePipeline([get, get], session: h.session, out: &out)
        #expect(out.bytes == Array("$-1\r\n$-1\r\n".utf8))
        #expect(Self.hits(h) == before + 2)
        #expect(h.engine.stats.expiredKeys.value == 0)
        h.run("SET", "absent", "here")
        #expect(h.run("GET", "absent") == .bulk("here"))
        out = RESPWriter(version: .v2)
        h.engine.executePipeline([get, get], session: h.session, out: &out)
        #expect(out.bytes == Array("$4\r\nhere\r\n$4\r\nhere\r\n".utf8))
    }

    /// A SET of another key of the same lock stripe leaves a cached key cached (writes that
    /// name their key move only their key's slot), while an EXEC's write to it, which moves the
    /// stripe, makes it read again; the answers are right either way.
    @Test func neighboursInAStripeInvalidateOnlyThroughStripeWrites() throws {
        let h = try Self.cached()
        let family = h.session.family
        let stripe = h.engine.locks.stripe(for: Array("k".utf8), in: family)
        guard let neighbour = (0..<100_000).lazy.map({ "n\($0)" }).first(where: {
            h.engine.locks.stripe(for: Array($0.utf8), in: family) == stripe
        }) else { Issue.record("no key shares k's stripe"); return }
        h.run("SET", "k", "1")
        Self.warm(h, "k", expect: .bulk("1"))
        h.run("SET", neighbour, "x")
        var before = Self.hits(h)
        #expect(h.run("GET", "k") == .bulk("1"))
        #expect(Self.hits(h) == before + 1)
        h.run("MULTI")
        h.run("SET", neighbour, "y")
        h.run("EXEC")
        before = Self.hits(h)
        #expect(h.run("GET", "k") == .bulk("1"))
        #expect(Self.hits(h) == before)
        h.run("MULTI")
        h.run("SET", "k", "2")
        h.run("EXEC")
        #expect(h.run("GET", "k") == .bulk("2"))
    }

    /// CONFIG SET resizes the cache; 0 empties it and turns it off.
    @Test func configSetResizesTheCache() throws {
        let h = try Self.cached()
        for i in 0..<100 { h.run("SET", "k\(i)", String(repeating: "v", count: 100)) }
        for i in 0..<100 { h.run("GET", "k\(i)") }
        #expect(h.engine.valueCache.usage.entries == 0)  // read once: remembered, not admitted
        for i in 0..<100 { h.run("GET", "k\(i)") }
        #expect(h.engine.valueCache.usage.entries == 100)
        #expect(h.run("CONFIG", "SET", "value-cache-size", "0") == .ok)
        #expect(h.engine.valueCache.usage.entries == 0)
        #expect(h.run("CONFIG", "GET", "value-cache-size") == .array([.bulk("value-cache-size"), .bulk("0")]))
        let before = Self.hits(h)
        h.run("GET", "k1")
        h.run("GET", "k1")
        #expect(Self.hits(h) == before)
        // Small enough that each shard holds only a few entries: the rest are evicted.
        #expect(h.run("CONFIG", "SET", "value-cache-size", "64kb") == .ok)
        for _ in 0..<2 { for i in 0..<100 { h.run("GET", "k\(i)") } }
        let usage = h.engine.valueCache.usage
        #expect(usage.bytes <= 64 * 1024)
        #expect(usage.entries > 0 && usage.entries < 100)
        #expect(h.engine.valueCache.evictions.load(ordering: .relaxed) > 0)
        guard case .bulkString(let info) = h.run("INFO", "memory") else { Issue.record("no INFO"); return }
        #expect(String(decoding: info, as: UTF8.self).contains("value_cache_capacity:65536"))
    }

    /// Randomized: a pipeline run with the cache (grouped GETs answered from it) answers
    /// exactly what the same requests answer one at a time without it, over a small cache
    /// (evictions) and many kinds of writes between the reads.
    @Test(arguments: [11, 12, 13, 14, 15, 16] as [UInt64])
    func cachedAnswersAsUncached(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let keys = (0..<40).map { "k\($0)" }
        func key() -> String { keys.randomElement(using: &rng)! }
        var requests: [[[UInt8]]] = []
        for _ in 0..<1500 {
            let words: [String] = switch Int.random(in: 0..<24, using: &rng) {
            case 0..<10: ["GET", key()]
            case 10: ["SET", key(), "v\(Int.random(in: 0..<1000, using: &rng))"]
            case 11: ["APPEND", key(), "a"]
            case 12: ["INCR", key()]
            case 13: ["DEL", key()]
            case 14: ["MSET", key(), "m", key(), "n"]
            case 15: ["PEXPIREAT", key(), "1"]
            case 16: ["EXPIRE", key(), "1000"]
            case 17: ["RENAME", key(), key()]
            case 18: ["DELRANGE", "[k1", "(k3"]
            case 19: ["HSET", key(), "f", "v"]
            case 20: ["SETRANGE", key(), "1", "xyz"]
            case 21: ["MGET", key(), key()]
            case 22: ["STRLEN", key()]
            default: ["GETDEL", key()]
            }
            requests.append(words.map { Array($0.utf8) })
        }
        let withCache = try Self.cached(32 * 1024)
        try GroupedPathsTests.expectSameAnswers(requests, pipelined: withCache, alone: EngineHarness())
        #expect(Self.hits(withCache) > 0)
    }

    /// Under concurrent writers a read never returns a value older than one a write had
    /// already acknowledged when the read began: the writer publishes each INCR's reply, and
    /// readers (alone and grouped) check what they read against it.
    @Test func readsNeverGoBackUnderConcurrentWrites() throws {
        let h = try Self.cached()
        h.run("SET", "n", "0")
        let acknowledged = Atomic<Int>(0)
        let stale = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let writes = 3000
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let s = h.otherSession()
            for _ in 0..<writes {
                guard case .integer(let v) = h.run(["INCR", "n"].map { Array($0.utf8) }, on: s) else { continue }
                acknowledged.store(Int(v), ordering: .sequentiallyConsistent)
            }
            done.store(true, ordering: .sequentiallyConsistent)
        }
        for grouped in [false, true] {
            DispatchQueue.global().async(group: group) {
                let s = h.otherSession()
                while !done.load(ordering: .sequentiallyConsistent) {
                    let floor = acknowledged.load(ordering: .sequentiallyConsistent)
                    var values: [Int] = []
                    if grouped {
                        var out = RESPWriter(version: .v2)
                        let get = [Array("GET".utf8), Array("n".utf8)]
                        h.engine.executePipeline([get, get, get], session: s, out: &out)
                        for case .bulkString(let b) in (try? GroupedPathsTests.replies(out.bytes)) ?? [] {
                            values.append(Int(String(decoding: b, as: UTF8.self)) ?? -1)
                        }
                    } else if case .bulkString(let b) = h.run(["GET", "n"].map { Array($0.utf8) }, on: s) {
                        values.append(Int(String(decoding: b, as: UTF8.self)) ?? -1)
                    }
                    for v in values where v < floor { stale.add(1, ordering: .relaxed) }
                }
            }
        }
        group.wait()
        #expect(stale.load(ordering: .relaxed) == 0)
        #expect(h.run("GET", "n") == .bulk(String(writes)))
        Self.warm(h, "n", expect: .bulk(String(writes)))
    }
}
