@testable import CairnEngine
import Foundation
import RESP
import Rocks
import Testing

/// A family's table options (CF.CREATE COMPRESSION, BLOOM, BLOCKSIZE) are recorded with it in
/// `cairn.meta`: a replica creates its copy with them, and a restart opens it with them.
@Suite struct ReplicationFamilyOptionsTests {
    @Test func settingsReadBothRecordedForms() {
        // Written before table options were recorded: the merge operator's name alone.
        #expect(FamilySettings(decoding: Array("".utf8)) == FamilySettings())
        #expect(FamilySettings(decoding: Array("add".utf8)) == FamilySettings(merge: "add"))
        // No table options: still the old form, which older servers read.
        #expect(FamilySettings(merge: "max").encoded == Array("max".utf8))
        #expect(FamilySettings().encoded == [])
        let full = FamilySettings(merge: "append", compression: .zstd, bloomBitsPerKey: 7.5, blockSize: 4096)
        #expect(String(decoding: full.encoded, as: UTF8.self) == "merge=append compression=zstd bloom=7.5 blocksize=4096")
        #expect(FamilySettings(decoding: full.encoded) == full)
        let noMerge = FamilySettings(compression: Compression.none)
        #expect(FamilySettings(decoding: noMerge.encoded) == noMerge)
        // A field a newer server writes is skipped.
        #expect(FamilySettings(decoding: Array("blocksize=8192 shiny=1".utf8)) == FamilySettings(blockSize: 8192))
    }

    static func info(_ h: EngineHarness, _ name: String) -> [String: String] {
        guard case .array(let items)? = Optional(h.run("CF.INFO", name)) else { return [:] }
        var out: [String: String] = [:]
        for i in stride(from: 0, to: items.count - 1, by: 2) {
            if case .bulkString(let k) = items[i], case .bulkString(let v) = items[i + 1] {
                out[String(decoding: k, as: UTF8.self)] = String(decoding: v, as: UTF8.self)
            }
        }
        return out
    }

    @Test func aReplicaCreatesTheFamilyWithThePrimarysOptions() throws {
        let primary = try EngineHarness()
        let replica = try EngineHarness()
        let feed = WALFeed(engine: primary.engine, from: primary.engine.replicationOffset + 1)
        defer { feed.close() }
        #expect(primary.run("CF.CREATE", "tuned", "MERGE", "add", "COMPRESSION", "zstd", "BLOOM", "4", "BLOCKSIZE", "8kb") == .ok)
        #expect(primary.run("CF.CREATE", "plain") == .ok)
        for (sequence, data) in try ReplicationTests.batches(feed) {
            try replica.engine.replication.apply(replica.engine, sequence: sequence, data: data)
        }
        let tuned = Self.info(replica, "tuned")
        #expect(tuned["merge"] == "add" && tuned["compression"] == "zstd" && tuned["bloom_bits"] == "4" && tuned["block_size"] == "8192")
        #expect(Self.info(primary, "tuned").filter { $0.key != "estimate_keys" } == tuned.filter { $0.key != "estimate_keys" })
        let plain = Self.info(replica, "plain")
        #expect(plain["merge"] == "" && plain["compression"] == "lz4" && plain["bloom_bits"] == "10" && plain["block_size"] == "16384")
        // RocksDB has them too (its OPTIONS file records what each family was created with).
        #expect(try OptionsFile.latest(in: replica.directory).options(of: "tuned") == ["compression": "kZSTD", "block_size": "8192", "filter": "bloomfilter"])
    }

    @Test func aRestartOpensTheFamilyWithItsOptions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-engine-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let h = try EngineHarness { $0.dir = directory }
            #expect(h.run("CF.CREATE", "tuned", "COMPRESSION", "no", "BLOOM", "0", "BLOCKSIZE", "4096") == .ok)
            #expect(h.run("CF.CREATE", "counters", "MERGE", "max") == .ok)
            h.run("CF.USE", "tuned")
            h.run("SET", "k", "v")  // left in the WAL: the restart replays it
        }  // closed here
        let h = try EngineHarness { $0.dir = directory }
        let tuned = Self.info(h, "tuned")
        #expect(tuned["compression"] == "no" && tuned["bloom_bits"] == "0" && tuned["block_size"] == "4096")
        #expect(try OptionsFile.latest(in: directory).options(of: "tuned") == ["compression": "kNoCompression", "block_size": "4096", "filter": "nullptr"])
        #expect(Self.info(h, "counters")["merge"] == "max")
        h.run("CF.USE", "tuned")
        #expect(h.run("GET", "k") == .bulk("v"))
    }
}

/// The newest `OPTIONS-*` file RocksDB wrote in a data directory: what it opened each family with.
struct OptionsFile {
    let text: String

    static func latest(in directory: String) throws -> OptionsFile {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("OPTIONS-") && !$0.hasSuffix(".dbtmp") }
        let newest = names.max { Int($0.dropFirst(8)) ?? 0 < Int($1.dropFirst(8)) ?? 0 }
        return OptionsFile(text: try String(contentsOfFile: directory + "/" + (newest ?? "OPTIONS"), encoding: .utf8))
    }

    /// One section's `name=value` lines.
    func section(_ header: String) -> [String: String] {
        var out: [String: String] = [:]
        var inside = false
        for line in text.split(separator: "\n") {
            let l = line.trimmingCharacters(in: .whitespaces)
            if l.hasPrefix("[") { inside = l == header; continue }
            guard inside, let eq = l.firstIndex(of: "=") else { continue }
            out[String(l[..<eq])] = String(l[l.index(after: eq)...])
        }
        return out
    }

    /// The family's compression, block size and filter (RocksDB 7.8 writes `bloomfilter`
    /// without its bits per key, `nullptr` for none).
    func options(of family: String) -> [String: String] {
        let cf = section("[CFOptions \"\(family)\"]")
        let table = section("[TableOptions/BlockBasedTable \"\(family)\"]")
        return ["compression": cf["compression"] ?? "?", "block_size": table["block_size"] ?? "?", "filter": table["filter_policy"] ?? "?"]
    }
}
