import CairnClient
import CairnTestSupport
import RESP
import Testing

/// Column families, MERGE, ranges, snapshots, iterators and transactions: Cairn's RocksDB
/// powers through their Swift shapes.
@Suite struct RocksDBShapeTests {
    @Test func columnFamilyHandleStaysInItsFamilyOnPooledConnections() async throws {
        try await withCairnd(configure: { $0.maximumConnections = 2 }) { client, _ in
            let counters = try await client.createColumnFamily(
                "counters", options: .init(merge: .add, compression: "lz4", bloomBitsPerKey: 10, blockSize: 4096))
            _ = try await client.createColumnFamily("logs", options: .init(merge: .append))
            #expect(try await client.columnFamilies().sorted() == ["counters", "default", "logs"])
            let logs = client.columnFamily("logs")
            // Interleave families on a pool of two: each command must land in its own family.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<50 {
                    group.addTask {
                        try await counters.merge("hits", 2)
                        try await logs.merge("log", "x")
                        try await client.set("plain\(i)", "v")
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await counters.getString("hits") == "100")
            #expect(try await logs.getString("log") == String(repeating: "x", count: 50))
            #expect(try await client.get("hits") == nil)
            #expect(try await counters.get("plain0") == nil)
            #expect(try await client.dbsize() == 50)
            let info = try await counters.info()
            #expect(info.name == "counters")
            #expect(info.mergeOperator == "add")
            #expect(try await client.columnFamilyInfo("default").mergeOperator == nil)
            // MERGE where there is no operator, and a handle to a family that does not exist.
            await #expect(throws: CairnClientError.self) { try await client.merge("k", "1") }
            do {
                _ = try await client.columnFamily("nope").get("k")
                Issue.record("a missing family answered")
            } catch let error as CairnClientError {
                #expect(error.code == .server && error.prefix == "ERR")
            }
            try await client.dropColumnFamily("logs")
            #expect(!(try await client.columnFamilies().contains("logs")))
        }
    }

