/// The options XADD and XTRIM share, parsed as Redis 7.0's `streamParseAddOrTrimArgsOrReply`
/// parses them (the same order of checks and error texts), and the trimming they ask for.
struct StreamTrim {
    enum Strategy {
        case none
        case maxLength(Int64)
        case minimumID(StreamID)
    }

    var strategy = Strategy.none
    /// `~`: whole nodes only (`StreamNodes`).
    var approximate = false
    /// How many entries trimming may remove at most (0: no limit).
    var limit: Int64 = 0
    /// XADD's NOMKSTREAM.
    var noMakeStream = false
    /// XADD's explicit ID, and whether its sequence was given (`ms-*` leaves it to XADD).
    var id: StreamID? = nil
    var sequenceGiven = true
    /// Where XADD's ID argument is (its fields follow).
    var idAt = 0

    /// Parses from argument 2; for XADD, up to and including the ID.
    init(_ call: Call, xadd: Bool) throws(CommandError) {
        var limitGiven = false
        var i = 2
        while i < call.count {
            let more = call.count - 1 - i
            let option = call[i]
            if xadd && option == [UInt8(ascii: "*")] {
                break
            } else if (option.isKeyword("MAXLEN") || option.isKeyword("MINID")) && more > 0 {
                if case .none = strategy {} else {
                    throw CommandError("ERR", "syntax error, MAXLEN and MINID options at the same time are not compatible")
                }
                approximate = false
                let next = call[i + 1]
                if more >= 2 && next == [UInt8(ascii: "~")] {
                    approximate = true
                    i += 1
                } else if more >= 2 && next == [UInt8(ascii: "=")] {
                    i += 1
                }
                if option.isKeyword("MAXLEN") {
                    let n = try call.integer(i + 1)
                    guard n >= 0 else { throw CommandError("ERR", "The MAXLEN argument must be >= 0.") }
                    strategy = .maxLength(n)
                } else {
                    strategy = .minimumID(try StreamID.strict(call[i + 1]))
                }
                i += 1
            } else if option.isKeyword("LIMIT") && more > 0 {
                limit = try call.integer(i + 1)
                guard limit >= 0 else { throw CommandError("ERR", "The LIMIT argument must be >= 0.") }
                limitGiven = true
                i += 1
            } else if xadd && option.isKeyword("NOMKSTREAM") {
                noMakeStream = true
            } else if xadd {
                let (parsed, given) = try StreamID.strictForAdd(option)
                id = parsed
                sequenceGiven = given
                break
            } else {
                throw .syntax
            }
            i += 1
        }
        idAt = i
        if limit != 0, case .none = strategy {
            throw CommandError("ERR", "syntax error, LIMIT cannot be used without specifying a trimming strategy")
        }
        if !xadd, case .none = strategy {
            throw CommandError("ERR", "syntax error, XTRIM must be called with a trimming strategy")
        }
        if limitGiven {
            guard approximate else { throw CommandError("ERR", "syntax error, LIMIT cannot be used without the special ~ option") }
        } else {
            limit = approximate ? Int64(StreamNodes.maxEntries) * 100 : 0
        }
    }

