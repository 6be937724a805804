@testable import CairnEngine
import RESP
import Testing

/// The geo family in-process: the geohash arithmetic against values Redis's documentation
/// prints, the partial sort against its contract, and the commands inside MULTI/EXEC.
/// Reply-for-reply equality with redis-server is Tests/integration/test_geo.py's.
@Suite struct GeoTests {
    @Test func scoresHashesAndDistancesAreRedis() {
        // https://redis.io/docs/latest/commands/geoadd/ and geohash/: Palermo and Catania.
        #expect(GeoHash.score(longitude: 13.361389, latitude: 38.115556) == 3479099956230698)
        #expect(GeoHash.score(longitude: 15.087269, latitude: 37.502669) == 3479447370796909)
        #expect(String(decoding: GeoHash.standardText(ofScore: 3479099956230698), as: UTF8.self) == "sqc8b49rny0")
        #expect(String(decoding: GeoHash.standardText(ofScore: 3479447370796909), as: UTF8.self) == "sqdtr74hyu0")
        let a = GeoHash.position(ofScore: 3479099956230698), b = GeoHash.position(ofScore: 3479447370796909)
        #expect(GeoCommands.distanceText(GeoShape.distance(a.longitude, a.latitude, b.longitude, b.latitude)) == "166274.1516")
        #expect(GeoCommands.distanceText(GeoShape.distance(a.longitude, a.latitude, b.longitude, b.latitude) / 1000) == "166.2742")
        #expect(GeoCommands.distanceText(0) == "0.0000")
        #expect(GeoHash.score(longitude: 180.0001, latitude: 0) == nil)
        #expect(GeoHash.score(longitude: 0, latitude: 85.05112879) == nil)
        for v in [0, 1, 0xFFFF_FFFF, 0x1234_5678] as [UInt32] {
            #expect(GeoHash.deinterleave(GeoHash.interleave(v, ~v)) == UInt64(v) | UInt64(~v) << 32)
        }
    }

    @Test func partialSortKeepsTheSmallestInOrder() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let n = Int.random(in: 0...120, using: &rng)
            let values = (0..<n).map { _ in Int.random(in: 0...20, using: &rng) }
            let kept = Int.random(in: 1...max(1, n), using: &rng)
            var sorted = values
            PartialSort.sort(&sorted, keeping: kept, by: { $0 < $1 ? -1 : $0 == $1 ? 0 : 1 })
            #expect(sorted.sorted() == values.sorted(), "a permutation")
            #expect(Array(sorted.prefix(kept)) == Array(values.sorted().prefix(kept)))
        }
    }

    @Test func commandsInsideMultiExec() throws {
        let h = try EngineHarness()
        #expect(h.run("MULTI") == .ok)
        h.run("GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
        h.run("GEODIST", "g", "Palermo", "Catania", "km")
        h.run("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC", "WITHDIST")
        h.run("GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "Palermo", "BYBOX", "400", "400", "km", "DESC", "STOREDIST")
        h.run("ZRANGE", "d", "0", "-1")
        #expect(h.run("EXEC") == .array([
            .integer(2),
            .bulk("166.2742"),
            .array([.array([.bulk("Catania"), .bulk("56.4413")]), .array([.bulk("Palermo"), .bulk("190.4424")])]),
            .integer(2),
            .array([.bulk("Palermo"), .bulk("Catania")]),
        ]))
        #expect(h.run("GEOADD", "g", "181", "0", "x") == .error("ERR invalid longitude,latitude pair 181.000000,0.000000"))
        #expect(h.run("GEOSEARCH", "g", "FROMMEMBER", "nope", "BYRADIUS", "1", "km") == .error("ERR could not decode requested zset member"))
    }
}
