import CairnClient
import CairnTestSupport
import Foundation
import Testing

/// The README's client example, verbatim between the markers, run twice against one server: it
/// must compile and must not fail on a second run (it once created a family unconditionally).
@Suite struct ReadmeExampleTests {
    static func readmeExample(port: Int) async throws {
        // README example begins
        let client = CairnClient(host: "127.0.0.1", port: port)       // password:, username: optional
        defer { client.close() }
        try await client.set("greeting", "hello")                       // keys and values: bytes or String
        let text = try await client.getString("greeting")               // "hello"
        let counters = try await client.columnFamilies().contains("counters")
            ? client.columnFamily("counters")
            : try await client.createColumnFamily("counters", options: .init(merge: .add))
        try await counters.merge("visits", 1)                           // runs in that family
        let pair = try await client.withSnapshot { try await $0.mget(["a", "b"]) }  // always released
        for try await e in client.entries(from: .inclusive("user:"), to: .exclusive("user;")) { print(e.keyString) }
        try await client.transaction(watching: ["n"], attempts: 5) { tx in tx.set("n", 1) }  // MULTI/EXEC
        let raw = try await client.send(["COMMAND", "INFO", "GET"])    // any command, RESPValue back
        // README example ends
        #expect(text == "hello" && pair == [nil, nil] && raw.array?.count == 1)
    }

    @Test func theReadmeShowsThisCode() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let lines = source.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.hasSuffix("// README example begins") })
        let end = try #require(lines.firstIndex { $0.hasSuffix("// README example ends") })
        let example = lines[(start + 1)..<end].map { $0.replacingOccurrences(of: "port: port", with: "port: 7379") }
            .map { String($0.dropFirst(8)) }.joined(separator: "\n")
        #expect(readme.contains("import CairnClient\n\n" + example + "\n```"))
    }

    @Test func runsAnyNumberOfTimes() async throws {
        let server = try CairndProcess()
        defer { server.terminate() }
        try await Self.readmeExample(port: server.port)
        try await Self.readmeExample(port: server.port)
        let client = CairnClient(port: server.port)
        defer { client.close() }
        #expect(try await client.columnFamily("counters").getString("visits") == "2")
    }
}
