// A tour of CairnClient against a running cairnd: `scripts/run &` then `swift run cairn-example`
// (or `swift run cairn-example 127.0.0.1 7379`).
import CairnClient

let arguments = CommandLine.arguments
let client = CairnClient(
    host: arguments.count > 1 ? arguments[1] : "127.0.0.1", port: arguments.count > 2 ? Int(arguments[2]) ?? 7379 : 7379)
defer { client.close() }

try await client.set("greeting", "hello")
print("greeting:", try await client.getString("greeting") ?? "(nil)")

// Ordered ranges, read page by page as the loop asks.
try await client.mset([("user:1", "ann"), ("user:2", "bob"), ("user:3", "cy")])
for try await user in client.entries(from: .inclusive("user:"), to: .exclusive("user;"), pageSize: 2) {
    print(user.keyString, "=", user.valueString)
}

// A column family with a merge operator: counters without read-modify-write.
let families = try await client.columnFamilies()
let counters =
    families.contains("example-counters")
    ? client.columnFamily("example-counters")
    : try await client.createColumnFamily("example-counters", options: .init(merge: .add))
try await counters.merge("visits", 1)
print("visits:", try await counters.getString("visits") ?? "0")

// A consistent view of several keys, released when the closure ends.
let names = try await client.withSnapshot { snapshot in
    try await snapshot.mget(["user:1", "user:2"]).map { $0.map { String(decoding: $0, as: UTF8.self) } ?? "(nil)" }
}
print("snapshot:", names)

// An optimistic transaction, retried if someone else changes the key meanwhile.
try await client.transaction(watching: ["balance"], attempts: 5) { tx in
    let balance = Int(try await tx.getString("balance") ?? "0") ?? 0
    tx.set("balance", balance + 10)
}
print("balance:", try await client.getString("balance") ?? "0")
print("open iterators:", try await client.info("rocksdb").value("open_cursors", in: "rocksdb") ?? "?")
