import Foundation
import RESP

/// The geo family: https://redis.io/docs/latest/commands/?group=geo
///
/// A geo set is a sorted set whose scores are 52-bit geohashes (`GeoHash`): GEOADD writes
/// members through ZADD's own path, the readers decode scores, and the searches (`GeoSearch`)
/// walk the score ranges of nine geohash cells as Redis does. So ZSCORE, ZRANGE, DUMP and
/// every other sorted-set command see the same key, and replies equal redis-server 7.0's.
enum GeoCommands {
    static let all: [Command] = Command.batchingWrites([
        Command("geoadd", handler: add),
    ]) + [
        Command("geodist", handler: distance),
        Command("geohash") {
            call, out throws(CommandError) in
            let scores = try scores(call)
            out.arrayHeader(scores.count)
            for score in scores {
                if let score { out.bulk(GeoHash.standardText(ofScore: score)) } else { out.null() }
            }
        },
        Command("geopos") {
            call, out throws(CommandError) in
            let scores = try scores(call)
            out.arrayHeader(scores.count)
            for score in scores {
                guard let score else { out.nullArray(); continue }
                let p = GeoHash.position(ofScore: score)
                out.arrayHeader(2)
                writeCoordinate(p.longitude, &out)
                writeCoordinate(p.latitude, &out)
            }
        },
    ] + GeoSearch.all

    /// GEOADD: https://redis.io/docs/latest/commands/geoadd/ — the options and triples are
    /// checked here, then ZADD's `update` adds the members with their geohash scores.
    static func add(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var o = SortedSetCommands.AddOptions()
        var i = 2
        while i < call.count {
            if call[i].isKeyword("NX") { o.onlyNew = true }
            else if call[i].isKeyword("XX") { o.onlyExisting = true }
            else if call[i].isKeyword("CH") { o.changed = true }
            else { break }
            i += 1
        }
        // No triple at all is ZADD's syntax error in Redis (GEOADD hands it the empty list).
        guard (call.count - i) % 3 == 0, !(o.onlyNew && o.onlyExisting), call.count > i else { throw .syntax }
        var pairs: [([UInt8], Double)] = []
        for j in stride(from: i, to: call.count, by: 3) {
            let p = try coordinates(call, at: j)
            // A valid pair always encodes.
            guard let score = GeoHash.score(longitude: p.longitude, latitude: p.latitude) else { throw .syntax }
            pairs.append((call[j + 2], score))
        }
        let result = Set(pairs.map { ByteKey($0.0) }).count == pairs.count
            ? try SortedSetCommands.update(call, pairs, o)
            : try addInOrder(call, pairs, o)
        out.integer(o.changed ? result.added + result.updated : result.added)
    }

    /// GEOADD naming a member twice: Redis applies the triples one by one (with NX the first
    /// position stays; CH counts the second as a change), where ZADD's `update` keeps each
    /// member's last score. The triples are applied here in order, against the stored scores,
    /// and the final scores written through `update`.
    private static func addInOrder(_ call: Call, _ pairs: [([UInt8], Double)], _ o: SortedSetCommands.AddOptions) throws(CommandError) -> (added: Int, updated: Int, score: Double?) {
        try call.locked(call[1]) { () throws(CommandError) -> (added: Int, updated: Int, score: Double?) in
            var members: [[UInt8]] = []
            var seen: Set<ByteKey> = []
            for (m, _) in pairs where seen.insert(ByteKey(m)).inserted { members.append(m) }
            let stored = try call.collection(call[1], .zset).map { (meta: CollectionMetadata) throws(CommandError) -> [Double?] in
                try SortedSetEntries.scores(call, meta, call[1], members)
            } ?? Array(repeating: nil, count: members.count)
            var current: [ByteKey: Double] = [:]
            for (m, score) in zip(members, stored) { current[ByteKey(m)] = score }
            var added = 0, updated = 0
            for (m, score) in pairs {
                if let old = current[ByteKey(m)] {
                    if o.onlyNew || score == old { continue }
                    updated += 1
                } else {
                    if o.onlyExisting { continue }
                    added += 1
                }
                current[ByteKey(m)] = score
            }
            let changed = zip(members, stored).compactMap { (m, old) -> ([UInt8], Double)? in
                guard let score = current[ByteKey(m)], score != old else { return nil }
                return (m, score)
            }
            if !changed.isEmpty { _ = try SortedSetCommands.update(call, changed, SortedSetCommands.AddOptions()) }
            return (added, updated, nil)
        }
    }

