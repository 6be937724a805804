#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import RESP

/// SORT and SORT_RO, as Redis 7.0's `sortCommandGeneric`: the elements of a list, set or sorted
/// set, sorted by themselves or by the keys a `BY` pattern names (numerically, or by bytes with
/// ALPHA), optionally a LIMIT window, each replaced by what `GET` patterns name; SORT ... STORE
/// writes the result as a list. https://redis.io/docs/latest/commands/sort/
///
/// Where Cairn differs: a set sorted `BY` a pattern without `*` (no sort) comes in byte order
/// (DESC reversed), which Redis does only under STORE or in a script (elsewhere it answers in
/// its hash table's order); ALPHA compares bytes, as Redis does in the C locale; ties (equal
/// ALPHA weights) keep the source's order, where Redis's partial sort under LIMIT may not. The
/// keys BY and GET name are read as the command runs, without their locks.
enum SortCommand {
    static let all: [Command] = [
        Command("sort") {
            call, out throws(CommandError) in
            try sort(call, &out, readonly: false)
        }.measuringMembers().movingKeys(keys),
        Command("sort_ro") {
            call, out throws(CommandError) in
            try sort(call, &out, readonly: true)
        }.measuringMembers(),
    ]

    /// SORT's keys as Redis's `sortGetKeys` finds them: the source, then the destination of the
    /// last STORE. Options are skipped by their argument counts (LIMIT 2, GET and BY 1).
    @Sendable static func keys(_ argv: [[UInt8]]) -> [[UInt8]] {
        guard argv.count > 1 else { return [] }
        var destination: [UInt8]? = nil
        var i = 2
        while i < argv.count {
            if argv[i].isKeyword("LIMIT") {
                i += 2
            } else if argv[i].isKeyword("GET") || argv[i].isKeyword("BY") {
                i += 1
            } else if argv[i].isKeyword("STORE") && i + 1 < argv.count {
                destination = argv[i + 1]
            }
            i += 1
        }
        return [argv[1]] + (destination.map { [$0] } ?? [])
    }

    /// A request's options.
    struct Options {
        var descending = false
        var alpha = false
        var start: Int64 = 0
        var count: Int64 = -1
        var by: [UInt8]? = nil
        /// BY names a pattern without `*`: nothing to sort by.
        var dontSort = false
        var gets: [[UInt8]] = []
        var store: [UInt8]? = nil

        /// Parses from argument 2 on, in Redis's order of checks.
        init(_ call: Call, readonly: Bool) throws(CommandError) {
            var fullKeyAccess: Bool? = nil
            func mayReachAnyKey() -> Bool {
                if let fullKeyAccess { return fullKeyAccess }
                let full = SortCommand.hasFullKeyAccess(call)
                fullKeyAccess = full
                return full
            }
            var j = 2
            while j < call.count {
                let left = call.count - j - 1
                let word = call[j]
                if word.isKeyword("ASC") {
                    descending = false
                } else if word.isKeyword("DESC") {
                    descending = true
                } else if word.isKeyword("ALPHA") {
                    alpha = true
                } else if word.isKeyword("LIMIT") && left >= 2 {
                    start = try call.integer(j + 1)
                    count = try call.integer(j + 2)
                    j += 2
                } else if !readonly && word.isKeyword("STORE") && left >= 1 {
                    store = call[j + 1]
                    j += 1
                } else if word.isKeyword("BY") && left >= 1 {
                    by = call[j + 1]
                    if SortCommand.star(in: call[j + 1]) == nil {
                        dontSort = true
                    } else {
                        guard mayReachAnyKey() else { throw CommandError("ERR", "BY option of SORT denied due to insufficient ACL permissions.") }
                    }
                    j += 1
                } else if word.isKeyword("GET") && left >= 1 {
                    guard mayReachAnyKey() else { throw CommandError("ERR", "GET option of SORT denied due to insufficient ACL permissions.") }
                    gets.append(call[j + 1])
                    j += 1
                } else {
                    throw .syntax
                }
                j += 1
            }
        }
    }

    /// Whether the session's user may read every key (`~*`, `allkeys` or `%R~*`): BY and GET
    /// patterns reach keys no ACL check sees, so Redis refuses them to anyone else.
    static func hasFullKeyAccess(_ call: Call) -> Bool {
        guard let user = call.engine.guardrails.user(of: call.session) else { return false }
        return user.allKeys || user.keyPatterns.contains { $0.read && $0.pattern == [UInt8(ascii: "*")] }
    }

    /// One element being sorted: numerically by `score`, or by `weight` (what BY found) with ALPHA.
    struct Item {
        var element: [UInt8]
        var score: Double = 0
        var weight: [UInt8]? = nil
    }

