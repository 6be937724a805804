import CairnClient
import CairnTestSupport
import Testing

/// Typed methods for sets and sorted sets against the real cairnd.
@Suite struct SetAndSortedSetTests {
    @Test func sets() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.sadd("s", ["a", "b", "c", "a"]) == 3)
            #expect(try await client.scard("s") == 3)
            #expect(try await client.sismember("s", "a"))
            #expect(try await client.smismember("s", ["a", "x"]) == [true, false])
            #expect(try await client.smembers("s").map(\.text) == ["a", "b", "c"])
            #expect(try await client.srandmember("s", count: 5).count == 3)
            #expect(try await client.srem("s", ["c", "x"]) == 1)
            try await client.sadd("t", ["b", "d"])
            #expect(try await client.sinter(["s", "t"]).map(\.text) == ["b"])
            #expect(try await client.sunion(["s", "t"]).map(\.text) == ["a", "b", "d"])
            #expect(try await client.sdiff(["s", "t"]).map(\.text) == ["a"])
            #expect(try await client.sintercard(["s", "t"], limit: 1) == 1)
            #expect(try await client.sunionstore("u", ["s", "t"]) == 3)
            #expect(try await client.smove("u", "v", "d"))
            #expect(try await client.sscan("v").members.map(\.text) == ["d"])
            #expect(try await client.spop("u", count: 10).count == 2)
            #expect(try await client.exists("u") == 0)
        }
    }

    @Test func sortedSets() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.zadd("z", [(1, "a"), (2, "b"), (3, "c")]) == 3)
            #expect(try await client.zadd("z", [(5, "a"), (9, "new")], options: ZAddOptions(condition: .ifExists, countChanged: true)) == 1)
            #expect(try await client.zscore("z", "a") == 5)
            #expect(try await client.zscore("z", "nope") == nil)
            #expect(try await client.zmscore("z", ["b", "nope"]) == [2, nil])
            #expect(try await client.zincrby("z", 0.5, "b") == 2.5)
            #expect(try await client.zcard("z") == 3)
            #expect(try await client.zcount("z", "(2.5", "+inf") == 2)
            #expect(try await client.zrank("z", "a") == 2)
            #expect(try await client.zrank("z", "a", reverse: true) == 0)
            #expect(try await client.zrange("z", .rank(0, -1)).map(\.text) == ["b", "c", "a"])
            #expect(try await client.zrange("z", .score("-inf", "+inf"), reverse: true, limit: (0, 2)).map(\.text) == ["a", "c"])
            let scored = try await client.zrangeWithScores("z", .scores(2, 3))
            #expect(scored == [ScoredMember(member: Array("b".utf8), score: 2.5), ScoredMember(member: Array("c".utf8), score: 3)])
            try await client.zadd("y", [(10, "c"), (1, "d")])
            #expect(try await client.zunion(["z", "y"]).map(\.memberString) == ["d", "b", "a", "c"])
            #expect(try await client.zinter(["z", "y"], aggregate: "MAX") == [ScoredMember(member: Array("c".utf8), score: 10)])
            #expect(try await client.zdiff(["z", "y"]).map(\.memberString) == ["b", "a"])
            #expect(try await client.zinterstore("i", ["z", "y"], weights: [1, 2]) == 1)
            #expect(try await client.zscan("i").members == [ScoredMember(member: Array("c".utf8), score: 23)])
            #expect(try await client.zpop("z").map(\.memberString) == ["b"])
            #expect(try await client.zpop("z", count: 1, max: true).map(\.memberString) == ["a"])
            #expect(try await client.zremRange("z", .rank(0, -1)) == 1)
            #expect(try await client.exists("z") == 0)
        }
    }
}
