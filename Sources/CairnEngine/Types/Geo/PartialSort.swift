/// The partial quicksort Redis sorts a geo search's results with when COUNT keeps fewer than
/// were found (`pqsort.c`, after NetBSD's qsort): only the partitions that overlap the kept
/// ranks are sorted further. It is not stable, so among points at equal distances which ones
/// are kept, and in what order, is this algorithm's: Cairn follows it step by step to give
/// the same answer (a stable sort would keep other members at a tie).
enum PartialSort {
    /// Sorts `items` enough that ranks `0..<kept` hold the smallest (by `compare`: negative,
    /// zero or positive) in order, exactly as Redis's `pqsort(items, n, size, compare, 0, kept - 1)`.
    static func sort<T>(_ items: inout [T], keeping kept: Int, by compare: (T, T) -> Int) {
        guard kept > 0 else { return }
        sort(&items, from: 0, count: items.count, ranks: 0...(kept - 1), compare)
    }

    private static func sort<T>(_ a: inout [T], from start: Int, count: Int, ranks: ClosedRange<Int>, _ compare: (T, T) -> Int) {
        var base = start
        var n = count
        func median(_ x: Int, _ y: Int, _ z: Int) -> Int {
            compare(a[x], a[y]) < 0
                ? (compare(a[y], a[z]) < 0 ? y : (compare(a[x], a[z]) < 0 ? z : x))
                : (compare(a[y], a[z]) > 0 ? y : (compare(a[x], a[z]) < 0 ? x : z))
        }
        func swapRuns(_ x: Int, _ y: Int, _ length: Int) {
            for i in 0..<max(length, 0) { a.swapAt(x + i, y + i) }
        }
        // Whether elements `from..<from + length` hold any of the kept ranks.
        func overlaps(_ from: Int, _ length: Int) -> Bool {
            let last = from + length - 1
            return !((ranks.lowerBound < from && ranks.upperBound < from) || (ranks.lowerBound > last && ranks.upperBound > last))
        }
        while true {
            if n < 7 {
                // Insertion sort.
                var m = base + 1
                while m < base + n {
                    var l = m
                    while l > base && compare(a[l - 1], a[l]) > 0 {
                        a.swapAt(l, l - 1)
                        l -= 1
                    }
                    m += 1
                }
                return
            }
            var pivot = base + n / 2
            if n > 7 {
                var l = base
                var r = base + n - 1
                if n > 40 {
                    let d = n / 8
                    l = median(l, l + d, l + 2 * d)
                    pivot = median(pivot - d, pivot, pivot + d)
                    r = median(r - 2 * d, r - d, r)
                }
                pivot = median(l, pivot, r)
            }
            a.swapAt(base, pivot)
            // Bentley-McIlroy three-way partition: equal keys gather at both ends first.
            var pa = base + 1, pb = base + 1
            var pc = base + n - 1, pd = base + n - 1
            while true {
                while pb <= pc {
                    let c = compare(a[pb], a[base])
                    if c > 0 { break }
                    if c == 0 {
                        a.swapAt(pa, pb)
                        pa += 1
                    }
                    pb += 1
                }
                while pb <= pc {
                    let c = compare(a[pc], a[base])
                    if c < 0 { break }
                    if c == 0 {
                        a.swapAt(pc, pd)
                        pd -= 1
                    }
                    pc -= 1
                }
                if pb > pc { break }
                a.swapAt(pb, pc)
                pb += 1
                pc -= 1
            }
            let end = base + n
            var r = min(pa - base, pb - pa)
            swapRuns(base, pb - r, r)
            r = min(pd - pc, end - pd - 1)
            swapRuns(pb, end - r, r)
            r = pb - pa
            if r > 1 && overlaps(base, r) { sort(&a, from: base, count: r, ranks: ranks, compare) }
            r = pd - pc
            guard r > 1 else { return }
            // The right part by iteration, as Redis does.
            base = end - r
            n = r
            if !overlaps(base, n) { return }
        }
    }
}