    static func sort(_ call: Call, _ out: inout RESPWriter, readonly: Bool) throws(CommandError) {
        let options = try Options(call, readonly: readonly)
        guard let destination = options.store else {
            try reply(try run(call, options), options, call, &out)
            return
        }
        let stored = try call.locked([call[1], destination]) { () throws(CommandError) -> Int in
            let result = try run(call, options)
            return try store(result, options, destination, call)
        }
        out.integer(stored)
    }

    /// The window of sorted elements a request answers with.
    struct Result {
        var items: [Item]
        var window: Range<Int>
    }

    static let notDouble = CommandError("ERR", "One or more scores can't be converted into double")

    /// Loads, weighs and sorts the source; the window LIMIT selects.
    static func run(_ call: Call, _ o: Options) throws(CommandError) -> Result {
        let key = call[1]
        let type = try call.withStored(key) { (t: KeyType?, _, _) -> KeyType? in t }
        if let type, type != .list && type != .set && type != .zset { throw .wrongType }
        let meta = try type.flatMap { (t: KeyType) throws(CommandError) -> CollectionMetadata? in try call.collection(key, t) }
        var dontSort = o.dontSort
        var alpha = o.alpha
        var by = o.by
        // A set has no order of its own: with nothing to sort by, its members in byte order
        // (what Redis does under STORE and in scripts, so a result is the same everywhere).
        if dontSort && type == .set {
            dontSort = false
            alpha = true
            by = nil
        }
        let size = Int64(clamping: meta?.size ?? 0)
        // Redis's LIMIT arithmetic, clamped to the size first so no sum overflows.
        var start = min(max(o.start, 0), size)
        let count = min(max(o.count, -1), size)
        var end = count < 0 ? size - 1 : start + count - 1
        if start >= size {
            start = size - 1
            end = size - 2
        }
        if end >= size { end = size - 1 }

        var items: [Item] = []
        if let meta, let type {
            switch (type, dontSort) {
            case (_, true) where end < start:
                return Result(items: [], window: 0..<0)
            case (.list, true):
                // The window straight from the list, from the far end when DESC.
                let (from, to) = o.descending ? (size - 1 - end, size - 1 - start) : (start, end)
                items = try call.elements(of: key, meta, from: UInt64(from), to: UInt64(to), reverse: o.descending).map { Item(element: $0) }
                return Result(items: items, window: 0..<items.count)
            case (.zset, true):
                items = try SortedSetEntries.byRank(call, meta, key, start, end, reverse: o.descending).map { Item(element: $0.member) }
                return Result(items: items, window: 0..<items.count)
            case (.list, false):
                items = try call.elements(of: key, meta, from: 0, to: meta.size - 1).map { Item(element: $0) }
            default:
                items.reserveCapacity(Int(min(meta.size, 1 << 16)))
                try call.scanMembers(meta, of: key, .member) { sub, _ in
                    items.append(Item(element: sub))
                    return true
                }
            }
        }
        let window = end >= start ? Int(start)..<Int(end + 1) : 0..<0
        guard !dontSort else { return Result(items: items, window: window) }

        var failed = false
        for i in items.indices {
            let weight: [UInt8]
            if let by {
                guard let found = try lookup(call, by, items[i].element) else { continue }
                weight = found
            } else {
                weight = items[i].element
            }
            if alpha {
                if by != nil { items[i].weight = weight }
            } else if let score = parseScore(weight) {
                items[i].score = score
            } else {
                failed = true
            }
        }
        if failed { throw notDouble }
        let byPattern = by != nil
        let descending = o.descending
        let store = o.store != nil
        // Stable (ties keep the source's order, as glibc's merge sort keeps them for Redis).
        let order = items.indices.sorted { a, b in
            var c = compare(items[a], items[b], alpha: alpha, byPattern: byPattern, store: store)
            if descending { c = -c }
            return c != 0 ? c < 0 : a < b
        }
        return Result(items: order.map { items[$0] }, window: window)
    }

