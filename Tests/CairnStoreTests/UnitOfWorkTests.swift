import CairnClient
@testable import CairnStore
import CairnTestSupport
import Foundation
import Glibc
import Testing

extension DefaultKey where Value == Double {
    static let volume = DefaultKey("volume", default: 0.8)
}

extension DefaultKey where Value == String {
    static let theme = DefaultKey("theme", default: "light")
}

@Suite struct UnitOfWorkTests {
    @Test func saveFetchCountAndStreamAll() async throws {
        try await withStore { store, _, _ in
            let session = store.session()
            for i in 0..<25 { session.insert(Song(id: String(format: "s%03d", i), title: "Song \(i)", artist: "A", year: 2000 + i)) }
            try await session.save()
            #expect(try await store.count(Song.self) == 25)

            let fresh = store.session()
            #expect(try await fresh.fetch(Song.self, id: "s007")?.title == "Song 7")
            #expect(try await fresh.fetch(Song.self, id: "nope") == nil)
            var seen: [String] = []
            for try await song in fresh.all(Song.self, batchSize: 4) { seen.append(song.id) }
            #expect(seen == (0..<25).map { String(format: "s%03d", $0) })

            fresh.delete(Song.self, id: "s003")
            try await fresh.save()
            #expect(try await store.count(Song.self) == 24)
            #expect(try await store.session().fetch(Song.self, id: "s003") == nil)
            // Outside a session; 24 objects in pages of 6 ends on a full page.
            var untracked: [String] = []
            for try await song in store.all(Song.self, batchSize: 6) { untracked.append(song.id) }
            #expect(untracked == (0..<25).filter { $0 != 3 }.map { String(format: "s%03d", $0) })
            var one: [String] = []
            for try await song in store.all(Song.self, batchSize: 1) { one.append(song.id) }
            #expect(one == untracked)
        }
    }

    @Test func identityMapGivesOneInstanceAndTracksChanges() async throws {
        try await withStore { store, _, _ in
            let setup = store.session()
            setup.insert(Playlist(id: "p1", name: "Mix"))
            try await setup.save()

            let session = store.session()
            let a = try await session.fetch(Playlist.self, id: "p1")!
            let b = try await session.fetch(Playlist.self, id: "p1")!
            #expect(a === b)
            let listed = try await session.fetch(Playlist.self, ids: ["p1"])[0]!
            #expect(listed === a)
            // A changed instance is saved without an explicit update.
            a.name = "Renamed"
            try await session.save()
            #expect(try await store.session().fetch(Playlist.self, id: "p1")?.name == "Renamed")
            // Another session has its own instance.
            let other = try await store.session().fetch(Playlist.self, id: "p1")!
            #expect(other !== a)
        }
    }

    /// A save whose EXEC the server refuses leaves nothing behind: no object, index entry, text
    /// entry, relationship entry, count or default.
    @Test func refusedExecLeavesNothing() async throws {
        try await withStore { store, client, _ in
            let session = store.session()
            let song = Song(id: "s1", title: "Heroes", artist: "Bowie", year: 1977)
            session.insert(song)
            session.insert(Playlist(id: "p1", name: "Mix", songs: [song]))
            session.set(.volume, 0.25)
            session.setRoot("favorite", to: song)
            store.hooks.withLock { $0.extraQueuedCommand = ["NO.SUCH.COMMAND"] }
            await #expect(throws: CairnStoreError.self) { try await session.save() }
            try await expectEmpty(store, client)

            // The same session saves once the fault is gone, and then everything is there.
            store.hooks.withLock { $0.extraQueuedCommand = nil }
            try await session.save()
            #expect(try await keys(client, "store.obj.Song").count == 1)
            #expect(try await keys(client, "store.idx.Song").count == Song.indexes.count)
            #expect(try await keys(client, "store.refs").count == 1)
            #expect(try await store.value(for: .volume) == 0.25)
        }
    }

