import RESP

/// GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUS_RO, GEORADIUSBYMEMBER and
/// GEORADIUSBYMEMBER_RO: one parser and one search, as Redis's `georadiusGeneric`.
/// https://redis.io/docs/latest/commands/geosearch/
///
/// A search walks the score ranges of the shape's nine cells (`GeoShape.cells`) in Redis's
/// order, keeps the points inside the shape, sorts them by distance when asked (stably, as
/// glibc's qsort does), and answers or stores the first COUNT. Arguments are checked in
/// Redis's order, member lookups included, so each malformed request gets Redis's error.
enum GeoSearch {
    /// What differs between the six commands.
    struct Form {
        enum Centre {
            /// GEORADIUS: `longitude latitude radius unit` at 2...5.
            case coordinates
            /// GEORADIUSBYMEMBER: `member radius unit` at 2...4.
            case member
            /// GEOSEARCH, GEOSEARCHSTORE: FROMMEMBER/FROMLONLAT and BYRADIUS/BYBOX options.
            case options
        }
        var centre: Centre
        /// STORE and STOREDIST key are accepted (GEORADIUS, GEORADIUSBYMEMBER).
        var storing = false
        /// GEOSEARCHSTORE: the destination is argument 1, the source 2.
        var searchStore = false

        var sourceAt: Int { searchStore ? 2 : 1 }
    }

    static let all: [Command] = [
        Command("georadius") {
            call, out throws(CommandError) in
            try search(call, &out, Form(centre: .coordinates, storing: true))
        }.measuringMembers().movingKeys(radiusKeys),
        Command("georadius_ro") {
            call, out throws(CommandError) in
            try search(call, &out, Form(centre: .coordinates))
        }.measuringMembers(),
        Command("georadiusbymember") {
            call, out throws(CommandError) in
            try search(call, &out, Form(centre: .member, storing: true))
        }.measuringMembers().movingKeys(radiusKeys),
        Command("georadiusbymember_ro") {
            call, out throws(CommandError) in
            try search(call, &out, Form(centre: .member))
        }.measuringMembers(),
        Command("geosearch") {
            call, out throws(CommandError) in
            try search(call, &out, Form(centre: .options))
        }.measuringMembers(),
        Command("geosearchstore") {
            call, out throws(CommandError) in
            try search(call, &out, Form(centre: .options, searchStore: true))
        }.measuringMembers(),
    ]

    /// The keys of GEORADIUS and GEORADIUSBYMEMBER: the source, then the argument after each
    /// STORE, then after each STOREDIST (from argument 5 on). For a request with at most one of
    /// each, as Redis 7.0's key specs report them (COMMAND GETKEYS, ACL key patterns); with
    /// several, every one, so whichever the parser keeps (the last) is among the keys ACL
    /// patterns and EXEC's locks see (`search` checks).
    @Sendable static func radiusKeys(_ argv: [[UInt8]]) -> [[UInt8]] {
        guard argv.count > 1 else { return [] }
        var store: [[UInt8]] = [], storeDistance: [[UInt8]] = []
        for i in 5..<max(5, argv.count - 1) {
            if argv[i].isKeyword("STORE") { store.append(argv[i + 1]) }
            if argv[i].isKeyword("STOREDIST") { storeDistance.append(argv[i + 1]) }
        }
        return [argv[1]] + store + storeDistance
    }

    /// One point found: its member and score, decoded position and distance in metres.
    struct Point {
        var member: [UInt8]
        var score: Double
        var longitude: Double
        var latitude: Double
        var distance: Double
    }

    enum Order { case none, ascending, descending }

    /// One parsed request: where to search and what to answer or store.
    struct Request {
        var centre: (longitude: Double, latitude: Double) = (0, 0)
        var kind = GeoShape.Kind.radius(0)
        var metresPerUnit = 1.0
        var withDistance = false, withHash = false, withCoordinates = false
        var order = Order.none
        var any = false
        /// COUNT; 0 when not given.
        var count: Int64 = 0
        var storeKey: [UInt8]? = nil
        /// STOREDIST: the stored scores are the distances in the request's unit.
        var storeDistance = false

        var shape: GeoShape { GeoShape(longitude: centre.longitude, latitude: centre.latitude, kind: kind, metresPerUnit: metresPerUnit) }
    }

    /// Runs one search command; a STORE form under the locks of its source and destinations.
    static func search(_ call: Call, _ out: inout RESPWriter, _ form: Form) throws(CommandError) {
        let writes = form.searchStore ? [call[1], call[2]] : form.storing ? radiusKeys(call.argv) : []
        guard writes.count > 1 else {
            try run(call, &out, form, writable: [])
            return
        }
        try call.locked(writes) { () throws(CommandError) in
            try run(call, &out, form, writable: writes)
        }
    }

    /// The keyspace event of a stored result, as Redis names it.
    private static func storeEvent(_ call: Call) -> String {
        call.name == "geosearchstore" ? "geosearchstore" : "georadiusstore"
    }