    /// Redis's `sortCompare`, before DESC: numeric by score then by element; ALPHA by the BY
    /// weight (a missing one first) or by the element. ALPHA compares as `strcoll` in the C
    /// locale (up to a NUL byte) for a reply, as `memcmp` for STORE, as Redis does.
    static func compare(_ a: Item, _ b: Item, alpha: Bool, byPattern: Bool, store: Bool) -> Int {
        if !alpha {
            if a.score > b.score { return 1 }
            if a.score < b.score { return -1 }
            return Bytes.compare(a.element, b.element)
        }
        func text(_ x: [UInt8]) -> ArraySlice<UInt8> { x[..<(x.firstIndex(of: 0) ?? x.endIndex)] }
        func collate(_ x: [UInt8], _ y: [UInt8]) -> Int {
            if store { return Bytes.compare(x, y) }
            let (p, q) = (text(x), text(y))
            for (c, d) in zip(p, q) where c != d { return c < d ? -1 : 1 }
            return p.count == q.count ? 0 : (p.count < q.count ? -1 : 1)
        }
        guard byPattern else { return collate(a.element, b.element) }
        switch (a.weight, b.weight) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (x?, y?): return collate(x, y)
        }
    }

    /// A weight as Redis reads it: C's `strtod` over the whole value (up to a NUL byte), no
    /// NaN, no overflow or underflow (ERANGE). An empty value is 0.
    static func parseScore(_ bytes: [UInt8]) -> Double? {
        let text = bytes + [0]
        return text.withUnsafeBufferPointer { buffer -> Double? in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: text.count) { start -> Double? in
                var end: UnsafeMutablePointer<CChar>? = nil
                errno = 0
                let value = strtod(start, &end)
                guard let end, end.pointee == 0, errno != ERANGE, !value.isNaN else { return nil }
                return value
            }
        }
    }

    /// The position of the pattern's first `*` (up to a NUL byte, as C's `strchr`), or nil.
    static func star(in pattern: [UInt8]) -> Int? {
        for (i, b) in pattern.enumerated() {
            if b == 0 { return nil }
            if b == UInt8(ascii: "*") { return i }
        }
        return nil
    }

    /// What a BY or GET pattern names for `element`, as Redis's `lookupKeyByPattern`: `#` is
    /// the element itself; otherwise the first `*` is replaced by the element and the key read
    /// as a string, or, when `->field` follows the `*`, that field of the hash at the key. Nil
    /// for a pattern without `*`, a missing key or field, or a key of another type.
    static func lookup(_ call: Call, _ pattern: [UInt8], _ element: [UInt8]) throws(CommandError) -> [UInt8]? {
        if pattern.first == UInt8(ascii: "#") && (pattern.count == 1 || pattern[1] == 0) { return element }
        guard let star = star(in: pattern) else { return nil }
        var field: [UInt8]? = nil
        var keyEnd = pattern.count
        // `->` after the `*` (up to a NUL byte, as C's `strstr`), with a field after it.
        var i = star + 1
        while i + 1 < pattern.count && pattern[i] != 0 && pattern[i + 1] != 0 {
            if pattern[i] == UInt8(ascii: "-") && pattern[i + 1] == UInt8(ascii: ">") {
                if i + 2 < pattern.count && pattern[i + 2] != 0 {
                    field = Array(pattern[(i + 2)...])
                    keyEnd = i
                }
                break
            }
            i += 1
        }
        let key = Array(pattern[..<star]) + element + Array(pattern[(star + 1)..<keyEnd])
        guard let field else {
            return try call.withStored(key) { (t: KeyType?, payload: UnsafeRawBufferPointer?, _) -> [UInt8]? in
                guard t == .string, let payload else { return nil }
                return Array(payload)
            }
        }
        let meta = try call.withStored(key) { (t: KeyType?, payload: UnsafeRawBufferPointer?, expiresAt: Int64?) -> CollectionMetadata? in
            guard t == .hash, let payload else { return nil }
            return CollectionMetadata(type: .hash, payload: payload, expiresAt: expiresAt)
        }
        guard let meta else { return nil }
        return try call.member(meta, of: key, .member, field)
    }

    /// The reply without STORE: the elements of the window, or for each what the GET patterns name.
    static func reply(_ r: Result, _ o: Options, _ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let items = r.items[r.window]
        out.arrayHeader(o.gets.isEmpty ? items.count : items.count * o.gets.count)
        for item in items {
            if o.gets.isEmpty { out.bulk(item.element) }
            for pattern in o.gets {
                if let value = try lookup(call, pattern, item.element) { out.bulk(value) } else { out.null() }
            }
        }
    }

    /// Replaces `destination` with the result as a list (a missing GET value stored empty), or
    /// deletes it when the result is empty; the number of elements. Call under the keys' locks.
    static func store(_ r: Result, _ o: Options, _ destination: [UInt8], _ call: Call) throws(CommandError) -> Int {
        let stored = try call.writeNew(destination, .list) { (new: inout NewCollection) throws(CommandError) in
            func push(_ value: [UInt8]) throws(CommandError) {
                try new.put(.member, MemberKeys.position(new.meta.tail), value)
                new.meta.tail += 1
                new.meta.size += 1
            }
            for item in r.items[r.window] {
                if o.gets.isEmpty { try push(item.element) }
                for pattern in o.gets { try push(try lookup(call, pattern, item.element) ?? []) }
            }
        }
        if stored.size > 0 { call.notify(.list, "sortstore", destination) }
        return Int(stored.size)
    }
}
