import RESP

/// ZMPOP, and the blocking BZPOPMIN, BZPOPMAX and BZMPOP: https://redis.io/docs/latest/commands/bzpopmin/
///
/// Each pops with `SortedSetCommands.pop` from the first of its keys that holds members; the
/// blocking ones, when all are empty, park the client (`Call.block`, Blocking/) until a write
/// to one of the keys (ZADD, an EXEC, a script) signals it, in arrival order. Inside MULTI/EXEC
/// and scripts they answer at once, nil when empty, as in Redis.
enum SortedSetPops {
    static let all: [Command] = [
        Command("zmpop") { call, out throws(CommandError) in
            let request = try Request(call, numkeysAt: 1)
            guard let (key, popped) = try popFirst(call, request, skippingOtherTypes: false) else { out.nullArray(); return }
            Request.reply(key, popped, &out)
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 1) },
        Command("bzpopmin") { call, out throws(CommandError) in
            try blockingPop(call, min: true, &out)
        },
        Command("bzpopmax") { call, out throws(CommandError) in
            try blockingPop(call, min: false, &out)
        },
        Command("bzmpop") { call, out throws(CommandError) in
            // The keys and COUNT before the timeout, as Redis (and BLMPOP) checks them.
            let request = try Request(call, numkeysAt: 2)
            let timeout = try call.blockTimeout(1)
            try call.block(keys: request.keys, timeout: timeout, out: &out, empty: { $0.nullArray() }) {
                call, out, retrying throws(CommandError) -> Bool in
                guard let (key, popped) = try popFirst(call, request, skippingOtherTypes: retrying) else { return false }
                Request.reply(key, popped, &out)
                return true
            }
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 2) },
    ]

    /// `numkeys key [key ...] MIN|MAX [COUNT count]`, with Redis 7.0's errors.
    struct Request: Sendable {
        var keys: [[UInt8]]
        var min: Bool
        var count = 1

        init(_ call: Call, numkeysAt at: Int) throws(CommandError) {
            let parsed = try call.multiPop(numkeysAt: at) { end -> Bool? in
                end.isKeyword("MIN") ? true : end.isKeyword("MAX") ? false : nil
            }
            (keys, min, count) = (parsed.keys, parsed.end, parsed.count)
        }

        /// `[key, [[member, score] ...]]`.
        static func reply(_ key: [UInt8], _ popped: [SortedEntry], _ out: inout RESPWriter) {
            out.arrayHeader(2)
            out.bulk(key)
            out.arrayHeader(popped.count)
            for e in popped {
                out.arrayHeader(2)
                out.bulk(e.member)
                Scores.write(e.score, &out)
            }
        }
    }

    /// Pops from the first key holding members; with `skippingOtherTypes` (a blocked client's
    /// retry) a key of another type is passed over, as Redis serves waiters only from sorted sets.
    static func popFirst(_ call: Call, _ request: Request, skippingOtherTypes: Bool) throws(CommandError) -> ([UInt8], [SortedEntry])? {
        for key in request.keys {
            let popped: [SortedEntry]?
            do {
                popped = try SortedSetCommands.pop(call, key, min: request.min, count: request.count)
            } catch where skippingOtherTypes && error.prefix == "WRONGTYPE" {
                continue
            }
            if let popped, !popped.isEmpty { return (key, popped) }
        }
        return nil
    }

    /// BZPOPMIN and BZPOPMAX: `[key, member, score]`, or a null array on timeout.
    static func blockingPop(_ call: Call, min: Bool, _ out: inout RESPWriter) throws(CommandError) {
        let timeout = try call.blockTimeout(call.count - 1)
        let keys = Array(call.argv[1..<(call.count - 1)])
        var request = try Request(call, keys: keys, min: min)
        request.count = 1
        try call.block(keys: keys, timeout: timeout, out: &out, empty: { $0.nullArray() }) { [request]
            call, out, retrying throws(CommandError) -> Bool in
            guard let (key, popped) = try popFirst(call, request, skippingOtherTypes: retrying), let e = popped.first else { return false }
            out.arrayHeader(3)
            out.bulk(key)
            out.bulk(e.member)
            Scores.write(e.score, &out)
            return true
        }
    }
}

extension SortedSetPops.Request {
    init(_ call: Call, keys: [[UInt8]], min: Bool) throws(CommandError) {
        self.keys = keys
        self.min = min
    }
}
