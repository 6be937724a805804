import CairnClient
@testable import CairnStore
import CairnTestSupport
import Foundation
import Testing

/// Index queries and full-text search compared with a brute-force scan of the same objects, on
/// seeded random data that was inserted, updated and deleted through the store.
@Suite struct QueryAndSearchTests {
    static let artists = ["Bowie", "Björk", "Can", "Eno", "Nico", "b\0wie", ""]
    static let words = [
        "rock", "rocket", "rocking", "roll", "love", "lovely", "blue", "night", "été", "éte", "東京", "night2", "a", "ab", "abc",
    ]

    func randomSong(_ i: Int, _ rng: inout SeededGenerator) -> Song {
        let title = (0..<Int.random(in: 1...4, using: &rng)).map { _ in Self.words.randomElement(using: &rng)! }
            .joined(separator: [" ", ", ", "-", "'"].randomElement(using: &rng)!)
        return Song(
            id: String(format: "s%04d", i), title: title.capitalized, artist: Self.artists.randomElement(using: &rng)!,
            year: Int.random(in: 1960...1975, using: &rng),
            rating: [-2.5, -0.0, 0.0, 0.5, 1, 3.75, 1e9, -1e9].randomElement(using: &rng)! + Double(Int.random(in: 0...2, using: &rng)),
            explicit: Bool.random(using: &rng),
            released: Bool.random(using: &rng) ? nil : Date(timeIntervalSince1970: Double(Int.random(in: -5...5, using: &rng)) * 1e8))
    }

    /// Builds a random population: inserts, then updates and deletes in later sessions, so the
    /// index is maintained through changes and not only on insert.
    func populate(_ store: CairnStore, seed: UInt64) async throws -> [String: Song] {
        var rng = SeededGenerator(seed: seed)
        var model: [String: Song] = [:]
        let s1 = store.session()
        for i in 0..<240 {
            let song = randomSong(i, &rng)
            s1.insert(song)
            model[song.id] = song
        }
        try await s1.save()
        let s2 = store.session()
        for id in model.keys.sorted().shuffled(using: &rng).prefix(80) {
            var song = try await s2.fetch(Song.self, id: id)!
            let other = randomSong(0, &rng)
            song.artist = other.artist
            song.year = other.year
            song.title = other.title
            song.rating = other.rating
            song.released = other.released
            s2.update(song)
            model[id] = song
        }
        for id in model.keys.sorted().shuffled(using: &rng).prefix(40) {
            s2.delete(Song.self, id: id)
            model[id] = nil
        }
        try await s2.save()
        return model
    }

    func byId(_ a: Song, _ b: Song) -> Bool { a.id.keyBytes.lexicographicallyPrecedes(b.id.keyBytes) }

