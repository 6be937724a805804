import CairnClient
@testable import CairnStore
import CairnTestSupport
import Foundation
import Testing

/// Version 1 of a track: a name and a duration in milliseconds.
struct TrackV1: StoredObject {
    var id: Int
    var name: String
    var millis: Int
    static var typeName: String { "Track" }
    static let indexes: [Index<TrackV1>] = [Index("name", \.name)]
}

/// Version 2: `name` became `title`, milliseconds became seconds, and a genre was added.
struct Track: StoredObject {
    var id: Int
    var title: String
    var seconds: Double
    var genre: String
    static var schemaVersion: Int { 2 }
    static let indexes: [Index<Track>] = [Index("name", \.title)]

    static func migrate(from body: StoredBody) throws -> Track {
        switch body.schemaVersion {
        case 1:
            let old = try body.decode(TrackV1.self)
            return Track(id: old.id, title: old.name, seconds: Double(old.millis) / 1000, genre: "unknown")
        default:
            throw CairnStoreError(.unsupportedVersion, "Track version \(body.schemaVersion)")
        }
    }
}

/// A version this code does not know yet.
struct TrackV3: StoredObject {
    var id: Int
    static var typeName: String { "Track" }
    static var schemaVersion: Int { 3 }
}

@Suite struct VersioningAndEncryptionTests {
    func storedVersion(_ client: CairnClient, _ id: Int) async throws -> Int? {
        guard let body = try await client.columnFamily("store.obj.Track").get(id.keyBytes) else { return nil }
        return Int(body[2]) << 8 | Int(body[3])
    }

    @Test func oldVersionsAreMigratedOnReadAndUpgradedOnSave() async throws {
        try await withStore { store, client, _ in
            let old = store.session()
            old.insert(TrackV1(id: 1, name: "Heroes", millis: 371_000))
            old.insert(TrackV1(id: 2, name: "Helden", millis: 372_500))
            try await old.save()
            #expect(try await storedVersion(client, 1) == 1)

            let session = store.session()
            let t1 = try await session.fetch(Track.self, id: 1)!
            #expect(t1.title == "Heroes" && t1.seconds == 371 && t1.genre == "unknown")
            // Streaming all migrates too; nothing is written by reading.
            var titles: [String] = []
            for try await t in session.all(Track.self) { titles.append(t.title) }
            #expect(titles == ["Heroes", "Helden"])
            #expect(try await storedVersion(client, 2) == 1)

            // Saved, an object is written in the current version; the other stays old until saved.
            var changed = t1
            changed.genre = "rock"
            session.update(changed)
            try await session.save()
            #expect(try await storedVersion(client, 1) == 2)
            #expect(try await storedVersion(client, 2) == 1)
            let check = store.session()
            #expect(try await check.fetch(Track.self, id: 1)?.genre == "rock")
            // The index entry written by version 1 was replaced through the migrated object.
            #expect(try await check.fetch(Track.where(\.title == "Heroes")).map(\.id) == [1])
            #expect(try await check.fetch(Track.where(\.title == "Helden")).map(\.id) == [2])

            // A body from a newer version is refused with a clear error.
            let newer = store.session()
            newer.update(TrackV3(id: 3))
            try await newer.save()
            await #expect(throws: CairnStoreError.self) { try await store.session().fetch(Track.self, id: 3) }
            do {
                _ = try await store.session().fetch(Track.self, id: 3)
            } catch let error as CairnStoreError {
                #expect(error.code == .unsupportedVersion)
            }
        }
    }

    @Test func encryptedBodiesAndWrongPassphrase() async throws {
        let server = try CairndProcess()
        defer { server.terminate() }
        let client = CairnClient(configuration: CairnClientConfiguration(port: server.port))
        defer { client.close() }
        let store = try await CairnStore.open(client: client, passphrase: "correct horse", models: [Song.self])
        let session = store.session()
        session.insert(Song(id: "s1", title: "Secret Melody", artist: "Hidden", year: 1999))
        try await session.save()

        // The body is sealed: the title is nowhere in the stored bytes; the header says encrypted.
        let body = try #require(try await client.columnFamily("store.obj.Song").get("s1".keyBytes))
        #expect(body[1] & 1 == 1)
        #expect(!body.text.contains("Secret"))
        #expect(!body.text.contains("Hidden"))

        // Same passphrase: readable. Wrong one: a clear error at open. None: refused too.
        let again = try await CairnStore.open(client: client, passphrase: "correct horse", models: [Song.self])
        #expect(try await again.session().fetch(Song.self, id: "s1")?.title == "Secret Melody")
        await #expect(throws: CairnStoreError(.wrongPassphrase, "the passphrase does not open this store")) {
            _ = try await CairnStore.open(client: client, passphrase: "battery staple", models: [Song.self])
        }
        await #expect(throws: CairnStoreError(.passphraseRequired, "this store is encrypted; open it with its passphrase")) {
            _ = try await CairnStore.open(client: client, models: [Song.self])
        }

        // A body moved to another key does not decrypt (the key is authenticated with it).
        try await client.columnFamily("store.obj.Song").set("s2".keyBytes, body)
        await #expect(throws: CairnStoreError.self) { try await again.session().fetch(Song.self, id: "s2") }
    }
}
