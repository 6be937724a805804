import CairnClient
import CairnStore
import CairnTestSupport
import Testing

// The playlist/songs example of docs/store.md, run against a real cairnd.
private struct GuideSong: StoredObject {
    var id: String
    var title: String
    var artist: String
    var year: Int
    var rating: Double = 0
    static var typeName: String { "GuideSong" }
    static let indexes: [Index<GuideSong>] = [Index("artist_year", \.artist, \.year), Index("year", \.year)]
    static let textFields: [TextField<GuideSong>] = [TextField(\.title)]
}

private final class GuidePlaylist: StoredObject {
    var id: String
    var name: String
    var songs: ToMany<GuideSong>
    var cover: Reference<GuideSong> = Reference()

    init(id: String, name: String, songs: [GuideSong] = []) {
        self.id = id
        self.name = name
        self.songs = ToMany(songs)
    }

    static var typeName: String { "GuidePlaylist" }
    static let relationships: [Relationship<GuidePlaylist>] = [
        .toMany("songs", \.songs, deleteRule: .nullify),
        .toOne("cover", \.cover),
    ]
}

@Suite struct GuideExampleTests {
    @Test func playlistAndSongs() async throws {
        let server = try CairndProcess()
        defer { server.terminate() }
        let client = CairnClient(configuration: CairnClientConfiguration(port: server.port))
        defer { client.close() }
        let volume = DefaultKey("volume", default: 0.8)
        let store = try await CairnStore.open(client: client, models: [GuideSong.self, GuidePlaylist.self])

        let session = store.session()
        let heroes = GuideSong(id: "s1", title: "Heroes", artist: "David Bowie", year: 1977)
        let ashes = GuideSong(id: "s2", title: "Ashes to Ashes", artist: "David Bowie", year: 1980)
        session.insert(heroes)
        session.insert(ashes)
        let berlin = GuidePlaylist(id: "p1", name: "Berlin", songs: [heroes, ashes])
        session.insert(berlin)
        session.setRoot("current", to: berlin)
        session.set(volume, 0.5)
        try await session.save()

        let reader = store.session()
        let playlist = try #require(try await reader.fetch(GuidePlaylist.self, id: "p1"))
        #expect(try await reader.objects(playlist.songs).map(\.title) == ["Heroes", "Ashes to Ashes"])
        let seventies = try await reader.fetch(
            GuideSong.where(\.artist == "David Bowie").where(\.year, in: 1970..<1980).descending().limit(10))
        #expect(seventies.map(\.id) == ["s1"])
        #expect(try await reader.search(GuideSong.self, "ash* bowie").isEmpty)  // the artist is not a text field
        #expect(try await reader.search(GuideSong.self, "ash*").map(\.id) == ["s2"])
        playlist.songs.move(from: 1, to: 0)
        try await reader.save()
        #expect(try await store.session().fetch(GuidePlaylist.self, id: "p1")?.songs.ids == ["s2", "s1"])
        #expect(try await store.session().root("current", as: GuidePlaylist.self)?.name == "Berlin")
        #expect(try await store.value(for: volume) == 0.5)

        try await store.retrying { session in
            guard var song = try await session.fetch(GuideSong.self, id: "s1") else { return }
            song.rating += 1
            session.update(song)
        }
        #expect(try await store.session().fetch(GuideSong.self, id: "s1")?.rating == 1)
    }
}
