import CairnClient
import RESP
import Testing

/// The queued form of the catalogue (TypedCommands.generated.swift, written with the plain forms
/// from the command spec by scripts/command-spec): a transaction takes every typed write
/// command, and what it queues is what the client sends.
@Suite struct QueuedCommandsTests {
    @Test func theQueuedFormsAreTheCataloguesCurrentOnes() throws {
        let (status, message) = try runSpecCheck()
        #expect(status == 0, "\(message)")
    }

    @Test func aTransactionQueuesTheTypedCommandsOfEveryFamily() async throws {
        try await withCairnd { client, _ async throws in
            try await client.set("n", 1)
            let replies = try await client.transaction { tx in
                tx.set("s", "a")
                tx.append("s", "bc")
                tx.setRange("s", offset: 0, "x")
                tx.incrBy("n", 4)
                tx.mset([(key: "m1", value: "1"), (key: "m2", value: "2")])
                tx.hset("h", "f", "v")
                tx.hincrBy("h", "c", 2)
                tx.rpush("l", "a", "b", "c")
                tx.pop("l", from: .right)
                tx.sadd("st", ["x", "y"])
                tx.srem("st", ["x"])
                tx.zadd("z", [(score: 1, member: "one"), (score: 2, member: "two")])
                tx.zremRange("z", .rank(1, 1))
                tx.expire("s", seconds: 100)
                tx.rename("n", to: "renamed")
                tx.delete("m1", "m2")
                tx.deleteRange(.inclusive("zz"), .unbounded)
            }
            #expect(
                replies == [
                    .simpleString("OK"), .integer(3), .integer(3), .integer(5), .simpleString("OK"),
                    .integer(1), .integer(2), .integer(3), .bulkString(Array("c".utf8)), .integer(2), .integer(1),
                    .integer(2), .integer(1), .integer(1), .simpleString("OK"), .integer(2), .simpleString("OK"),
                ])
            #expect(try await client.getString("s") == "xbc")
            #expect(try await client.ttl("s") > 0)
            #expect(try await client.getString("renamed") == "5")
            #expect(try await client.hgetAll("h").count == 2)
            #expect(try await client.lrange("l", 0, -1).map(\.text) == ["a", "b"])
            #expect(try await client.smembers("st").map(\.text) == ["y"])
            #expect(try await client.zrange("z", .rank(0, -1)).map(\.text) == ["one"])
            #expect(try await client.exists("m1", "m2") == 0)
        }
    }

    /// Queued forms reached through a family view write in that family, in the same EXEC.
    @Test func aQueuedCommandInAFamilyViewRunsInThatFamily() async throws {
        try await withCairnd { client, _ async throws in
            let counters = try await client.createColumnFamily("counters")
            let replies = try await client.transaction { tx in
                tx.family("counters").hincrBy("visits", "home", 3)
                tx.family("counters").zincrby("rank", 2.5, "home")
                tx.set("default-key", "here")
            }
            #expect(replies.count == 3)
            #expect(replies[0] == .integer(3))
            #expect(replies[1].string == "2.5" || replies[1] == .double(2.5))
            #expect(try await counters.hget("visits", "home")?.text == "3")
            #expect(try await client.hget("visits", "home") == nil)
            #expect(try await client.getString("default-key") == "here")
        }
    }
}
