import Foundation
import Rocks
import Testing

@Suite struct BackupTests {
    @Test func restoreGivesTheDataAsOfTheBackup() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.sub("db"), options: testOptions())
        let engine = try BackupEngine.open(at: dir.sub("backups"))
        try db.put(b("a"), b("1"))
        let first = try engine.createBackup(of: db)
        try db.put(b("b"), b("2"))
        try db.delete(b("a"))
        let second = try engine.createBackup(of: db)
        #expect(second.id > first.id)
        #expect(try engine.backups().map(\.id) == [first.id, second.id])
        #expect(first.fileCount > 0 && first.size > 0)
        try engine.verify(first.id)

        try engine.restore(first.id, toDatabaseAt: dir.sub("restored1"))
        let r1 = try Database.open(at: dir.sub("restored1"), options: testOptions())
        #expect(s(try r1.get(b("a"))) == "1")
        #expect(try r1.get(b("b")) == nil)
        try r1.close()
        try engine.restore(nil, toDatabaseAt: dir.sub("restored2"))
        let r2 = try Database.open(at: dir.sub("restored2"), options: testOptions())
        #expect(try r2.get(b("a")) == nil)
        #expect(s(try r2.get(b("b"))) == "2")
    }

    @Test func purgeKeepsTheNewest() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.sub("db"), options: testOptions())
        let engine = try BackupEngine.open(at: dir.sub("backups"))
        var ids: [UInt32] = []
        for i in 0..<4 {
            try db.put(b("k\(i)"), b("v"))
            ids.append(try engine.createBackup(of: db).id)
        }
        try engine.purge(keeping: 2)
        #expect(try engine.backups().map(\.id) == Array(ids.suffix(2)))
    }

    @Test func verifyDetectsADamagedBackup() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.sub("db"), options: testOptions())
        for i in 0..<1000 { try db.put(b("k\(i)"), b(String(repeating: "v", count: 100))) }
        let engine = try BackupEngine.open(at: dir.sub("backups"))
        let info = try engine.createBackup(of: db)
        try engine.verify(info.id)
        // Table files live under shared/ or shared_checksum/ depending on the backup options.
        let files = try #require(FileManager.default.subpaths(atPath: dir.sub("backups")))
        let table = try #require(files.first { $0.hasSuffix(".sst") })
        let handle = try #require(FileHandle(forWritingAtPath: dir.sub("backups/" + table)))
        handle.truncateFile(atOffset: 10)
        handle.closeFile()
        #expect(throws: StorageError.self) { try engine.verify(info.id) }
    }

    /// RocksDB's restore returns at the first file that fails while its copier thread still
    /// works through the files queued after it; once `restore` has thrown, nothing may still be
    /// writing into the directory (the caller is about to remove it).
    @Test func aFailedRestoreHasStoppedWritingWhenItThrows() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.sub("db"), options: testOptions())
        var rng = SystemRandomNumberGenerator()
        for table in 0..<6 {
            for i in 0..<40 {  // incompressible, so each table is about 2.5 MB
                let words = (0..<8192).map { _ in rng.next() }
                try db.put(b("t\(table)-\(i)"), words.withUnsafeBytes { Array($0) })
            }
            try db.flush()
        }
        let engine = try BackupEngine.open(at: dir.sub("backups"))
        let info = try engine.createBackup(of: db)
        try db.close()
        let tables = try FileManager.default.contentsOfDirectory(atPath: dir.sub("db")).filter { $0.hasSuffix(".sst") }.sorted()
        #expect(tables.count >= 6)
        // A non-empty directory where the first table goes makes its copy fail.
        let target = dir.sub("restored")
        try FileManager.default.createDirectory(atPath: target + "/" + tables[0] + "/in-the-way", withIntermediateDirectories: true)
        #expect(throws: StorageError.self) { try engine.restore(info.id, toDatabaseAt: target) }
        let size = { (name: String) -> Int in
            ((try? FileManager.default.attributesOfItem(atPath: target + "/" + name))?[.size] as? Int) ?? -1
        }
        let before = tables.dropFirst().map(size)
        usleep(300_000)
        #expect(tables.dropFirst().map(size) == before, "files still changing after restore threw")
        // The engine still works after the failure.
        try FileManager.default.removeItem(atPath: target)
        try engine.restore(info.id, toDatabaseAt: target)
        let restored = try Database.open(at: target, options: testOptions())
        #expect(try restored.get(b("t5-39"))?.count == 65536)
    }

    @Test func checkpointOpensReadOnly() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.sub("db"), options: testOptions())
        try db.put(b("k"), b("v"))
        try db.checkpoint(to: dir.sub("cp"))
        try db.put(b("k"), b("after"))
        var o = testOptions()
        o.readOnly = true
        let cp = try Database.open(at: dir.sub("cp"), options: o)
        #expect(s(try cp.get(b("k"))) == "v")
    }
}
