@testable import CairnEngine
import CairnTestSupport
import RESP
import Testing

/// A transaction writes each collection's metadata once, at commit or before the next write to
/// the batch that is not a member entry (`Transaction`). These run sequences where another
/// write of the same transaction touches the same key or a range over it, inside MULTI/EXEC,
/// in a script and as a pipeline, and compare replies and stored data with running each
/// command alone: a metadata record written in the wrong place of the batch shows as a key of
/// the wrong type, a resurrected or lost collection.
@Suite struct StagedMetadataTests {
    static func argv(_ words: [String]) -> [[UInt8]] { words.map { Array($0.utf8) } }

    /// Runs `commands` in one MULTI/EXEC on one engine and one at a time on another; expects the
    /// same replies and the same data.
    static func expectExecMatchesAlone(_ commands: [[String]], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let inExec = try EngineHarness()
        let alone = try EngineHarness()
        for h in [inExec, alone] { h.run("CF.CREATE", "counters", "MERGE", "add") }
        inExec.run("MULTI")
        for c in commands { inExec.run(argv(c)) }
        let execReply = inExec.run("EXEC")
        let aloneReplies = commands.map { alone.run(argv($0)) }
        #expect(execReply == .array(aloneReplies), "\(commands)", sourceLocation: sourceLocation)
        #expect(GroupedPathsTests.contents(inExec) == GroupedPathsTests.contents(alone), "\(commands)", sourceLocation: sourceLocation)
        #expect(!GroupedPathsTests.contents(alone).isEmpty || commands.contains { $0[0].hasPrefix("FLUSH") || $0[0] == "DELRANGE" },
                "a sequence that leaves nothing tests little", sourceLocation: sourceLocation)
    }

    @Test func stringSetOfTheKeyAfterAHashWrite() throws {
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["SET", "k", "x"], ["HSET", "k2", "f", "2"], ["HSET", "k2", "g", "3"]])
        let h = try EngineHarness()
        h.run("MULTI")
        h.run("HSET", "k", "f", "1")
        h.run("SET", "k", "x")
        h.run("HSET", "k2", "f", "2")
        h.run("EXEC")
        #expect(h.run("GET", "k") == .bulk("x"))
        #expect(h.run("TYPE", "k2") == .simpleString("hash"))
    }

    @Test func hashWriteAfterAStringSetOfTheSameKey() throws {
        try Self.expectExecMatchesAlone([["SET", "k", "x"], ["HSET", "k", "f", "1"], ["DEL", "k"], ["HSET", "k", "g", "2"], ["HSET", "k", "h", "3"]])
    }

    @Test func deleteBetweenTwoWritesOfOneCollection() throws {
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["HSET", "k", "f2", "2"], ["DEL", "k"], ["HSET", "k", "g", "3"]])
        try Self.expectExecMatchesAlone([["SADD", "s", "a", "b"], ["DEL", "s"], ["SADD", "s", "c"], ["SREM", "s", "c"], ["SADD", "t", "x"]])
        try Self.expectExecMatchesAlone([["RPUSH", "l", "a", "b"], ["LPOP", "l"], ["UNLINK", "l"], ["LPUSH", "l", "c"], ["RPUSH", "l", "d"]])
    }

    @Test func rangeDeletionOverStagedCollections() throws {
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["ZADD", "z", "1", "m"], ["DELRANGE", "[k", "[k"], ["HSET", "k2", "f", "2"], ["ZADD", "z", "2", "n"]])
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["DELRANGE", "-", "+"], ["HLEN", "k"], ["HSET", "k", "g", "2"]])
        try Self.expectExecMatchesAlone([["SADD", "a", "1"], ["SADD", "b", "1"], ["DELRANGE", "[a", "(b"], ["SADD", "a", "2"], ["SADD", "b", "2"]])
    }

    @Test func flushBetweenCollectionWrites() throws {
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["LPUSH", "l", "x"], ["FLUSHDB"], ["HSET", "k2", "f", "2"], ["HSET", "k", "g", "3"]])
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["FLUSHALL"], ["EXISTS", "k"]])
    }

    /// LPUSHes and RPOPs make member entries in descending key order, which the transaction
    /// holds back and writes reversed: around a FLUSHDB (which they must precede), mixed with
    /// ascending writes and other collections, and read back inside the same transaction.
    @Test func descendingMemberWritesHeldBack() throws {
        try Self.expectExecMatchesAlone([["LPUSH", "l", "a", "b", "c"], ["LPUSH", "l", "d"], ["LRANGE", "l", "0", "-1"], ["RPUSH", "l", "e"], ["LPUSH", "l", "f"]])
        try Self.expectExecMatchesAlone([["LPUSH", "l", "a", "b"], ["FLUSHDB"], ["LPUSH", "l", "c", "d"], ["LINDEX", "l", "0"], ["LPUSH", "m", "x"]])
        try Self.expectExecMatchesAlone([["RPUSH", "l", "a", "b", "c", "d"], ["RPOP", "l"], ["RPOP", "l", "2"], ["LPUSH", "l", "e"], ["HSET", "h", "f", "1"], ["LPUSH", "l", "g"]])
        try Self.expectExecMatchesAlone([["LPUSH", "l", "a"], ["LPOP", "l"], ["LPUSH", "l", "b"], ["LPUSH", "l", "c"], ["LREM", "l", "0", "b"], ["LLEN", "l"]])
        let h = try EngineHarness()
        h.run("MULTI")
        for i in 0..<300 { h.run("LPUSH", "l", "\(i)") }
        h.run("FLUSHDB")
        for i in 0..<300 { h.run("LPUSH", "l", "\(i)") }
        h.run("RPOP", "l")
        h.run("EXEC")
        #expect(h.run("LLEN", "l") == .integer(299))
        #expect(h.run("LRANGE", "l", "0", "1") == .array([.bulk("299"), .bulk("298")]))
        #expect(h.run("LINDEX", "l", "-1") == .bulk("1"))
        // The entries pushed before the FLUSHDB went before its range deletion: none is left.
        #expect(try CollectionStorageTests.memberEntries(h) == 299)
    }

    @Test func renameAndCopyOfAStagedCollection() throws {
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["RENAME", "k", "k3"], ["HSET", "k", "g", "2"], ["HSET", "k3", "h", "3"]])
        try Self.expectExecMatchesAlone([["ZADD", "z", "1", "a"], ["COPY", "z", "y"], ["ZADD", "z", "2", "b"], ["ZREM", "y", "a"], ["ZADD", "y", "3", "c"]])
        try Self.expectExecMatchesAlone([["SET", "s", "x"], ["SADD", "t", "m"], ["RENAME", "s", "t"], ["SADD", "s", "n"]])
    }

    @Test func expiryOfAStagedCollection() throws {
        try Self.expectExecMatchesAlone([["HSET", "k", "f", "1"], ["EXPIRE", "k", "1000"], ["HSET", "k", "g", "2"], ["TTL", "k"], ["PERSIST", "k"], ["HSET", "k", "h", "3"]])
        try Self.expectExecMatchesAlone([["RPUSH", "l", "a"], ["PEXPIRE", "l", "1000000"], ["RPUSH", "l", "b"], ["LPOP", "l"], ["TTL", "l"]])
    }

    @Test func emptiedCollectionAndAnotherTypeAtItsKey() throws {
        try Self.expectExecMatchesAlone([["SADD", "s", "a"], ["SPOP", "s"], ["HSET", "s", "f", "1"], ["SREM", "s", "a"], ["TYPE", "s"]])
        try Self.expectExecMatchesAlone([["ZADD", "z", "1", "a"], ["ZPOPMIN", "z"], ["SET", "z", "v"], ["ZADD", "z", "1", "b"], ["GET", "z"]])
        try Self.expectExecMatchesAlone([["HSET", "h", "f", "1"], ["HDEL", "h", "f"], ["SET", "h", "v"], ["APPEND", "h", "w"], ["HSET", "x", "f", "1"]])
    }

    @Test func mergeOfAKeyBetweenCollectionWrites() throws {
        try Self.expectExecMatchesAlone([["CF.USE", "counters"], ["HSET", "k", "f", "1"], ["MERGE", "c", "5"], ["DEL", "k"], ["MERGE", "k", "2"], ["HSET", "k2", "f", "1"], ["GET", "k"]])
    }

    /// A script's writes commit as one transaction, through the same staging.
    @Test func scriptWritesInOrder() throws {
        let h = try EngineHarness()
        let script = "redis.call('HSET', KEYS[1], 'f', '1'); redis.call('SET', KEYS[1], 'x'); redis.call('HSET', KEYS[2], 'f', '2'); redis.call('DEL', KEYS[2]); redis.call('SADD', KEYS[2], 'm'); return redis.call('TYPE', KEYS[1])"
        #expect(h.run("EVAL", script, "2", "k", "k2") == .simpleString("string"))
        #expect(h.run("GET", "k") == .bulk("x"))
        #expect(h.run("TYPE", "k2") == .simpleString("set"))
        #expect(h.run("SMEMBERS", "k2") == .array([.bulk("m")]))
    }

    /// Random sequences over a few keys, mixing collection writes with every other kind of
    /// write to the batch and with ordered reads, in one EXEC against alone.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] as [UInt64])
    func randomSequencesInExecMatchAlone(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c", "d", "d"]
        func key() -> String { keys.randomElement(using: &rng)! }
        func member() -> String { "m\(Int.random(in: 0..<4, using: &rng))" }
        for _ in 0..<20 {
            var commands: [[String]] = []
            for _ in 0..<Int.random(in: 2...12, using: &rng) {
                let command: [String] = switch Int.random(in: 0..<30, using: &rng) {
                // Ordered reads, which lay the transaction's staged entries over a cursor.
                case 22: ["ZRANGE", key(), "0", "-1", "WITHSCORES"]
                case 23: ["ZREVRANGE", key(), "1", "2"]
                case 24: ["ZRANGEBYSCORE", key(), "(2", "+inf", "LIMIT", "0", "2"]
                case 25: ["HGETALL", key()]
                case 26: ["LRANGE", key(), "0", "-1"]
                case 27: ["SMEMBERS", key()]
                case 28: ["ZPOPMAX", key()]
                case 29: ["ZREVRANGEBYLEX", key(), "+", "[m1"]
                case 0, 1: ["HSET", key(), member(), "\(Int.random(in: 0..<9, using: &rng))"]
                case 2: ["HDEL", key(), member()]
                case 3, 4: ["SADD", key(), member(), member()]
                case 5: ["SREM", key(), member()]
                case 6, 7: ["ZADD", key(), "\(Int.random(in: 0..<9, using: &rng))", member()]
                case 8: ["ZPOPMIN", key()]
                case 9: ["RPUSH", key(), member()]
                case 10: ["LPUSH", key(), member(), member()]
                case 11: [Bool.random(using: &rng) ? "LPOP" : "RPOP", key()]
                case 12: ["SET", key(), "v"]
                case 13: ["DEL", key()]
                case 14: ["DELRANGE", "[\(key())", "[\(key())"]
                case 15: ["FLUSHDB"]
                case 16: ["RENAME", key(), key()]
                case 17: ["COPY", key(), key(), "REPLACE"]
                case 18: ["EXPIRE", key(), "100"]
                case 19: ["INCR", key()]
                case 20: ["TYPE", key()]
                default: ["SPOP", key()]
                }
                commands.append(command)
            }
            let inExec = try EngineHarness()
            let alone = try EngineHarness()
            // Something stored before, so the sequence also changes collections the database holds.
            for h in [inExec, alone] {
                h.run("HSET", "a", "m0", "1")
                h.run("SADD", "b", "m1")
                h.run("RPUSH", "c", "m2", "m3")
                h.run("ZADD", "d", "1", "m0", "2", "m1", "3", "m2", "4", "m3")
            }
            inExec.run("MULTI")
            for c in commands { inExec.run(Self.argv(c)) }
            let execReply = inExec.run("EXEC")
            let aloneReplies = commands.map { alone.run(Self.argv($0)) }
            // SPOP picks at random: compare what it leaves, not which member it named.
            let comparable = commands.map { $0[0] != "SPOP" }
            guard case .array(let execReplies) = execReply, execReplies.count == aloneReplies.count else {
                Issue.record("\(commands): EXEC answered \(execReply)")
                continue
            }
            for (i, c) in commands.enumerated() where comparable[i] && execReplies[i] != aloneReplies[i] {
                Issue.record("\(commands): \(c) answered \(execReplies[i]) in EXEC, \(aloneReplies[i]) alone")
            }
            if !commands.contains(where: { $0[0] == "SPOP" }) {
                #expect(GroupedPathsTests.contents(inExec) == GroupedPathsTests.contents(alone), "\(commands)")
            }
        }
    }
}
