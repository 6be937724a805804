// The classic object-store benchmarks (BNRPersistence's playlists and songs) against a running
// cairnd, through CairnStore. scripts/bench-store builds it in release mode, starts a fresh
// cairnd and runs it; usage: cairn-store-bench PORT [--songs N] [--batch N].
import CairnClient
import CairnStore
import Foundation

struct BenchSong: StoredObject {
    var id: Int
    var title: String
    var artist: String
    var year: Int
    static var typeName: String { "Song" }
    static let indexes: [Index<BenchSong>] = [Index("artist", \.artist)]
    static let textFields: [TextField<BenchSong>] = [TextField(\.title)]
}

struct BenchPlaylist: StoredObject {
    var id: Int
    var name: String
    var songs: ToMany<BenchSong>
    static var typeName: String { "Playlist" }
    static let relationships: [Relationship<BenchPlaylist>] = [.toMany("songs", \.songs)]
}

/// A vocabulary of 2,000 pronounceable words; each title has "song", its number and two of them,
/// so a word is in about one title in a thousand.
let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "be", "da", "fu", "gi", "ho", "ju", "ko", "la", "ma", "no", "pi", "re"]
let vocabulary: [String] = (0..<2000).map { i in syllables[i % 20] + syllables[(i / 20) % 20] + syllables[(i / 400) % 20] }

func title(_ n: Int) -> String {
    var g = SplitMix(n)
    return "Song \(n) \(vocabulary[Int(g.next() % 2000)]) \(vocabulary[Int(g.next() % 2000)])"
}

struct SplitMix {
    var state: UInt64
    init(_ seed: Int) { state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func song(_ n: Int) -> BenchSong {
    BenchSong(id: n, title: title(n), artist: "Artist \(n % 1000)", year: 1950 + n % 70)
}

func measure<T>(_ label: String, count: Int? = nil, _ body: () async throws -> T) async rethrows -> T {
    let start = ContinuousClock.now
    let result = try await body()
    let seconds = Double((ContinuousClock.now - start).components.attoseconds) / 1e18 + Double((ContinuousClock.now - start).components.seconds)
    var line = label.padding(toLength: 62, withPad: " ", startingAt: 0) + String(format: "%8.3f s", seconds)
    if let count { line += String(format: "  %10.0f objects/s", Double(count) / seconds) }
    print(line)
    return result
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let portText = arguments.first, let port = Int(portText) else {
    print("usage: cairn-store-bench PORT [--songs N] [--batch N]")
    exit(2)
}
var totalSongs = 1_000_000
var batch = 10_000
var i = 1
while i + 1 < arguments.count {
    switch arguments[i] {
    case "--songs": totalSongs = Int(arguments[i + 1]) ?? totalSongs
    case "--batch": batch = Int(arguments[i + 1]) ?? batch
    default: break
    }
    i += 2
}

var config = CairnClientConfiguration(port: port)
config.requestDeadline = .seconds(300)
let client = CairnClient(configuration: config)
defer { client.close() }
let store = try await CairnStore.open(client: client, models: [BenchSong.self, BenchPlaylist.self])
print("CairnStore benchmark: cairnd on 127.0.0.1:\(port), \(ProcessInfo.processInfo.activeProcessorCount) cores")

// 1. 1,000 playlists and 100,000 songs (100 per playlist), saved in one unit of work.
if arguments.contains("--fetch-only") {
    // Profiling aid: the fetch of whatever the server holds, five times.
    for _ in 0..<5 {
        try await measure("fetch all songs", count: try await store.count(BenchSong.self)) {
            for try await s in store.all(BenchSong.self) where s.id < 0 { print(s) }
        }
    }
    exit(0)
}
try await measure("create 1,000 playlists + 100,000 songs, one save", count: 101_000) {
    let session = store.session()
    for p in 0..<1000 {
        var songs: [BenchSong] = []
        for k in 0..<100 {
            let s = song(p * 100 + k)
            session.insert(s)
            songs.append(s)
        }
        session.insert(BenchPlaylist(id: p, name: "Playlist \(p)", songs: ToMany(songs)))
    }
    try await session.save()
}

// 2. Every playlist and the title of its first song.
try await measure("read 1,000 playlists + first song title (one MGET)", count: 1000) {
    let session = store.session()
    var playlists: [BenchPlaylist] = []
    for try await p in session.all(BenchPlaylist.self) { playlists.append(p) }
    let firsts = try await session.fetch(BenchSong.self, ids: playlists.compactMap { $0.songs.ids.first })
    precondition(firsts.count == 1000 && firsts.allSatisfy { $0 != nil }, "missing first songs")
}
try await measure("read 1,000 playlists + first song title (a GET each)", count: 1000) {
    let session = store.session()
    var titles = 0
    for try await p in session.all(BenchPlaylist.self) {
        if let first = try await session.objects(p.songs, in: 0..<1).first, !first.title.isEmpty { titles += 1 }
    }
    precondition(titles == 1000, "missing first songs")
}

// 3. 1,000,000 more songs, saved in units of `batch`.
let base = 100_000
try await measure("insert \(totalSongs) songs, saves of \(batch)", count: totalSongs) {
    var n = 0
    while n < totalSongs {
        let session = store.session()
        for k in n..<min(n + batch, totalSongs) { session.insert(song(base + k)) }
        try await session.save()
        n += batch
    }
}
let total = try await store.count(BenchSong.self)
print("songs stored: \(total)")

// 4. Fetch every song.
try await measure("fetch all \(total) songs (store.all, pages of 1,000)", count: total) {
    var n = 0
    for try await s in store.all(BenchSong.self) where s.id >= 0 { n += 1 }
    precondition(n == total, "fetched \(n) of \(total)")
}

// The same scan without decoding: what the network and the server take.
try await measure("  (scan of the same bodies without decoding)", count: total) {
    let family = client.columnFamily("store.obj.Song")
    var low = RangeBound.unbounded
    var n = 0
    while true {
        let page = try await family.range(low, .unbounded, limit: 1000)
        n += page.count
        guard page.count == 1000, let last = page.last else { break }
        low = .exclusive(last.key)
    }
    precondition(n == total, "scanned \(n) of \(total)")
}

// 5. Full-text search over the titles.
let word1 = vocabulary[17]
let word2 = vocabulary[1234]
let session = store.session()
for (label, query) in [
    ("one word '\(word1)'", word1), ("two words AND '\(word1) \(word2)'", "\(word1) \(word2)"),
    ("prefix '\(String(word2.prefix(5)))*'", String(word2.prefix(5)) + "*"), ("number '\(base + 777_777)'", "\(base + 777_777)"),
] {
    let found = try await measure("full-text search, \(label)") { try await session.search(BenchSong.self, query) }
    print("    \(found.count) songs")
}
let ids = try await measure("full-text search ids only, one word '\(word1)'") { try await session.searchCount(BenchSong.self, word1) }
print("    \(ids) matches")
