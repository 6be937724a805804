import CairnClient
import RESP
import Synchronization
import Testing

/// `transaction(in:)`: a MULTI/EXEC that runs in a column family and reaches others through
/// the transaction's family views, atomically, with the client's `CF.USE`s kept out of the
/// replies and the connection back in its family afterwards.
@Suite struct FamilyTransactionTests {
    @Test func writesToSeveralFamiliesInOneExec() async throws {
        try await withCairnd(configure: { $0.maximumConnections = 1 }) { client, _ async throws in
            let orders = try await client.createColumnFamily("orders")
            let stock = try await client.createColumnFamily("stock")
            try await stock.set("widget", 10)
            let replies = try await client.transaction(in: "orders") { tx async throws in
                #expect(tx.familyName == "orders")
                // A read now, in another family, on the transaction's connection.
                #expect(try await tx.family("stock").getString("widget") == "10")
                tx.set("order:7", "paid")
                tx.family("stock").incrBy("widget", -1)
                tx.queue(["GET", "order:7"])
            }
            #expect(replies == [.simpleString("OK"), .integer(9), .bulkString(Array("paid".utf8))])
            #expect(try await orders.getString("order:7") == "paid")
            #expect(try await stock.getString("widget") == "9")
            #expect(try await client.getString("order:7") == nil, "nothing in the default family")
            // The one connection went back to the pool in the default family.
            let raw = try await client.withConnection { try await $0.send(["GET", "order:7"]) }
            #expect(raw.isNull)
            #expect(try await client.transaction(in: orders) { tx in tx.delete("order:7") } == [.integer(1)])
        }
    }

    @Test func watchedKeysAreTheFamilys() async throws {
        try await withCairnd { client, _ async throws in
            let orders = try await client.createColumnFamily("orders")
            try await orders.set("n", 1)
            let runs = Atomic<Int>(0)
            let replies = try await client.transaction(in: "orders", watching: ["n"], attempts: 3) { tx in
                let n = Int(try await tx.getString("n") ?? "0")!
                // A write to the watched key between the read and EXEC, on the first run only.
                if runs.wrappingAdd(1, ordering: .relaxed).oldValue == 0 { try await orders.set("n", 100) }
                tx.set("n", n + 1)
            }
            #expect(replies == [.simpleString("OK")])
            #expect(runs.load(ordering: .relaxed) == 2)
            #expect(try await orders.getString("n") == "101")
        }
    }

    @Test func aMissingFamilyFailsTheTransaction() async throws {
        try await withCairnd { client, _ async throws in
            await #expect(throws: CairnClientError.self) {
                try await client.transaction(in: "nope") { tx in tx.set("k", "v") }
            }
            #expect(try await client.ping() == "PONG")
        }
    }
}
