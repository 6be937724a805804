import CairnClient
@testable import CairnStore
import Foundation
import Testing

@Suite struct RelationshipTests {
    func songs(_ n: Int, prefix: String = "s") -> [Song] {
        (0..<n).map { Song(id: "\(prefix)\($0)", title: "Title \($0)", artist: "A", year: 2000 + $0) }
    }

    @Test func orderedToManyKeepsItsOrderAcrossReload() async throws {
        try await withStore { store, client, _ in
            let all = songs(30)
            let session = store.session()
            for s in all { session.insert(s) }
            // Not id order: the playlist's own order.
            let order = [17, 3, 29, 0, 11, 5, 22, 8, 14, 1]
            session.insert(Playlist(id: "p1", name: "Mix", songs: order.map { all[$0] }))
            try await session.save()

            // A new client and store: nothing cached anywhere.
            let client2 = CairnClient(configuration: client.configuration)
            defer { client2.close() }
            let store2 = try await CairnStore.open(client: client2, models: [Song.self, Playlist.self, Album.self])
            let s2 = store2.session()
            let playlist = try await s2.fetch(Playlist.self, id: "p1")!
            #expect(try await s2.objects(playlist.songs).map(\.id) == order.map { "s\($0)" })
            #expect(try await s2.objects(playlist.songs, in: 2..<5).map(\.id) == ["s29", "s0", "s11"])

            // Insert, move, remove, then reload again.
            playlist.songs.insert(all[25], at: 1)  // 17 25 3 29 0 11 5 22 8 14 1
            playlist.songs.move(from: 0, to: 10)  // 25 3 29 0 11 5 22 8 14 1 17
            playlist.songs.remove(at: 2)  // 25 3 0 11 5 22 8 14 1 17
            playlist.songs.append(all[2])  // ... 17 2
            try await s2.save()
            let expected = [25, 3, 0, 11, 5, 22, 8, 14, 1, 17, 2].map { "s\($0)" }
            let s3 = store.session()
            let reloaded = try await s3.fetch(Playlist.self, id: "p1")!
            #expect(reloaded.songs.ids == expected)
            #expect(try await s3.objects(reloaded.songs).map(\.id) == expected)
            // The reverse index follows: one entry per song in the list.
            #expect(try await keys(client, "store.refs").count == expected.count)
        }
    }

    @Test func cascadeDeletesTargetsWithTheirEntries() async throws {
        try await withStore { store, client, _ in
            let tracks = songs(4, prefix: "t")
            let other = Song(id: "x", title: "Elsewhere", artist: "B", year: 1)
            let session = store.session()
            for s in tracks + [other] { session.insert(s) }
            session.insert(Album(id: 1, title: "LP", tracks: ToMany(tracks), cover: Reference(tracks[0])))
            session.insert(Playlist(id: "p1", name: "Mix", songs: [tracks[1], other]))
            try await session.save()
            #expect(try await store.count(Song.self) == 5)

            let s2 = store.session()
            s2.delete(Album.self, id: 1)
            try await s2.save()
            #expect(try await store.count(Album.self) == 0)
            #expect(try await store.count(Song.self) == 1)
            #expect(try await keys(client, "store.obj.Song") == ["x".keyBytes])
            #expect(try await keys(client, "store.idx.Song").count == Song.indexes.count)
            #expect(try await store.session().searchCount(Song.self, "title") == 0)
            #expect(try await store.session().searchCount(Song.self, "elsewhere") == 1)
            // The playlist that held a cascaded track no longer points at it.
            let playlist = try await store.session().fetch(Playlist.self, id: "p1")!
            #expect(playlist.songs.ids == ["x"])
            let refs = try await keys(client, "store.refs")
            #expect(refs.count == 1, "\(refs.map { $0.map { String($0, radix: 16) }.joined(separator: " ") })")
        }
    }

    @Test func deletingATargetNullifiesReferencesAndNullifyRuleKeepsTargets() async throws {
        try await withStore { store, client, _ in
            let all = songs(5)
            let session = store.session()
            for s in all { session.insert(s) }
            session.insert(Playlist(id: "p1", name: "One", songs: all))
            session.insert(Playlist(id: "p2", name: "Two", songs: [all[2], all[4], all[2]]))
            session.insert(Album(id: 7, title: "LP", tracks: ToMany(), cover: Reference(all[2])))
            try await session.save()

            // Deleting s2 in a session that never read the playlists or the album.
            let s2 = store.session()
            s2.delete(Song.self, id: "s2")
            try await s2.save()
            let check = store.session()
            #expect(try await check.fetch(Playlist.self, id: "p1")!.songs.ids == ["s0", "s1", "s3", "s4"])
            #expect(try await check.fetch(Playlist.self, id: "p2")!.songs.ids == ["s4"])
            #expect(try await check.fetch(Album.self, id: 7)!.cover.id == nil)

            // A loaded playlist instance is updated in place by the same save.
            let s3 = store.session()
            let p1 = try await s3.fetch(Playlist.self, id: "p1")!
            s3.delete(Song.self, id: "s0")
            try await s3.save()
            #expect(p1.songs.ids == ["s1", "s3", "s4"])

            // Nullify rule: deleting the playlist leaves its songs.
            let s4 = store.session()
            s4.delete(Playlist.self, id: "p1")
            try await s4.save()
            #expect(try await store.count(Song.self) == 3)
            #expect(try await store.session().fetch(Playlist.self, id: "p1") == nil)
            // Only p2 → s4 is left in the reverse index.
            #expect(try await keys(client, "store.refs").count == 1)
        }
    }
}
