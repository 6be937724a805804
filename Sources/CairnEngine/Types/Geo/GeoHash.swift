import Foundation

/// Redis's geohash: a longitude and latitude as one sorted-set score, their two 26-bit cell
/// numbers interleaved into 52 bits (latitude in the even bits, longitude in the odd ones),
/// over the Web Mercator range (latitudes ±85.05112878, longitudes ±180). The arithmetic
/// follows Redis's `geohash.c` step by step, so a score, a decoded position and a distance
/// equal redis-server's to the last bit. https://redis.io/docs/latest/commands/geoadd/
enum GeoHash {
    /// Bits per coordinate in a stored score: 26, so a score is 52 bits, exact in a double.
    static let maxStep: UInt8 = 26
    static let latitudes = (min: -85.05112878, max: 85.05112878)
    static let longitudes = (min: -180.0, max: 180.0)

    /// A geohash cell of `step` bits per coordinate: `bits` holds 2 × `step` interleaved bits.
    /// A cell of step 0 and bits 0 is "no cell" (an area neighbour left out of a search).
    struct Cell: Equatable {
        var bits: UInt64
        var step: UInt8

        static let none = Cell(bits: 0, step: 0)
        var isNone: Bool { bits == 0 && step == 0 }

        /// The cell's bits moved to the top of 52: the lowest score of a point inside it.
        var score52: UInt64 { bits << (52 - UInt64(step) * 2) }
    }

    /// A cell's extent in degrees.
    struct Area {
        var longitude: (min: Double, max: Double)
        var latitude: (min: Double, max: Double)
    }

    /// Whether Redis accepts the pair (GEOADD, FROMLONLAT, GEORADIUS's centre).
    static func isValid(longitude: Double, latitude: Double) -> Bool {
        !(longitude < longitudes.min || longitude > longitudes.max || latitude < latitudes.min || latitude > latitudes.max)
    }

    /// The cell of `step` bits holding the point, over the given ranges (nil outside them).
    /// Redis's `geohashEncode`: the offsets are truncated to integers, as C's conversion does.
    static func encode(longitude: Double, latitude: Double, step: UInt8,
                       longitudeRange: (min: Double, max: Double) = longitudes,
                       latitudeRange: (min: Double, max: Double) = latitudes) -> Cell? {
        guard step > 0, step <= 32, isValid(longitude: longitude, latitude: latitude) else { return nil }
        guard latitude >= latitudeRange.min, latitude <= latitudeRange.max,
              longitude >= longitudeRange.min, longitude <= longitudeRange.max else { return nil }
        var latitudeOffset = (latitude - latitudeRange.min) / (latitudeRange.max - latitudeRange.min)
        var longitudeOffset = (longitude - longitudeRange.min) / (longitudeRange.max - longitudeRange.min)
        latitudeOffset *= Double(UInt64(1) << UInt64(step))
        longitudeOffset *= Double(UInt64(1) << UInt64(step))
        return Cell(bits: interleave(UInt32(latitudeOffset), UInt32(longitudeOffset)), step: step)
    }

    /// The score GEOADD stores for a valid point: its 26-step cell as a 52-bit integer.
    static func score(longitude: Double, latitude: Double) -> Double? {
        encode(longitude: longitude, latitude: latitude, step: maxStep).map { Double($0.score52) }
    }

    /// The extent of `cell` over the given ranges (Redis's `geohashDecode`).
    static func area(of cell: Cell, longitudeRange: (min: Double, max: Double) = longitudes,
                     latitudeRange: (min: Double, max: Double) = latitudes) -> Area {
        let separated = deinterleave(cell.bits)
        let latitudeScale = latitudeRange.max - latitudeRange.min
        let longitudeScale = longitudeRange.max - longitudeRange.min
        let latitudeCell = UInt32(truncatingIfNeeded: separated)
        let longitudeCell = UInt32(truncatingIfNeeded: separated >> 32)
        let cells = Double(UInt64(1) << UInt64(cell.step))
        // `cell + 1` in 32 bits, as C adds to a uint32_t (it wraps only for scores no GEOADD wrote).
        return Area(
            longitude: (longitudeRange.min + (Double(longitudeCell) * 1.0 / cells) * longitudeScale,
                        longitudeRange.min + (Double(longitudeCell &+ 1) * 1.0 / cells) * longitudeScale),
            latitude: (latitudeRange.min + (Double(latitudeCell) * 1.0 / cells) * latitudeScale,
                       latitudeRange.min + (Double(latitudeCell &+ 1) * 1.0 / cells) * latitudeScale))
    }