    /// GEODIST: https://redis.io/docs/latest/commands/geodist/ — nil when the key or either
    /// member is missing. The unit is checked before the key, as in Redis.
    static func distance(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        var metresPerUnit = 1.0
        if call.count == 5 {
            metresPerUnit = try unit(call[4])
        } else if call.count > 5 {
            throw .syntax
        }
        guard let meta = try call.collection(call[1], .zset) else { out.null(); return }
        let found = try SortedSetEntries.scores(call, meta, call[1], [call[2], call[3]])
        guard let first = found[0], let second = found[1] else { out.null(); return }
        let a = GeoHash.position(ofScore: first), b = GeoHash.position(ofScore: second)
        out.bulk(distanceText(GeoShape.distance(a.longitude, a.latitude, b.longitude, b.latitude) / metresPerUnit))
    }

    /// The scores of members `2...` of GEOHASH and GEOPOS (nil for missing ones, all nil for a
    /// missing key); WRONGTYPE for another type.
    private static func scores(_ call: Call) throws(CommandError) -> [Double?] {
        let members = Array(call.argv[2...])
        guard let meta = try call.collection(call[1], .zset) else { return Array(repeating: nil, count: members.count) }
        return try SortedSetEntries.scores(call, meta, call[1], members)
    }

    // MARK: Arguments and replies shared with the searches

    /// A `longitude latitude` pair at arguments `i` and `i + 1`, with Redis's errors: `value is
    /// not a valid float`, then `invalid longitude,latitude pair` outside the Mercator range.
    static func coordinates(_ call: Call, at i: Int) throws(CommandError) -> (longitude: Double, latitude: Double) {
        guard let longitude = Bytes.double(call[i]), let latitude = Bytes.double(call[i + 1]) else { throw .notFloat }
        guard GeoHash.isValid(longitude: longitude, latitude: latitude) else {
            throw CommandError("ERR", String(format: "invalid longitude,latitude pair %f,%f", longitude, latitude))
        }
        return (longitude, latitude)
    }

    /// Metres per unit: M, KM, FT or MI in any case.
    static func unit(_ argument: [UInt8]) throws(CommandError) -> Double {
        if argument.isKeyword("M") { return 1 }
        if argument.isKeyword("KM") { return 1000 }
        if argument.isKeyword("FT") { return 0.3048 }
        if argument.isKeyword("MI") { return 1609.34 }
        throw CommandError("ERR", "unsupported unit provided. please use M, KM, FT, MI")
    }

    /// A distance as Redis prints it: rounded half-to-even to 4 decimals (`fixedpoint_d2string`),
    /// always a bulk string, RESP3 too.
    static func distanceText(_ d: Double) -> String {
        let scaled = (d * 10000).rounded(.toNearestOrEven)
        guard scaled.magnitude < 9.2e18 else { return String(format: "%.4f", d) }
        let n = Int64(scaled)
        let whole = n.magnitude / 10000, fraction = String(n.magnitude % 10000)
        return (n < 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: 4 - fraction.count) + fraction
    }

    /// A coordinate as Redis prints it (`addReplyHumanLongDouble`): 17 decimals without the
    /// trailing zeros, a bulk string in RESP2 and a double in RESP3.
    static func writeCoordinate(_ d: Double, _ out: inout RESPWriter) {
        var text = String(format: "%.17f", d)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        if text == "-0" { text = "0" }
        if out.version == .v3 { out.simpleDouble(text) } else { out.bulk(text) }
    }
}
