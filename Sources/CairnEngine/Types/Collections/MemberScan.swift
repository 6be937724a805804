import RESP

/// HSCAN, SSCAN and ZSCAN: `key cursor [MATCH pattern] [COUNT count]` over a collection's
/// members in key order. As with SCAN, the cursor stands for the last member returned
/// (`ScanCursors`), so a scan resumes exactly after it and sees every member present for the
/// whole scan once.
struct MemberScan {
    var cursor: UInt64
    var pattern: [UInt8]?
    var count = 10

    init(cursor: UInt64) { self.cursor = cursor }

    /// Parses `[MATCH pattern] [COUNT count]` from argument 3 on.
    init(_ call: Call, cursor: UInt64) throws(CommandError) {
        self.cursor = cursor
        var i = 3
        while i < call.count {
            guard i + 1 < call.count else { throw .syntax }
            if call[i].isKeyword("MATCH") {
                pattern = call[i + 1]
            } else if call[i].isKeyword("COUNT") {
                let c = try call.integer(i + 1)
                guard c >= 1 else { throw .syntax }
                count = Int(min(c, 1_000_000))
            } else {
                throw .syntax
            }
            i += 2
        }
    }

    /// The whole reply of HSCAN, SSCAN or ZSCAN on a collection of `type`:
    /// `[cursor, [member, (value,) ...]]`; `value` writes what follows each member (none for
    /// a set).
    static func reply(
        _ call: Call, _ type: KeyType, _ out: inout RESPWriter,
        value: ((_ stored: [UInt8], _ out: inout RESPWriter) -> Void)? = nil
    ) throws(CommandError) {
        // Redis's order: the cursor, then the key (WRONGTYPE; a missing key is an empty page
        // whatever the options), then the options.
        let cursor = try call.scanCursor(2)
        let meta = try call.collection(call[1], type)
        let scan = meta == nil ? MemberScan(cursor: cursor) : try MemberScan(call, cursor: cursor)
        let page = try scan.page(call, meta, of: call[1])
        out.arrayHeader(2)
        out.bulk(String(page.next))
        out.arrayHeader(value == nil ? page.items.count : page.items.count * 2)
        for item in page.items {
            out.bulk(item.sub)
            value?(item.value, &out)
        }
    }

    /// One page: the members (sub-key and value) matching the pattern among the next `count`,
    /// and the cursor to continue with (0 at the end). A missing collection gives an empty page.
    func page(_ call: Call, _ meta: CollectionMetadata?, of key: [UInt8]) throws(CommandError) -> (next: UInt64, items: [(sub: [UInt8], value: [UInt8])]) {
        guard let meta else {
            if cursor != 0 { throw CommandError("ERR", "invalid cursor") }
            return (0, [])
        }
        let scope = "\(call.family.name)\u{1}\(meta.version)"
        var start: [UInt8]? = nil
        if cursor != 0 {
            guard let after = call.engine.scanCursors.resume(cursor, family: scope) else { throw CommandError("ERR", "invalid cursor") }
            start = after + [0]
        }
        var items: [(sub: [UInt8], value: [UInt8])] = []
        var visited = 0
        var last: [UInt8]? = nil
        var more = false
        try call.scanMembers(meta, of: key, .member, from: start) { sub, value in
            if visited == count {
                more = true
                return false
            }
            visited += 1
            last = sub
            if pattern.map({ Glob.matches($0, sub) }) ?? true { items.append((sub, value)) }
            return true
        }
        guard more, let last else { return (0, items) }
        return (call.engine.scanCursors.save(family: scope, after: last, owner: call.session.id), items)
    }
}