    /// The position a stored score stands for: the centre of its cell, clamped to the valid
    /// range (Redis's `decodeGeohash`). Any score decodes, as in Redis: a score that no GEOADD
    /// wrote gives whatever position its bits make.
    static func position(ofScore score: Double) -> (longitude: Double, latitude: Double) {
        let a = area(of: Cell(bits: bits(of: score), step: maxStep))
        var longitude = (a.longitude.min + a.longitude.max) / 2
        longitude = min(max(longitude, longitudes.min), longitudes.max)
        var latitude = (a.latitude.min + a.latitude.max) / 2
        latitude = min(max(latitude, latitudes.min), latitudes.max)
        return (longitude, latitude)
    }

    /// C's `(uint64_t)score` as x86-64 compilers emit it, which Redis applies to any stored
    /// score: truncation in range, a negative score's two's complement, and the converter's
    /// overflow results outside (Swift's own conversion would trap there).
    static func bits(of score: Double) -> UInt64 {
        if score.isNaN { return 1 << 63 }
        if score >= 0 && score < 18_446_744_073_709_551_616 { return UInt64(score) }
        if score < 0 && score >= -9_223_372_036_854_775_808 { return UInt64(bitPattern: Int64(score)) }
        return score < 0 ? 1 << 63 : 0
    }

    /// The 11-character standard geohash of a stored score (GEOHASH): its position encoded
    /// again over latitudes ±90, 52 bits in 10 base-32 characters and a final `0`, as Redis
    /// prints it.
    static func standardText(ofScore score: Double) -> [UInt8] {
        let p = position(ofScore: score)
        let bits = encode(longitude: p.longitude, latitude: p.latitude, step: maxStep,
                          longitudeRange: (-180, 180), latitudeRange: (-90, 90))?.bits ?? 0
        let alphabet = Array("0123456789bcdefghjkmnpqrstuvwxyz".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(11)
        for i in 0..<10 {
            text.append(alphabet[Int((bits >> UInt64(52 - (i + 1) * 5)) & 0x1F)])
        }
        text.append(alphabet[0])
        return text
    }

    /// The eight cells around `cell` at its step, wrapping around the edges (Redis's
    /// `geohashNeighbors`): north, south, east, west, north-east, north-west, south-east,
    /// south-west.
    static func neighbours(of cell: Cell) -> [Cell] {
        func moved(_ dx: Int, _ dy: Int) -> Cell { moveY(moveX(cell, dx), dy) }
        return [moved(0, 1), moved(0, -1), moved(1, 0), moved(-1, 0), moved(1, 1), moved(-1, 1), moved(1, -1), moved(-1, -1)]
    }

    /// One cell east (`d` > 0) or west (`d` < 0): the longitude bits (odd) counted up or down.
    private static func moveX(_ cell: Cell, _ d: Int) -> Cell {
        guard d != 0 else { return cell }
        var x = cell.bits & 0xAAAA_AAAA_AAAA_AAAA
        let y = cell.bits & 0x5555_5555_5555_5555
        let zz: UInt64 = 0x5555_5555_5555_5555 >> (64 - UInt64(cell.step) * 2)
        if d > 0 {
            x = x &+ (zz &+ 1)
        } else {
            x = x | zz
            x = x &- (zz &+ 1)
        }
        x &= 0xAAAA_AAAA_AAAA_AAAA >> (64 - UInt64(cell.step) * 2)
        return Cell(bits: x | y, step: cell.step)
    }

    /// One cell north (`d` > 0) or south (`d` < 0): the latitude bits (even) counted up or down.
    private static func moveY(_ cell: Cell, _ d: Int) -> Cell {
        guard d != 0 else { return cell }
        let x = cell.bits & 0xAAAA_AAAA_AAAA_AAAA
        var y = cell.bits & 0x5555_5555_5555_5555
        let zz: UInt64 = 0xAAAA_AAAA_AAAA_AAAA >> (64 - UInt64(cell.step) * 2)
        if d > 0 {
            y = y &+ (zz &+ 1)
        } else {
            y = y | zz
            y = y &- (zz &+ 1)
        }
        y &= 0x5555_5555_5555_5555 >> (64 - UInt64(cell.step) * 2)
        return Cell(bits: x | y, step: cell.step)
    }

    /// `x`'s bits in the even positions, `y`'s in the odd ones.
    static func interleave(_ x: UInt32, _ y: UInt32) -> UInt64 {
        func spread(_ v: UInt32) -> UInt64 {
            var v = UInt64(v)
            v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF
            v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF
            v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F
            v = (v | (v << 2)) & 0x3333_3333_3333_3333
            v = (v | (v << 1)) & 0x5555_5555_5555_5555
            return v
        }
        return spread(x) | (spread(y) << 1)
    }

    /// The inverse of `interleave`: the even bits in the low 32, the odd ones in the high 32.
    static func deinterleave(_ v: UInt64) -> UInt64 {
        func gather(_ v: UInt64) -> UInt64 {
            var v = v & 0x5555_5555_5555_5555
            v = (v | (v >> 1)) & 0x3333_3333_3333_3333
            v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F
            v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF
            v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF
            v = (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF
            return v
        }
        return gather(v) | (gather(v >> 1) << 32)
    }
}
