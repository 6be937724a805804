@testable import CairnClient
import CairnTestSupport
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

    @Test func backupCommandsReachTheServer() async throws {
        // The BACKUP.* family and CHECKPOINT are not on this branch's server yet: each typed
        // method must still send its command and surface the server's refusal as `.server`.
        try await withCairnd { client, _ in
            let calls: [@Sendable () async throws -> Void] = [
                { _ = try await client.backupCreate() }, { _ = try await client.backups() },
                { try await client.backupVerify(1) }, { try await client.backupPurge(keep: 1) },
                { try await client.backupRestore(1) }, { try await client.checkpoint("/tmp/x") },
            ]
            for call in calls {
                do {
                    try await call()
                } catch let error as CairnClientError {
                    #expect(error.code == .server && error.prefix == "ERR" && error.message.contains("unknown command"))
                }
            }
            #expect(try await client.ping() == "PONG")
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