    @Test func indexQueriesMatchABruteForceScan() async throws {
        try await withStore { store, _, _ in
            let model = try await populate(store, seed: 42)
            let all = Array(model.values)
            var rng = SeededGenerator(seed: 7)
            let session = store.session()
            #expect(try await store.count(Song.self) == model.count)

            for _ in 0..<25 {
                let artist = Self.artists.randomElement(using: &rng)!
                let a = Int.random(in: 1958...1977, using: &rng)
                let b = Int.random(in: a...1978, using: &rng)
                let limit = Int.random(in: 1...15, using: &rng)

                // Equality on the first field of a compound index: ordered by year, then id.
                let eq = all.filter { $0.artist == artist }.sorted { ($0.year, $0.id) < ($1.year, $1.id) }
                #expect(try await session.fetch(Song.where(\.artist == artist)).map(\.id) == eq.map(\.id))
                #expect(try await session.count(Song.where(\.artist == artist)) == eq.count)

                // Equality plus a half-open range, both orders, with a limit.
                let ranged = eq.filter { (a..<b).contains($0.year) }
                let q = Song.where(\.artist == artist).where(\.year, in: a..<b)
                #expect(try await session.fetch(q).map(\.id) == ranged.map(\.id))
                #expect(try await session.fetch(q.descending()).map(\.id) == ranged.reversed().map(\.id))
                #expect(try await session.fetch(q.limit(limit)).map(\.id) == ranged.prefix(limit).map(\.id))

                // A closed range and open-ended bounds on a single-field index.
                let years = all.sorted { ($0.year, $0.id) < ($1.year, $1.id) }
                #expect(try await session.fetch(Song.where(\.year, in: a...b)).map(\.id) == years.filter { (a...b).contains($0.year) }.map(\.id))
                #expect(try await session.fetch(Song.where(\.year > a)).map(\.id) == years.filter { $0.year > a }.map(\.id))
                #expect(
                    try await session.fetch(Song.where(\.year <= a).descending().limit(limit)).map(\.id)
                        == years.filter { $0.year <= a }.reversed().prefix(limit).map(\.id))

                // Doubles with negatives and ±0; a Bool-and-Double compound; an optional Date.
                let r = [-1e9, -2.5, -0.0, 0.0, 1.0, 3.75].randomElement(using: &rng)!
                let ratings = all.sorted { ($0.rating, $0.id) < ($1.rating, $1.id) }
                #expect(try await session.fetch(Song.where(\.rating >= r)).map(\.id) == ratings.filter { $0.rating >= r }.map(\.id))
                #expect(try await session.fetch(Song.where(\.rating == r)).map(\.id) == ratings.filter { $0.rating == r }.map(\.id))
                let flag = Bool.random(using: &rng)
                #expect(
                    try await session.fetch(Song.where(\.explicit == flag).where(\.rating < r)).map(\.id)
                        == ratings.filter { $0.explicit == flag && $0.rating < r }.map(\.id))
                let when = Date(timeIntervalSince1970: Double(Int.random(in: -5...5, using: &rng)) * 1e8)
                #expect(
                    try await session.count(Song.where(\.released <= Optional(when)))
                        == all.filter { $0.released == nil || $0.released! <= when }.count)
            }
            // Sorted by an indexed field with no condition.
            #expect(
                try await session.fetch(Song.sorted(by: \.year).limit(10)).map(\.id)
                    == all.sorted { ($0.year, $0.id) < ($1.year, $1.id) }.prefix(10).map(\.id))
            // No index starts with title.
            await #expect(throws: CairnStoreError.self) { try await session.fetch(Song.where(\.title == "x")) }
        }
    }

    @Test func fullTextSearchMatchesABruteForceScan() async throws {
        try await withStore { store, _, _ in
            let model = try await populate(store, seed: 99)
            let all = Array(model.values).sorted(by: byId)
            var rng = SeededGenerator(seed: 5)
            let session = store.session()
            var queries = ["rock", "rock*", "ROCK* love", "été", "ÉTÉ", "東京", "a*", "ab* night*", "nothing", "roll rocket blue", "night2"]
            for _ in 0..<20 {
                let n = Int.random(in: 1...3, using: &rng)
                queries.append(
                    (0..<n).map { _ in
                        let w = Self.words.randomElement(using: &rng)!
                        return Bool.random(using: &rng) ? String(w.prefix(Int.random(in: 1...max(1, w.count), using: &rng))) + "*" : w
                    }.joined(separator: " "))
            }
            for q in queries {
                let parsed = TextQuery(q)
                let expected = all.filter { parsed.matches(Tokenizer.tokens($0.title)) }.map(\.id)
                #expect(try await session.search(Song.self, q).map(\.id) == expected, "\(q)")
                #expect(try await session.searchCount(Song.self, q) == expected.count, "\(q)")
            }
            #expect(try await session.search(Song.self, "rock*", limit: 3).count == min(3, all.filter { TextQuery("rock*").matches(Tokenizer.tokens($0.title)) }.count))
            #expect(try await session.search(Song.self, "   ").isEmpty)
        }
    }
}
