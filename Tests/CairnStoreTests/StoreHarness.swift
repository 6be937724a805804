import CairnClient
@testable import CairnStore
import CairnTestSupport
import Foundation

/// Starts a fresh cairnd, opens a store on it, hands both to `body`, then stops the server.
func withStore(
    passphrase: String? = nil, _ body: (CairnStore, CairnClient, CairndProcess) async throws -> Void
) async throws {
    let server = try CairndProcess()
    let client = CairnClient(configuration: CairnClientConfiguration(port: server.port))
    defer {
        client.close()
        server.terminate()
    }
    let store = try await CairnStore.open(client: client, passphrase: passphrase, models: [Song.self, Playlist.self, Album.self])
    try await body(store, client, server)
}

/// A second client and store on the same server, as another process would open them. Close
/// `store.client` when done.
func openSecondStore(
    _ server: CairndProcess, models: [any StoredObject.Type] = [Song.self, Playlist.self, Album.self]
) async throws -> CairnStore {
    let client = CairnClient(configuration: CairnClientConfiguration(port: server.port))
    do {
        return try await CairnStore.open(client: client, models: models)
    } catch {
        client.close()
        throw error
    }
}

struct Song: StoredObject, Equatable {
    var id: String
    var title: String
    var artist: String
    var year: Int
    var rating: Double = 0
    var explicit = false
    var released: Date? = nil

    static let indexes: [Index<Song>] = [
        Index("artist_year", \.artist, \.year),
        Index("year", \.year),
        Index("rating", \.rating),
        Index("explicit_rating", \.explicit, \.rating),
        Index("released", \.released),
    ]
    static let textFields: [TextField<Song>] = [TextField(\.title)]
}

/// A class: one instance per stored playlist in a session. Deleting a playlist leaves its songs.
final class Playlist: StoredObject {
    var id: String
    var name: String
    var songs: ToMany<Song>

    init(id: String, name: String, songs: [Song] = []) {
        self.id = id
        self.name = name
        self.songs = ToMany(songs)
    }

    static let relationships: [Relationship<Playlist>] = [.toMany("songs", \.songs, deleteRule: .nullify)]
}

/// Deleting an album deletes its tracks; its cover is a to-one reference.
struct Album: StoredObject {
    var id: Int
    var title: String
    var tracks: ToMany<Song>
    var cover: Reference<Song> = Reference()

    static let relationships: [Relationship<Album>] = [
        .toMany("tracks", \.tracks, deleteRule: .cascade),
        .toOne("cover", \.cover),
    ]
}

/// Every key of a column family (the store's raw state, for checks that nothing leaked).
func keys(_ client: CairnClient, _ family: String) async throws -> [[UInt8]] {
    try await client.columnFamily(family).rangeKeys()
}

extension Array where Element == UInt8 {
    var text: String { String(decoding: self, as: UTF8.self) }
}