    /// Parses, searches and answers; `writable` holds the keys locked for a STORE.
    private static func run(_ call: Call, _ out: inout RESPWriter, _ form: Form, writable: [[UInt8]]) throws(CommandError) {
        let source = call[form.sourceAt]
        let meta = try call.collection(source, .zset)
        var request = try parse(call, form, meta, source)
        // Only a key the command table reported is written (see `radiusKeys`).
        if let storeKey = request.storeKey, !writable.contains(storeKey) { throw .syntax }
        guard let meta else {
            if let storeKey = request.storeKey {
                _ = try SortedSetRanges.storeEntries(call, storeKey, [], event: storeEvent(call))
                out.integer(0)
            } else {
                out.arrayHeader(0)
            }
            return
        }
        // COUNT without an order returns the nearest (ANY: the first found).
        if request.count != 0 && request.order == .none && !request.any { request.order = .ascending }
        let results = try matches(call, meta, source, request)
        if let storeKey = request.storeKey {
            let entries = results.map { p in
                SortedEntry(member: p.member, score: request.storeDistance ? p.distance / request.metresPerUnit : p.score)
            }
            out.integer(try SortedSetRanges.storeEntries(call, storeKey, entries, event: storeEvent(call)))
        } else {
            write(results, request, &out)
        }
    }

