@testable import CairnEngine
import Foundation
import Logging
import RESP
import Rocks
import Synchronization
import Testing

/// A big write under a claim goes in pieces behind a journal entry (`Engine.writeClaimed`):
/// other writers run between the pieces, readers of its keys wait for all of it, and a crash
/// in the middle is completed at the next start.
@Suite struct PiecewiseWriteTests {
    private func records(_ data: [UInt8]) -> [String] {
        var reader = BatchReader(data)
        var out: [String] = []
        while let r = reader.next() { out.append("\(r.kind) \(r.family) \(Array(r.key)) \(Array(r.value))") }
        #expect(reader.readAll)
        return out
    }

    @Test func piecesCarryEveryRecordOnceInOrder() throws {
        let h = try EngineHarness()
        let db = h.engine.database
        let meta = try #require(db.family(named: Engine.metaFamilyName))
        var batch = WriteBatch()
        for i in 0..<5000 {
            switch i % 4 {
            case 0: batch.put(Array("k\(i)".utf8), Array("v\(i)".utf8))
            case 1: batch.delete(Array("k\(i)".utf8))
            case 2: batch.merge(Array("k\(i)".utf8), Array("m".utf8))
            default: batch.put(Array("k\(i)".utf8), [UInt8](repeating: 7, count: i % 300), in: meta)
            }
        }
        let data = batch.data
        let pieces = try #require(LargeWrite.pieces(of: data, entries: 2048))
        #expect(pieces.count == 3)
        let counts = pieces.map { piece in (0..<4).reduce(0) { $0 | Int(piece[8 + $1]) << (8 * $1) } }
        #expect(counts == [2048, 2048, 904])
        #expect(pieces.flatMap(records) == records(data))
        // Each piece is a batch RocksDB takes as it is.
        for piece in pieces { #expect(WriteBatch(serialized: piece)?.count == 2048 || WriteBatch(serialized: piece)?.count == 904) }
        #expect(LargeWrite.pieces(of: Array(data.dropLast()), entries: 2048) == nil, "a cut record is refused")
    }

    @Test func aBigMsetGoesInPiecesAndLeavesNoJournal() throws {
        let h = try EngineHarness()
        var mset = ["MSET"]
        for i in 0..<10_000 { mset += ["k\(i)", "v\(i)"] }
        #expect(h.run(mset.map { Array($0.utf8) }) == .ok)
        #expect(h.engine.stats.piecewiseWrites.value == 1)
        #expect(h.run("GET", "k0") == .bulk("v0"))
        #expect(h.run("GET", "k9999") == .bulk("v9999"))
        #expect(h.run("DBSIZE") == .integer(10_000))
        var del = ["DEL"]
        for i in 0..<10_000 { del.append("k\(i)") }
        #expect(h.run(del.map { Array($0.utf8) }) == .integer(10_000))
        #expect(h.engine.stats.piecewiseWrites.value == 2)
        #expect(h.run("DBSIZE") == .integer(0))
        #expect(try pendingKeys(h.engine.database).isEmpty)
        // Small writes, and big ones in a transaction, stay one write.
        #expect(h.run("MSET", "a", "1", "b", "2") == .ok)
        #expect(h.engine.stats.piecewiseWrites.value == 2)
    }

    @Test func aReaderOfAClaimedKeyWaitsForTheWholeWrite() throws {
        let h = try EngineHarness()
        let engine = h.engine
        let family = engine.defaultFamily
        #expect(h.run("SET", "big:7", "old") == .ok)
        let keys = (0..<5000).map { Array("big:\($0)".utf8) }
        let claimed = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread {
            engine.locks.withLocks(keys, in: family) {
                claimed.signal()
                release.wait()  // the pieces are being written
            }
        }.start()
        claimed.wait()
        #expect(engine.locks.isClaimed([keys[7]], in: family))
        #expect(!engine.locks.isClaimed([Array("other".utf8)], in: family))
        #expect(engine.route([Array("GET".utf8), keys[7]], session: h.session) == .long)
        #expect(engine.route([Array("GET".utf8), Array("other".utf8)], session: h.session) != .long)
        let other = h.otherSession()
        let read = Mutex<RESPValue?>(nil)
        Thread { let v = h.run([Array("GET".utf8), keys[7]], on: other); read.withLock { $0 = v } }.start()
        #expect(h.run("GET", "other") == .null, "a reader of another key does not wait")
        Thread.sleep(forTimeInterval: 0.2)
        #expect(read.withLock { $0 } == nil, "a reader of a claimed key waits")
        release.signal()
        var spins = 0
        while read.withLock({ $0 }) == nil && spins < 500 { Thread.sleep(forTimeInterval: 0.01); spins += 1 }
        #expect(read.withLock { $0 } == .bulk("old"))
    }

    @Test func anInterruptedBigWriteIsCompletedAtTheNextStart() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-piecewise-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = Configuration()
        config.dir = dir
        do {
            let engine = try Engine(configuration: config, logger: Logger(label: "test"))
            let db = engine.database
            let meta = try #require(db.family(named: Engine.metaFamilyName))
            let handle = engine.defaultFamily.handle
            var whole = WriteBatch()
            for i in 0..<100 { whole.put(Array("p\(i)".utf8), ValueFormat.encode(Array("v\(i)".utf8)), in: handle) }
            let pieces = try #require(LargeWrite.pieces(of: whole.data, entries: 30))
            // A crash after the journal entry and the first piece.
            var journal = WriteBatch()
            journal.put(Engine.pendingWritePrefix + [0, 0, 0, 0, 0, 0, 0, 1], whole.data, in: meta)
            try db.write(journal)
            try db.write(serializedBatch: pieces[0])
            try engine.close()
        }
        let engine = try Engine(configuration: config, logger: Logger(label: "test"))
        defer { try? engine.close() }
        let session = engine.makeSession(record: ClientRecord(id: engine.clients.makeID(), address: "127.0.0.1:1", localAddress: "127.0.0.1:7379", now: 0))
        var out = RESPWriter(version: .v2)
        engine.execute([Array("DBSIZE".utf8)], session: session, out: &out)
        #expect(out.bytes == Array(":100\r\n".utf8))
        out = RESPWriter(version: .v2)
        engine.execute([Array("GET".utf8), Array("p99".utf8)], session: session, out: &out)
        #expect(out.bytes == Array("$3\r\nv99\r\n".utf8))
        #expect(try pendingKeys(engine.database).isEmpty)
    }

    private func pendingKeys(_ db: Database) throws -> [[UInt8]] {
        let meta = try #require(db.family(named: Engine.metaFamilyName))
        return try db.entries(withPrefix: Engine.pendingWritePrefix, in: meta).map(\.key)
    }
}
