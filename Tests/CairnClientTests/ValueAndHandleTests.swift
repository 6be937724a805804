@testable import CairnClient
import CairnTestSupport
import Foundation
import RESP
import Testing

/// Reply parsing without a server (INFO, backup entries), and the forwarding of every handle type.
@Suite struct ValueAndHandleTests {
    @Test func serverInfoParsesSections() {
        let info = ServerInfo(parsing: "# Server\r\nredis_version:7.2.0\r\ntcp_port:7379\r\n\r\n# RocksDB\r\nopen_cursors:2\r\nnote:a:b\r\n")
        #expect(info["server"]["redis_version"] == "7.2.0")
        #expect(info.integer("open_cursors", in: "rocksdb") == 2)
        #expect(info.integer("tcp_port") == 7379)
        #expect(info.value("note") == "a:b")
        #expect(info["missing"].isEmpty)
    }

    @Test func backupEntriesInEveryShape() throws {
        let positional = try BackupEntry(.array([.integer(3), .integer(1_700_000_000), .integer(4096), .integer(7)]))
        #expect(positional.id == 3 && positional.timestamp == 1_700_000_000 && positional.size == 4096 && positional.fileCount == 7)
        let flat = try BackupEntry(.array(["id", "4", "timestamp", "5", "size", "6", "number_files", "8"].map { .bulkString(Array($0.utf8)) }))
        #expect(flat.id == 4 && flat.timestamp == 5 && flat.size == 6 && flat.fileCount == 8)
        let map = try BackupEntry(.map([(.bulkString(Array("id".utf8)), .integer(9))]))
        #expect(map.id == 9 && map.size == nil)
        #expect(try BackupEntry(.integer(2)).id == 2)
        #expect(throws: CairnClientError.self) { try BackupEntry(.array([.bulkString(Array("x".utf8))])) }
    }

    @Test func backupsRoundTripThroughTheServer() async throws {
        try await withCairnd { client, _ in
            try await client.set("a", "1")
            let first = try await client.backupCreate()
            try await client.set("b", "2")
            let second = try await client.backupCreate()
            #expect(second > first)
            let listed = try await client.backups()
            #expect(listed.map(\.id) == [first, second])
            #expect(listed.allSatisfy { ($0.timestamp ?? 0) > 1_700_000_000 && ($0.size ?? 0) > 0 && ($0.fileCount ?? 0) > 0 })
            try await client.backupVerify(first)
            try await client.backupVerify(second, quick: true)
            try await client.flushAll()
            try await client.backupRestore(first)
            #expect(try await client.getString("a") == "1")
            #expect(try await client.getString("b") == nil)
            try await client.backupRestoreLatest()
            #expect(try await client.getString("b") == "2")
            #expect(try await client.backupPurge(keep: 1) == 1)
            #expect(try await client.backups().map(\.id) == [second])
            do {
                try await client.backupVerify(first)
                Issue.record("verifying a purged backup must fail")
            } catch let error as CairnClientError {
                #expect(error.code == .server && error.prefix == "ERR")
            }
            let before = try await client.lastSave()
            #expect(try await client.bgsave() == "Background saving started")
            var count = 1
            for _ in 0..<100 where count == 1 {
                try await Task.sleep(for: .milliseconds(50))
                count = try await client.backups().count
            }
            #expect(count == 2, "BGSAVE took a backup")
            #expect(try await client.lastSave() >= before)
            let directory = "/tmp/cairn-client-checkpoint-\(UInt64.random(in: 0...UInt64.max))"
            try await client.checkpoint(directory)
            #expect(FileManager.default.fileExists(atPath: directory + "/CURRENT"))
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test func everyHandleForwardsSendAndPipeline() async throws {
        try await withCairnd { client, _ in
            let family = try await client.createColumnFamily("h")
            #expect(try await family.pipeline([["SET", "a", "1"], ["SET", "b", "2"], ["SET", "c", "3"]]).count == 3)
            var keys: [String] = []
            for try await entry in family.iterate(from: "b") { keys.append(entry.keyString) }
            #expect(keys == ["b", "c"])
            for try await entry in family.entries(from: .exclusive("a"), pageSize: 1) { keys.append(entry.valueString) }
            #expect(keys == ["b", "c", "2", "3"])
            let seen = try await family.withSnapshot { try await $0.pipeline([["GET", "a"], ["GET", "zz"]]) }
            #expect(seen == [.bulkString([49]), .null])
            let replies = try await client.withConnection { connection in
                try await connection.pipeline([["PING"], ["ECHO", "x"]])
            }
            #expect(replies == [.simpleString("PONG"), .bulkString([120])])
            try await family.transaction(watching: ["a"]) { tx in
                let piped = try await tx.pipeline([["GET", "a"]])
                let sent = try await tx.send(["GET", "b"])
                #expect(piped == [.bulkString([49])])
                #expect(sent == .bulkString([50]))
            }
            #expect(try await client.pipeline([]) == [])
        }
    }
}