    /// Removes the entries the strategy asks for from the stream `change` stages, as Redis's
    /// `streamTrim`: whole nodes from the front while one can go, then (exact trimming only)
    /// entries of the first node left. Returns how many went. `added`: the entry XADD just put
    /// in `change` (not stored yet), which counts as the stream's last.
    func apply(_ call: Call, _ change: inout CollectionChange, added: (id: StreamID, node: UInt64)? = nil) throws(CommandError) -> Int64 {
        if case .none = strategy { return 0 }
        var deleted: Int64 = 0
        var start = StreamID.zero
        while true {
            if case .maxLength(let n) = strategy, Int64(change.meta.size) <= n { break }
            // The next node's entries (the stream's first ones left).
            var node: UInt64? = nil
            var ids: [StreamID] = []
            var next: StreamID? = nil
            try call.scanEntries(change, from: start, to: .max) { id, value in
                let n = StreamEntry.node(value)
                if node == nil { node = n }
                guard n == node else {
                    next = id
                    return false
                }
                ids.append(id)
                return true
            }
            if next == nil, let added, node == nil || node == added.node {
                node = added.node
                ids.append(added.id)
            }
            guard let node, let last = ids.last else { break }
            let entries = Int64(ids.count)
            if limit > 0 && deleted + entries > limit { break }
            let wholeNode: Bool
            switch strategy {
            case .maxLength(let n): wholeNode = Int64(change.meta.size) - entries >= n
            case .minimumID(let min): wholeNode = last < min
            case .none: wholeNode = false
            }
            if wholeNode {
                for id in ids { change.delete(.member, id.bytes) }
                change.meta.size -= UInt64(entries)
                deleted += entries
                if node == change.meta.stream.lastNode { change.meta.stream.lastNodeLive = 0 }
                guard let resume = next ?? (ids.contains(added?.id ?? .max) ? nil : added?.id) else { break }
                start = resume
                continue
            }
            if approximate { break }
            for id in ids {
                if case .maxLength(let n) = strategy, Int64(change.meta.size) <= n { break }
                if case .minimumID(let min) = strategy, id >= min { break }
                change.delete(.member, id.bytes)
                change.meta.size -= 1
                deleted += 1
                StreamNodes.removed(&change.meta.stream, from: node)
            }
            break
        }
        return deleted
    }
}

extension StreamID {
    static let invalid = CommandError("ERR", "Invalid stream ID specified as stream command argument")

    /// An ID where `-` and `+` are not allowed (Redis's `streamParseStrictIDOrReply`).
    static func strict(_ bytes: [UInt8], missingSequence: UInt64 = 0) throws(CommandError) -> StreamID {
        guard let id = parse(bytes, missingSequence: missingSequence, specials: false), !isSpecial(bytes) else { throw invalid }
        return id
    }

    /// Any ID, `-` and `+` included (`streamParseIDOrReply`).
    static func any(_ bytes: [UInt8], missingSequence: UInt64 = 0) throws(CommandError) -> StreamID {
        guard let id = parse(bytes, missingSequence: missingSequence) else { throw invalid }
        return id
    }

    /// XADD's ID: strict, or `ms-*` (the sequence left to XADD: `sequenceGiven` false).
    static func strictForAdd(_ bytes: [UInt8]) throws(CommandError) -> (StreamID, sequenceGiven: Bool) {
        if bytes.count >= 3, bytes.count <= 127, bytes.suffix(2).elementsEqual("-*".utf8),
           let ms = parse(Array(bytes.dropLast(2)), specials: false), !bytes.dropLast(2).contains(UInt8(ascii: "-")) {
            return (StreamID(ms: ms.ms, seq: 0), false)
        }
        return (try strict(bytes), true)
    }

    /// An interval bound: `(id` is exclusive (then strict); otherwise any ID.
    /// Returns the inclusive bound, or throws Redis's interval error when none exists.
    static func bound(_ bytes: [UInt8], start: Bool) throws(CommandError) -> StreamID {
        let missing: UInt64 = start ? 0 : .max
        if bytes.count > 1 && bytes[0] == UInt8(ascii: "(") {
            let id = try strict(Array(bytes.dropFirst()), missingSequence: missing)
            if start {
                guard let n = id.next else { throw CommandError("ERR", "invalid start ID for the interval") }
                return n
            }
            guard let p = id.previous else { throw CommandError("ERR", "invalid end ID for the interval") }
            return p
        }
        return try any(bytes, missingSequence: missing)
    }

    private static func isSpecial(_ bytes: [UInt8]) -> Bool {
        bytes.count == 1 && (bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+"))
    }
}
