/// The cardinality of a HyperLogLog from its register histogram, as Redis 7.0 computes it
/// (`hllCount`): Otmar Ertl's improved estimator, "New cardinality estimation algorithms for
/// HyperLogLog sketches" (arXiv:1702.01284), with the same operations in the same order, so
/// the rounded result equals redis-server's.
enum HyperLogLogEstimator {
    /// 0.5 / ln 2.
    static let alphaInfinity = 0.721347520444481703680
    /// The bits of the hash above the register index (64 - 14).
    static let q = 50

    /// `histogram[v]`: how many registers hold `v` (64 entries).
    static func cardinality(_ histogram: [Int]) -> UInt64 {
        let m = Double(HyperLogLog.registerCount)
        var z = m * tau((m - Double(histogram[q + 1])) / m)
        for j in stride(from: q, through: 1, by: -1) {
            z += Double(histogram[j])
            z *= 0.5
        }
        z += m * sigma(Double(histogram[0]) / m)
        return UInt64((alphaInfinity * m * m / z).rounded(.toNearestOrAwayFromZero))
    }

    static func sigma(_ x: Double) -> Double {
        if x == 1 { return .infinity }
        var x = x
        var y = 1.0
        var z = x
        var previous: Double
        repeat {
            x *= x
            previous = z
            z += x * y
            y += y
        } while previous != z
        return z
    }

    static func tau(_ x: Double) -> Double {
        if x == 0 || x == 1 { return 0 }
        var x = x
        var y = 1.0
        var z = 1 - x
        var previous: Double
        repeat {
            x = x.squareRoot()
            previous = z
            y *= 0.5
            // Redis writes pow(1 - x, 2), which compilers and libm evaluate exactly as this.
            z -= (1 - x) * (1 - x) * y
        } while previous != z
        return z / 3
    }
}
