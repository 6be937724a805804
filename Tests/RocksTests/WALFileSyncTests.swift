import Foundation
import Rocks
import Testing

@Suite struct WALFileSyncTests {
    private func logs(in path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".log") }.sorted()
    }

    @Test func syncsEveryLiveLogAndTheDirectoryWhenOneAppears() throws {
        let dir = TemporaryDirectory()
        let path = dir.sub("db")
        let db = try Database.open(at: path, options: testOptions())
        try db.put(b("a"), b("1"))
        let first = try db.syncWALFiles()
        #expect(!first.files.isEmpty)
        #expect(first.files == (try logs(in: path)))
        #expect(first.directorySynced)  // the first sync has not seen any log yet

        try db.put(b("b"), b("2"))
        let again = try db.syncWALFiles()
        #expect(again.files == first.files)
        #expect(!again.directorySynced)  // nothing new in the directory

        // A flush switches to a new log: the next sync covers it and the directory entry.
        try db.flush()
        try db.put(b("c"), b("3"))
        let afterFlush = try db.syncWALFiles()
        #expect(afterFlush.files == (try logs(in: path)))
        #expect(afterFlush.files.last! > first.files.last!)
        #expect(afterFlush.directorySynced)
        try db.close()
    }

    @Test func refusesOnAClosedDatabase() throws {
        let dir = TemporaryDirectory()
        let db = try Database.open(at: dir.sub("db"), options: testOptions())
        try db.close()
        #expect(throws: StorageError.self) { try db.syncWALFiles() }
    }
}