    /// The server dies after the transaction's commands were queued and before EXEC: after a
    /// restart on the same data, nothing of the save is there.
    @Test func serverKilledBeforeExecLeavesNothing() async throws {
        let server = try CairndProcess()
        let client = CairnClient(configuration: CairnClientConfiguration(port: server.port))
        defer { client.close() }
        let store = try await CairnStore.open(client: client, models: [Song.self, Playlist.self, Album.self])
        let first = store.session()
        first.insert(Song(id: "keep", title: "Kept", artist: "K", year: 1))
        try await first.save()

        let session = store.session()
        for i in 0..<50 { session.insert(Song(id: "s\(i)", title: "Lost \(i)", artist: "L", year: i)) }
        session.set(.theme, "dark")
        let pid = server.process.processIdentifier
        store.hooks.withLock { $0.beforeExec = { kill(pid, SIGKILL) } }
        await #expect(throws: (any Error).self) { try await session.save() }
        server.process.waitUntilExit()

        let restarted = try CairndProcess(directory: server.directory)
        defer { restarted.terminate() }
        let client2 = CairnClient(configuration: CairnClientConfiguration(port: restarted.port))
        defer { client2.close() }
        let store2 = try await CairnStore.open(client: client2, models: [Song.self, Playlist.self, Album.self])
        #expect(try await keys(client2, "store.obj.Song") == ["keep".keyBytes])
        #expect(try await keys(client2, "store.idx.Song").count == Song.indexes.count)
        #expect(try await store2.session().searchCount(Song.self, "lost") == 0)
        #expect(try await store2.count(Song.self) == 1)
        #expect(try await store2.value(for: .theme) == "light")
    }

    func expectEmpty(_ store: CairnStore, _ client: CairnClient, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for family in ["store.obj.Song", "store.idx.Song", "store.text.Song", "store.obj.Playlist", "store.refs"] {
            #expect(try await keys(client, family).isEmpty, "\(family)", sourceLocation: sourceLocation)
        }
        #expect(try await store.count(Song.self) == 0, sourceLocation: sourceLocation)
        #expect(try await store.value(for: .volume) == 0.8, sourceLocation: sourceLocation)
        #expect(try await store.session().root("favorite", as: Song.self) == nil, sourceLocation: sourceLocation)
    }

    @Test func conflictBetweenTwoStores() async throws {
        try await withStore { storeA, _, server in
            let storeB = try await openSecondStore(server)
            defer { storeB.client.close() }
            let setup = storeA.session()
            setup.insert(Song(id: "s1", title: "One", artist: "Old", year: 1990))
            try await setup.save()

            // Both read revision 1; B saves first; A's save is refused and writes nothing.
            let a = storeA.session()
            let b = storeB.session()
            var songA = try await a.fetch(Song.self, id: "s1")!
            var songB = try await b.fetch(Song.self, id: "s1")!
            songB.artist = "B"
            b.update(songB)
            try await b.save()
            songA.artist = "A"
            a.update(songA)
            await #expect(throws: CairnStoreError(.conflict, "Song 's1' changed since this session read it")) { try await a.save() }
            let check = storeA.session()
            #expect(try await check.fetch(Song.self, id: "s1")?.artist == "B")
            #expect(try await check.fetch(Song.where(\.artist == "A")).isEmpty)
            #expect(try await check.fetch(Song.where(\.artist == "B")).map(\.id) == ["s1"])
            #expect(try await check.fetch(Song.where(\.artist == "Old")).isEmpty)

            // Inserting an id that exists is a conflict too.
            let dup = storeA.session()
            dup.insert(Song(id: "s1", title: "Dup", artist: "D", year: 1))
            await #expect(throws: CairnStoreError.self) { try await dup.save() }
        }
    }