    @Test func rangesAndLazyPaging() async throws {
        try await withCairnd { client, _ in
            let keys = (0..<250).map { "k" + String(1000 + $0) }
            _ = try await client.pipeline(keys.map { ["SET", $0, "v" + $0] })
            let first = try await client.range(.inclusive("k1000"), .exclusive("k1003"))
            #expect(first.map(\.keyString) == ["k1000", "k1001", "k1002"])
            #expect(first[0].valueString == "vk1000")
            #expect(
                try await client.range(.exclusive("k1000"), .inclusive("k1003"), reverse: true, limit: 2).map(\.keyString) == [
                    "k1003", "k1002",
                ])
            #expect(try await client.rangeKeys(.unbounded, .unbounded, limit: 2).map(\.text) == ["k1000", "k1001"])
            var seen: [String] = []
            for try await entry in client.entries(pageSize: 7) { seen.append(entry.keyString) }
            #expect(seen == keys)
            var reversed: [String] = []
            for try await entry in client.entries(from: .inclusive("k1240"), reverse: true, pageSize: 4) {
                reversed.append(entry.keyString)
            }
            #expect(reversed == Array(keys.suffix(10).reversed()))
            try await client.deleteRange(.inclusive("k1000"), .exclusive("k1200"))
            #expect(try await client.dbsize() == 50)
        }
    }

    @Test func iteratorLoopLeftEarlyClosesTheServerIterator() async throws {
        // One connection only: an iterator that kept its connection after the loop would make
        // every later request wait forever.
        try await withCairnd(configure: { $0.maximumConnections = 1 }) { client, server in
            let observer = CairnClient(port: server.port)
            defer { observer.close() }
            _ = try await client.pipeline((0..<100).map { ["SET", "i\(1000 + $0)", $0] })
            #expect(try await rocksdbInfo(observer, "open_iterators") == 0)
            var count = 0
            for try await entry in client.iterate(from: "i1010", batchSize: 3) {
                if count == 0 { #expect(entry.keyString == "i1010") }
                count += 1
                if count == 5 {
                    // Mid-loop the iterator is open on the server.
                    #expect(try await rocksdbInfo(observer, "open_iterators") == 1)
                    break
                }
            }
            #expect(count == 5)
            #expect(try await eventually { try await rocksdbInfo(observer, "open_iterators") == 0 })
            // The connection went back to the pool, open (ITER.CLOSE, not a disconnect).
            #expect(try await withTimeout(seconds: 5) { try await client.ping() } == "PONG")
            #expect(try await observer.info("clients").integer("connected_clients") == 2)
            // A loop that runs to the end closes it too, and sees every entry once.
            var all: [String] = []
            for try await entry in client.iterate(batchSize: 7) { all.append(entry.keyString) }
            #expect(all.count == 100 && all.first == "i1000" && all.last == "i1099")
            var back: [String] = []
            for try await entry in client.iterate(from: "i1002", reverse: true) { back.append(entry.keyString) }
            #expect(back == ["i1002", "i1001", "i1000"])
            #expect(try await rocksdbInfo(observer, "open_iterators") == 0)
        }
    }

    @Test func iteratorCommandsOnAConnection() async throws {
        try await withCairnd { client, _ in
            _ = try await client.pipeline((0..<10).map { ["SET", "n\($0)", $0] })
            try await client.withConnection { connection in
                let id = try await connection.openIterator(start: "n3")
                #expect(try await connection.iteratorNext(id, count: 2).map(\.keyString) == ["n3", "n4"])
                try await connection.iteratorSeek(id, to: "n8")
                #expect(try await connection.iteratorNext(id, count: 5).map(\.keyString) == ["n8", "n9"])
                #expect(try await connection.iteratorNext(id).isEmpty)
                try await connection.closeIterator(id)
                let rev = try await connection.openIterator(reverse: true)
                #expect(try await connection.iteratorPrevious(rev, count: 2).map(\.keyString) == ["n9", "n8"])
                try await connection.closeIterator(rev)
            }
            #expect(try await rocksdbInfo(client, "open_iterators") == 0)
        }
    }

    @Test func snapshotSeesThePastAndIsReleasedWhenTheBodyThrows() async throws {
        struct Boom: Error {}
        try await withCairnd { client, _ in
            try await client.set("a", "old")
            let seen = try await client.withSnapshot { snapshot in
                try await client.set("a", "new")
                let inside = try await snapshot.getString("a")
                var iterated: [String] = []
                for try await entry in snapshot.iterate() { iterated.append(entry.valueString) }
                #expect(try await rocksdbInfo(client, "open_snapshots") == 1)
                return [inside, iterated.first]
            }
            #expect(seen == ["old", "old"])
            #expect(try await client.getString("a") == "new")
            #expect(try await rocksdbInfo(client, "open_snapshots") == 0)
            do {
                try await client.withSnapshot { snapshot in
                    #expect(try await snapshot.getString("a") == "new")
                    throw Boom()
                }
                Issue.record("the body's error was lost")
            } catch is Boom {}
            #expect(try await rocksdbInfo(client, "open_snapshots") == 0)
            // The pooled connection went back reading live data, not the snapshot.
            try await client.set("a", "newest")
            #expect(try await client.getString("a") == "newest")
            // A snapshot of a column family reads in that family.
            let fam = try await client.createColumnFamily("f")
            try await fam.set("a", "in-f")
            #expect(try await fam.withSnapshot { try await $0.getString("a") } == "in-f")
        }
    }

    @Test func snapshotCommandsOnAConnection() async throws {
        try await withCairnd { client, _ in
            try await client.withConnection { connection in
                let id = try await connection.createSnapshot()
                let list = try await connection.snapshots()
                #expect(list.map(\.id) == [id])
                #expect(list[0].sequenceNumber >= 0 && list[0].ageSeconds >= 0)
                try await connection.set("k", "after")
                try await connection.useSnapshot(id)
                #expect(try await connection.get("k") == nil)
                try await connection.useSnapshot(nil)
                #expect(try await connection.getString("k") == "after")
                try await connection.releaseSnapshot(id)
                #expect(try await connection.snapshots().isEmpty)
            }
        }
    }

    @Test func aCFUSEQueuedInATransactionIsFollowedOnlyOnceEXECRunsIt() async throws {
        try await withCairnd(configure: { $0.maximumConnections = 1 }) { client, _ in
            _ = try await client.createColumnFamily("t")
            // EXEC switches the one pooled connection to `t`; the client must notice, so the
            // next plain command goes back to `default` rather than running in `t`.
            try await client.transaction { tx in
                tx.queue(["CF.USE", "t"])
                tx.set("k", "in t")
            }
            #expect(try await client.get("k") == nil)
            #expect(try await client.columnFamily("t").getString("k") == "in t")
            // A discarded CF.USE never ran: the connection stays where it was.
            try await client.withConnection { connection in
                try await connection.send(["CF.USE", "t"])
                try await connection.send(["MULTI"])
                try await connection.send(["CF.USE", "default"])
                try await connection.send(["DISCARD"])
                #expect(try await connection.send(["GET", "k"]) == .bulkString(Array("in t".utf8)))
            }
            #expect(try await client.get("k") == nil)
        }
    }

    @Test func transactionConflictIsRetriedToSuccess() async throws {
        try await withCairnd { client, _ in
            try await client.set("balance", 100)
            var runs = 0
            let replies = try await client.transaction(watching: ["balance"], attempts: 5) { tx in
                runs += 1
                let balance = Int(try await tx.getString("balance") ?? "0")!
                if runs == 1 {
                    // Someone else changes the watched key between our read and EXEC.
                    try await client.set("balance", balance + 1000)
                }
                tx.set("balance", balance + 10)
                tx.incrBy("ops", 1)
            }
            #expect(runs == 2)
            #expect(replies == [.simpleString("OK"), .integer(1)])
            #expect(try await client.getString("balance") == "1110")
            // With a single attempt the conflict surfaces as transactionAborted.
            do {
                try await client.transaction(watching: ["balance"]) { tx in
                    try await client.incr("balance")
                    tx.set("balance", 0)
                }
                Issue.record("a conflicting transaction committed")
            } catch CairnClientError.Code.transactionAborted {}
            #expect(try await client.getString("balance") == "1111")
        }
    }

    @Test func transactionQueuesEveryKindAndReportsErrors() async throws {
        try await withCairnd { client, _ in
            let fam = try await client.createColumnFamily("tx", options: .init(merge: .add))
            try await fam.set("z1", "x")
            let replies = try await fam.transaction { tx in
                tx.set("z2", "queued before the DELRANGE that covers it")
                tx.set("a", "1")
                tx.append("a", "2")
                tx.merge("m", 5)
                tx.expire("a", seconds: 100)
                tx.set("y", "x")
                tx.deleteRange(.inclusive("z"), .unbounded)
                tx.delete("nothing")
                tx.queue(["INCR", "a"])
                tx.queue(["INCR", "m"])
            }
            #expect(
                replies == [
                    .simpleString("OK"), .simpleString("OK"), .integer(2), .simpleString("OK"), .integer(1), .simpleString("OK"), .simpleString("OK"),
                    .integer(0), .integer(13), .integer(6),
                ])
            #expect(try await fam.getString("a") == "13")
            #expect(try await fam.get("z1") == nil)
            #expect(try await fam.get("z2") == nil)
            #expect(try await client.get("a") == nil)
            // A command refused while queueing aborts the whole EXEC.
            do {
                try await client.transaction { tx in
                    tx.set("b", "1")
                    tx.queue(["GET"])
                }
                Issue.record("EXECABORT not thrown")
            } catch let error as CairnClientError {
                #expect(error.prefix == "EXECABORT")
            }
            #expect(try await client.get("b") == nil)
            // A body that throws sends nothing and leaves the connection usable.
            struct Stop: Error {}
            await #expect(throws: Stop.self) {
                try await client.transaction(watching: ["b"]) { tx in
                    tx.set("b", "1")
                    throw Stop()
                }
            }
            #expect(try await client.get("b") == nil)
            try await client.withConnection { connection in
                try await connection.watch("w")
                try await connection.unwatch()
            }
        }
    }

    @Test func adminInfoConfigCompact() async throws {
        try await withCairnd { client, _ in
            #expect(try await client.ping() == "PONG")
            #expect(try await client.echo("hi").text == "hi")
            let info = try await client.info()
            #expect(info["server"]["redis_version"] != nil)
            #expect(info.integer("open_iterators", in: "rocksdb") == 0)
            #expect(info.value("tcp_port") != nil)
            #expect(try await client.info("rocksdb").sections.keys.contains("rocksdb"))
            #expect(try await client.configGet("maxclients")["maxclients"] != nil)
            try await client.configSet("slowlog-log-slower-than", 5000)
            #expect(try await client.configGet("slowlog-log-slower-than") == ["slowlog-log-slower-than": "5000"])
            try await client.configResetStat()
            await #expect(throws: CairnClientError.self) { try await client.configRewrite() }  // no config file
            try await client.set("a", "1")
            try await client.compact()
            try await client.compact(from: "a", to: "b")
            let (seconds, micros) = try await client.time()
            #expect(seconds > 1_700_000_000 && micros < 1_000_000)
            #expect(try await client.lastSave() > 1_700_000_000)
        }
    }
}
