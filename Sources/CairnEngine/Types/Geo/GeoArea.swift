import Foundation

/// What a geo search looks for: a circle or an axis-aligned box around a centre, with the
/// unit its sizes are given in. Its `cells` are the nine geohash cells (the centre's and its
/// eight neighbours, some left out) whose score ranges a search walks, and `distance(to:)`
/// keeps the points really inside. Redis's `geohash_helper.c`, step by step, so the same
/// points are found in the same order and at the same distances as redis-server's.
struct GeoShape {
    enum Kind {
        case radius(Double)
        case box(width: Double, height: Double)
    }

    var longitude: Double
    var latitude: Double
    var kind: Kind
    /// Metres per unit (M 1, KM 1000, FT 0.3048, MI 1609.34).
    var metresPerUnit: Double

    /// The nine cells to walk, centre first, then north, south, east, west, north-east,
    /// north-west, south-east and south-west; `.none` for those that cannot hold a match
    /// (Redis's `geohashCalculateAreasByShapeWGS84`).
    var cells: [GeoHash.Cell] {
        let bounds = boundingBox
        let radiusMetres: Double
        switch kind {
        case .radius(let r): radiusMetres = r * metresPerUnit
        case .box(let w, let h): radiusMetres = (w / 2 * (w / 2) + h / 2 * (h / 2)).squareRoot() * metresPerUnit
        }
        var step = GeoShape.estimatedStep(radiusMetres: radiusMetres, latitude: latitude)
        var centre = GeoHash.encode(longitude: longitude, latitude: latitude, step: step) ?? .none
        var around = GeoHash.neighbours(of: centre)
        // The estimate can be one step too fine next to a cell's edge: coarser when a
        // neighbour does not reach the bounding box.
        let north = GeoHash.area(of: around[0]), south = GeoHash.area(of: around[1])
        let east = GeoHash.area(of: around[2]), west = GeoHash.area(of: around[3])
        let tooFine = north.latitude.max < bounds.maxLatitude || south.latitude.min > bounds.minLatitude
            || east.longitude.max < bounds.maxLongitude || west.longitude.min > bounds.minLongitude
        if step > 1 && tooFine {
            step -= 1
            centre = GeoHash.encode(longitude: longitude, latitude: latitude, step: step) ?? .none
            around = GeoHash.neighbours(of: centre)
        }
        let area = GeoHash.area(of: centre)
        if step >= 2 {
            // Neighbours on a side the bounding box does not reach.
            if area.latitude.min < bounds.minLatitude { for i in [1, 7, 6] { around[i] = .none } }  // south, south-east, south-west
            if area.latitude.max > bounds.maxLatitude { for i in [0, 4, 5] { around[i] = .none } }  // north, north-east, north-west
            if area.longitude.min < bounds.minLongitude { for i in [3, 7, 5] { around[i] = .none } }  // west, south-west, north-west
            if area.longitude.max > bounds.maxLongitude { for i in [2, 6, 4] { around[i] = .none } }  // east, south-east, north-east
        }
        // Redis's search order: centre, north, south, east, west, NE, NW, SE, SW.
        return [centre] + around
    }

    /// The score range `[lower, upper)` of the points inside `cell`.
    static func scores(of cell: GeoHash.Cell) -> (lower: Double, upper: Double) {
        (Double(cell.score52), Double(GeoHash.Cell(bits: cell.bits &+ 1, step: cell.step).score52))
    }

    /// The distance in metres from the centre to the point when it lies inside the shape, else
    /// nil (Redis's `geoWithinShape`).
    func distance(toLongitude x: Double, latitude y: Double) -> Double? {
        switch kind {
        case .radius(let r):
            let d = GeoShape.distance(longitude, latitude, x, y)
            return d > r * metresPerUnit ? nil : d
        case .box(let w, let h):
            // The latitude test first: it is the cheaper one.
            if GeoShape.latitudeDistance(y, latitude) > h * metresPerUnit / 2 { return nil }
            if GeoShape.distance(x, y, longitude, y) > w * metresPerUnit / 2 { return nil }
            return GeoShape.distance(longitude, latitude, x, y)
        }
    }

    /// The box around the shape in degrees; wider on the side nearer a pole, where a degree
    /// of longitude is shorter (Redis's `geohashBoundingBox`).
    var boundingBox: (minLongitude: Double, minLatitude: Double, maxLongitude: Double, maxLatitude: Double) {
        let height, width: Double
        switch kind {
        case .radius(let r): (height, width) = (metresPerUnit * r, metresPerUnit * r)
        case .box(let w, let h): (height, width) = (metresPerUnit * (h / 2), metresPerUnit * (w / 2))
        }
        let latitudeDelta = GeoShape.degrees(height / GeoShape.earthRadius)
        let longitudeDeltaTop = GeoShape.degrees(width / GeoShape.earthRadius / cos(GeoShape.radians(latitude + latitudeDelta)))
        let longitudeDeltaBottom = GeoShape.degrees(width / GeoShape.earthRadius / cos(GeoShape.radians(latitude - latitudeDelta)))
        let delta = latitude < 0 ? longitudeDeltaBottom : longitudeDeltaTop
        return (longitude - delta, latitude - latitudeDelta, longitude + delta, latitude + latitudeDelta)
    }

    /// The cell step whose cells are about as wide as the search (Redis's
    /// `geohashEstimateStepsByRadius`): one coarser past ±66° and another past ±80°.
    static func estimatedStep(radiusMetres: Double, latitude: Double) -> UInt8 {
        if radiusMetres == 0 { return 26 }
        var range = radiusMetres
        var step = 1
        while range < mercatorMax {
            range *= 2
            step += 1
        }
        step -= 2
        if latitude > 66 || latitude < -66 {
            step -= 1
            if latitude > 80 || latitude < -80 { step -= 1 }
        }
        return UInt8(min(max(step, 1), 26))
    }

    // Redis's constants and formulas (geohash_helper.c), kept in its order of operations.
    static let earthRadius = 6372797.560856
    static let mercatorMax = 20037726.37
    private static let radiansPerDegree = Double.pi / 180.0

    static func radians(_ degrees: Double) -> Double { degrees * radiansPerDegree }
    static func degrees(_ radians: Double) -> Double { radians / radiansPerDegree }

    /// The distance between two latitudes on one meridian.
    static func latitudeDistance(_ lat1: Double, _ lat2: Double) -> Double {
        earthRadius * abs(radians(lat2) - radians(lat1))
    }

    /// The haversine great-circle distance in metres (Redis's `geohashGetDistance`).
    static func distance(_ lon1: Double, _ lat1: Double, _ lon2: Double, _ lat2: Double) -> Double {
        let lon1r = radians(lon1), lon2r = radians(lon2)
        let v = sin((lon2r - lon1r) / 2)
        // Same longitude: only the latitudes differ.
        if v == 0.0 { return latitudeDistance(lat1, lat2) }
        let lat1r = radians(lat1), lat2r = radians(lat2)
        let u = sin((lat2r - lat1r) / 2)
        let a = u * u + cos(lat1r) * cos(lat2r) * v * v
        return 2.0 * earthRadius * asin(a.squareRoot())
    }
}