    /// Another store writes the object between this save's read (under WATCH) and its EXEC: the
    /// EXEC is refused, and the index holds the other writer's entry only (never a stale one).
    @Test func writeBetweenReadAndExecIsAConflict() async throws {
        try await withStore { storeA, _, server in
            let storeB = try await openSecondStore(server)
            defer { storeB.client.close() }
            let setup = storeA.session()
            setup.insert(Song(id: "s1", title: "One", artist: "Old", year: 1990))
            try await setup.save()

            let a = storeA.session()
            a.update(Song(id: "s1", title: "One", artist: "A", year: 1991))  // blind write: no revision read
            storeA.hooks.withLock {
                $0.beforeExec = {
                    let b = storeB.session()
                    b.update(Song(id: "s1", title: "One", artist: "B", year: 1992))
                    try await b.save()
                }
            }
            await #expect(throws: CairnStoreError(.conflict, "an object changed between this save's read and its commit")) {
                try await a.save()
            }
            storeA.hooks.withLock { $0.beforeExec = nil }
            let check = storeA.session()
            #expect(try await check.fetch(Song.where(\.artist == "B")).map(\.year) == [1992])
            #expect(try await check.count(Song.where(\.year, in: 1900..<2100)) == 1)

            // Saved again (re-reading under WATCH), A's write replaces B's entries.
            try await a.save()
            #expect(try await check.fetch(Song.where(\.artist == "B")).isEmpty)
            #expect(try await check.fetch(Song.where(\.year, in: 1900..<2100)).map(\.artist) == ["A"])
        }
    }

    @Test func retryingResolvesConcurrentUpdates() async throws {
        try await withStore { store, _, server in
            let setup = store.session()
            setup.insert(Song(id: "counter", title: "", artist: "", year: 0))
            try await setup.save()
            let storeB = try await openSecondStore(server, models: [Song.self])
            defer { storeB.client.close() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    let s = task % 2 == 0 ? store : storeB
                    group.addTask {
                        for _ in 0..<5 {
                            try await s.retrying(attempts: 100) { session in
                                var song = try await session.fetch(Song.self, id: "counter")!
                                song.year += 1
                                session.update(song)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.session().fetch(Song.self, id: "counter")?.year == 40)
            #expect(try await store.session().fetch(Song.where(\.year == 40)).count == 1)
            #expect(try await keys(client(store), "store.idx.Song").count == Song.indexes.count)
        }
    }

    func client(_ store: CairnStore) -> CairnClient { store.client }

    @Test func defaultsAreCommittedWithObjects() async throws {
        try await withStore { store, _, _ in
            #expect(try await store.value(for: .volume) == 0.8)
            let session = store.session()
            session.set(.volume, 0.3)
            session.set(.theme, "dark")
            #expect(try await session.value(for: .volume) == 0.3)  // the session sees its own change
            #expect(try await store.value(for: .volume) == 0.8)  // nothing stored before save
            session.insert(Song(id: "s1", title: "T", artist: "A", year: 1))
            try await session.save()
            #expect(try await store.value(for: .volume) == 0.3)
            #expect(try await store.value(for: .theme) == "dark")

            let flags = DefaultKey("flag", default: false)
            let count = DefaultKey("launches", default: 0)
            let blob = DefaultKey("blob", default: Data())
            let s2 = store.session()
            s2.set(flags, true)
            s2.set(count, -42)
            s2.set(blob, Data([0, 1, 255]))
            s2.removeValue(for: .theme)
            try await s2.save()
            #expect(try await store.value(for: flags) == true)
            #expect(try await store.value(for: count) == -42)
            #expect(try await store.value(for: blob) == Data([0, 1, 255]))
            #expect(try await store.value(for: .theme) == "light")
            // A default read as another type is an error, not a reinterpretation.
            await #expect(throws: CairnStoreError.self) { try await store.value(for: DefaultKey("launches", default: "x")) }
        }
    }

    @Test func namedRoots() async throws {
        try await withStore { store, _, _ in
            let session = store.session()
            let songs = (0..<5).map { Song(id: "s\($0)", title: "T\($0)", artist: "A", year: $0) }
            for s in songs { session.insert(s) }
            let playlist = Playlist(id: "p1", name: "Favorites")
            session.insert(playlist)
            session.setRoot("favorites", to: playlist)
            session.setRoot("top", to: [songs[3], songs[1], songs[4]])
            try await session.save()

            let fresh = store.session()
            #expect(try await fresh.root("favorites", as: Playlist.self)?.name == "Favorites")
            #expect(try await fresh.rootObjects("top", as: Song.self).map(\.id) == ["s3", "s1", "s4"])
            #expect(try await fresh.root("missing", as: Song.self) == nil)
            await #expect(throws: CairnStoreError.self) { try await fresh.root("favorites", as: Song.self) }
            fresh.removeRoot("top")
            try await fresh.save()
            #expect(try await store.session().rootObjects("top", as: Song.self).isEmpty)
        }
    }
}
