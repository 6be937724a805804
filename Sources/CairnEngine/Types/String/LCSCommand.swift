import RESP

/// LCS, as Redis 7.0's `lcsCommand`: the longest common subsequence of two strings by the
/// dynamic-programming table, walked back from its end as Redis walks it, so the subsequence
/// and the matched ranges (IDX) are Redis's, in Redis's order (from the strings' ends).
/// https://redis.io/docs/latest/commands/lcs/
///
/// Where Cairn differs: none in the replies. The table takes `(len1 + 1) * (len2 + 1) * 4` bytes
/// for the time the command runs, refused past `proto-max-bulk-len` as in Redis; a big table
/// is filled off the connection's worker, as a big collection command runs (`LongWork`).
enum LCSCommand {
    static let all: [Command] = [
        Command("lcs") {
            call, out throws(CommandError) in
            try lcs(call, &out)
        }.measuringWork { _, call throws(CommandError) in
            // A table cell costs about a nanosecond, a member a few hundred.
            let (a, b) = (try length(call, call[1]), try length(call, call[2]))
            return a.multipliedReportingOverflow(by: b).overflow ? .max : a * b / 512
        },
    ]

    /// The length of the string at `key` (0 for a missing key or another type).
    static func length(_ call: Call, _ key: [UInt8]) throws(CommandError) -> UInt64 {
        try call.withStored(key) { (type: KeyType?, payload: UnsafeRawBufferPointer?, _) -> UInt64 in
            type == .string ? UInt64(payload?.count ?? 0) : 0
        }
    }

    /// One run of matching bytes: its ranges in the first and second string (inclusive).
    struct Match {
        var a: ClosedRange<Int>
        var b: ClosedRange<Int>
    }

    static func lcs(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        // Redis reads both keys before it looks at the options.
        func value(_ key: [UInt8]) throws(CommandError) -> [UInt8] {
            try call.withStored(key) { (type: KeyType?, payload: UnsafeRawBufferPointer?, _) throws(CommandError) -> [UInt8] in
                guard let type else { return [] }
                guard type == .string, let payload else { throw CommandError("ERR", "The specified keys must contain string values") }
                return Array(payload)
            }
        }
        let a = try value(call[1])
        let b = try value(call[2])
        var getLength = false, getIndexes = false, withMatchLength = false
        var minMatchLength: Int64 = 0
        var j = 3
        while j < call.count {
            let word = call[j]
            if word.isKeyword("IDX") {
                getIndexes = true
            } else if word.isKeyword("LEN") {
                getLength = true
            } else if word.isKeyword("WITHMATCHLEN") {
                withMatchLength = true
            } else if word.isKeyword("MINMATCHLEN") && j + 1 < call.count {
                minMatchLength = max(try call.integer(j + 1), 0)
                j += 1
            } else {
                throw .syntax
            }
            j += 1
        }
        if getIndexes && getLength { throw CommandError("ERR", "If you want both the length and indexes, please just use IDX.") }
        guard a.count < Int(UInt32.max) - 1, b.count < Int(UInt32.max) - 1 else { throw CommandError("ERR", "String too long for LCS") }
        let (rows, columns) = (a.count + 1, b.count + 1)
        let (cells, overflow) = rows.multipliedReportingOverflow(by: columns)
        guard !overflow, cells <= call.engine.configuration.protoMaxBulkLen / 4 else {
            throw CommandError("ERR", "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
        }

        // table[i * columns + j]: the LCS length of a[..<i] and b[..<j].
        var table = [UInt32](repeating: 0, count: cells)
        for i in 1..<rows {
            for k in 1..<columns {
                table[i * columns + k] = a[i - 1] == b[k - 1]
                    ? table[(i - 1) * columns + k - 1] + 1
                    : max(table[(i - 1) * columns + k], table[i * columns + k - 1])
            }
        }
        let length = Int(table[cells - 1])
        if getLength {
            out.integer(length)
            return
        }

        // Back from the end: a match steps diagonally (extending the current run while it is
        // contiguous), otherwise toward the larger neighbour (the upper one only when larger).
        var result = [UInt8](repeating: 0, count: length)
        var matches: [Match] = []
        var run: (a: Int, aEnd: Int, b: Int, bEnd: Int)? = nil
        var (i, k, left) = (a.count, b.count, length)
        while i > 0 && k > 0 {
            var emit = false
            if a[i - 1] == b[k - 1] {
                result[left - 1] = a[i - 1]
                if let r = run {
                    if r.a == i && r.b == k { run = (i - 1, r.aEnd, k - 1, r.bEnd) } else { emit = true }
                } else {
                    run = (i - 1, i - 1, k - 1, k - 1)
                }
                if let r = run, r.a == 0 || r.b == 0 { emit = true }
                left -= 1
                i -= 1
                k -= 1
            } else {
                if table[(i - 1) * columns + k] > table[i * columns + k - 1] { i -= 1 } else { k -= 1 }
                if run != nil { emit = true }
            }
            if emit, let r = run {
                if minMatchLength == 0 || Int64(r.aEnd - r.a + 1) >= minMatchLength {
                    matches.append(Match(a: r.a...r.aEnd, b: r.b...r.bEnd))
                }
                run = nil
            }
        }
        guard getIndexes else {
            out.bulk(result)
            return
        }
        out.mapHeader(2)
        out.bulk("matches")
        out.arrayHeader(matches.count)
        for m in matches {
            out.arrayHeader(withMatchLength ? 3 : 2)
            for range in [m.a, m.b] {
                out.arrayHeader(2)
                out.integer(range.lowerBound)
                out.integer(range.upperBound)
            }
            if withMatchLength { out.integer(m.a.count) }
        }
        out.bulk("len")
        out.integer(length)
    }
}