    /// The request's arguments, checked in Redis's order (the member of FROMMEMBER and
    /// GEORADIUSBYMEMBER is looked up when met), with Redis's errors.
    private static func parse(_ call: Call, _ form: Form, _ meta: CollectionMetadata?, _ source: [UInt8]) throws(CommandError) -> Request {
        var r = Request()
        let firstOption: Int
        switch form.centre {
        case .coordinates:
            r.centre = try GeoCommands.coordinates(call, at: 2)
            (r.kind, r.metresPerUnit) = try radius(call, at: 4)
            firstOption = 6
        case .member:
            // Without the key Redis reads neither the member nor the radius, only the options.
            if let meta {
                r.centre = try position(call, meta, source, call[2])
                (r.kind, r.metresPerUnit) = try radius(call, at: 3)
            }
            firstOption = 5
        case .options:
            firstOption = form.searchStore ? 3 : 2
        }
        if form.searchStore { r.storeKey = call[1] }
        var fromMember = false, fromCoordinates = false, byRadius = false, byBox = false
        let searching = form.centre == .options
        var i = firstOption
        while i < call.count {
            let a = call[i]
            let following = call.count - i - 1
            if a.isKeyword("WITHDIST") {
                r.withDistance = true
            } else if a.isKeyword("WITHHASH") {
                r.withHash = true
            } else if a.isKeyword("WITHCOORD") {
                r.withCoordinates = true
            } else if a.isKeyword("ANY") {
                r.any = true
            } else if a.isKeyword("ASC") {
                r.order = .ascending
            } else if a.isKeyword("DESC") {
                r.order = .descending
            } else if a.isKeyword("COUNT") && following >= 1 {
                r.count = try call.integer(i + 1)
                if r.count <= 0 { throw CommandError("ERR", "COUNT must be > 0") }
                i += 1
            } else if (a.isKeyword("STORE") || a.isKeyword("STOREDIST")) && following >= 1 && form.storing {
                r.storeKey = call[i + 1]
                r.storeDistance = a.isKeyword("STOREDIST")
                i += 1
            } else if a.isKeyword("STOREDIST") && form.searchStore {
                r.storeDistance = true
            } else if a.isKeyword("FROMMEMBER") && following >= 1 && searching && !fromCoordinates {
                // Without the key Redis goes on parsing and answers the empty reply at the end.
                if let meta { r.centre = try position(call, meta, source, call[i + 1]) }
                fromMember = true
                i += 1
            } else if a.isKeyword("FROMLONLAT") && following >= 2 && searching && !fromMember {
                r.centre = try GeoCommands.coordinates(call, at: i + 1)
                fromCoordinates = true
                i += 2
            } else if a.isKeyword("BYRADIUS") && following >= 2 && searching && !byBox {
                (r.kind, r.metresPerUnit) = try radius(call, at: i + 1)
                byRadius = true
                i += 2
            } else if a.isKeyword("BYBOX") && following >= 3 && searching && !byRadius {
                (r.kind, r.metresPerUnit) = try box(call, at: i + 1)
                byBox = true
                i += 3
            } else {
                throw .syntax
            }
            i += 1
        }
        if r.storeKey != nil && (r.withDistance || r.withHash || r.withCoordinates) {
            let what = form.searchStore ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS"
            throw CommandError("ERR", "\(what) is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
        }
        if searching && !(fromMember || fromCoordinates) {
            throw CommandError("ERR", "exactly one of FROMMEMBER or FROMLONLAT can be specified for \(call.text(0))")
        }
        if searching && !(byRadius || byBox) {
            throw CommandError("ERR", "exactly one of BYRADIUS and BYBOX can be specified for \(call.text(0))")
        }
        if r.any && r.count == 0 { throw CommandError("ERR", "the ANY argument requires COUNT argument") }
        return r
    }

    /// The points the request keeps, in the order it answers them: found cell by cell, then
    /// sorted by distance when asked, then the first COUNT.
    private static func matches(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ request: Request) throws(CommandError) -> ArraySlice<Point> {
        let count = request.count
        var points = try find(call, meta, key, request.shape, limit: request.any ? Int(clamping: count) : 0)
        let returned = count == 0 || points.count < count ? points.count : Int(count)
        if request.order != .none {
            // Redis's comparators: by distance only, DESC the negation of ASC.
            let sign = request.order == .ascending ? 1 : -1
            let compare = { (a: Point, b: Point) -> Int in sign * (a.distance > b.distance ? 1 : a.distance == b.distance ? 0 : -1) }
            if returned == points.count {
                // Swift's sort is stable, as glibc's qsort (a merge sort) is under Redis: equal
                // distances stay in the order they were found.
                points.sort { compare($0, $1) < 0 }
            } else {
                PartialSort.sort(&points, keeping: returned, by: compare)
            }
        }
        return points.prefix(returned)
    }

    /// The reply: each member alone, or with the distance (in the request's unit, as Redis
    /// prints it), the score as an integer and the coordinates, in that order.
    private static func write(_ results: ArraySlice<Point>, _ request: Request, _ out: inout RESPWriter) {
        let extras = (request.withDistance ? 1 : 0) + (request.withHash ? 1 : 0) + (request.withCoordinates ? 1 : 0)
        out.arrayHeader(results.count)
        for p in results {
            if extras > 0 { out.arrayHeader(extras + 1) }
            out.bulk(p.member)
            if request.withDistance { out.bulk(GeoCommands.distanceText(p.distance / request.metresPerUnit)) }
            if request.withHash { out.integer(Int64(exactly: p.score.rounded(.towardZero)) ?? 0) }
            if request.withCoordinates {
                out.arrayHeader(2)
                GeoCommands.writeCoordinate(p.longitude, &out)
                GeoCommands.writeCoordinate(p.latitude, &out)
            }
        }
    }

    /// The points of the geo set inside `shape`, cell by cell in Redis's order, each cell's in
    /// score order; with a `limit`, the first that many (COUNT ... ANY).
    static func find(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ shape: GeoShape, limit: Int) throws(CommandError) -> [Point] {
        var points: [Point] = []
        let cells = shape.cells
        var lastWalked: Int? = nil
        for (i, cell) in cells.enumerated() where !cell.isNone {
            // With a huge radius neighbours can be the same cell: walk it once. (Redis compares
            // with the last cell walked, and never with the centre's.)
            if let last = lastWalked, last > 0, cells[last] == cell { continue }
            if limit > 0 && points.count >= limit { break }
            let (lower, upper) = GeoShape.scores(of: cell)
            try SortedSetEntries.scan(call, meta, key, ScoreRange(from: lower, below: upper)) { e in
                let p = GeoHash.position(ofScore: e.score)
                if let d = shape.distance(toLongitude: p.longitude, latitude: p.latitude) {
                    points.append(Point(member: e.member, score: e.score, longitude: p.longitude, latitude: p.latitude, distance: d))
                }
                return !(limit > 0 && points.count >= limit)
            }
            lastWalked = i
        }
        return points
    }

    /// The position of `member` (FROMMEMBER, GEORADIUSBYMEMBER), or Redis's error.
    private static func position(_ call: Call, _ meta: CollectionMetadata, _ key: [UInt8], _ member: [UInt8]) throws(CommandError) -> (longitude: Double, latitude: Double) {
        guard let score = try SortedSetEntries.score(call, meta, key, member) else {
            throw CommandError("ERR", "could not decode requested zset member")
        }
        return GeoHash.position(ofScore: score)
    }

    /// `radius unit` at `i`: a non-negative number and a unit.
    private static func radius(_ call: Call, at i: Int) throws(CommandError) -> (GeoShape.Kind, Double) {
        guard let r = Bytes.double(call[i]) else { throw CommandError("ERR", "need numeric radius") }
        if r < 0 { throw CommandError("ERR", "radius cannot be negative") }
        return (.radius(r), try GeoCommands.unit(call[i + 1]))
    }

    /// `width height unit` at `i`: two non-negative numbers and a unit.
    private static func box(_ call: Call, at i: Int) throws(CommandError) -> (GeoShape.Kind, Double) {
        guard let w = Bytes.double(call[i]) else { throw CommandError("ERR", "need numeric width") }
        guard let h = Bytes.double(call[i + 1]) else { throw CommandError("ERR", "need numeric height") }
        if h < 0 || w < 0 { throw CommandError("ERR", "height or width cannot be negative") }
        return (.box(width: w, height: h), try GeoCommands.unit(call[i + 2]))
    }
}

extension ScoreRange {
    /// The scores `lower <= s < upper` of one geohash cell.
    init(from lower: Double, below upper: Double) {
        min = lower
        max = upper
        minExclusive = false
        maxExclusive = true
    }
}
