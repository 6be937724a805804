import RESP

/// BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP: https://redis.io/docs/latest/commands/blpop/
///
/// Each tries its non-blocking pop; when every key is empty the client is parked
/// (`Call.block`, Blocking/) without holding a worker and retried when a push signals one of
/// its keys, in arrival order. Inside MULTI/EXEC and scripts they answer at once, nil when
/// empty, as in Redis.
enum BlockingListCommands {
    static let all: [Command] = [
        Command("blpop") { call, out throws(CommandError) in
            try blockingPop(call, .left, &out)
        },
        Command("brpop") { call, out throws(CommandError) in
            try blockingPop(call, .right, &out)
        },
        Command("blmove") { call, out throws(CommandError) in
            guard let from = ListEnd(call[3]), let to = ListEnd(call[4]) else { throw .syntax }
            try blockingMove(call, from, to, timeoutAt: 5, &out)
        },
        Command("brpoplpush") { call, out throws(CommandError) in
            try blockingMove(call, .right, .left, timeoutAt: 3, &out)
        },
        Command("blmpop") { call, out throws(CommandError) in
            let request = try MultiPop(call, numkeysAt: 2)
            let timeout = try call.blockTimeout(1)
            try call.block(keys: request.keys, timeout: timeout, out: &out, empty: { $0.nullArray() }) {
                call, out, retrying throws(CommandError) -> Bool in
                guard let (key, elements) = try call.popFirst(request.keys, from: request.end, count: request.count,
                                                              skippingOtherTypes: retrying) else { return false }
                MultiPop.reply(key, elements, &out)
                return true
            }
        }.movingKeys { SetCommands.numberedKeys($0, countAt: 2) },
    ]

    /// BLPOP and BRPOP: `[key, element]`, or a null array on timeout.
    static func blockingPop(_ call: Call, _ end: ListEnd, _ out: inout RESPWriter) throws(CommandError) {
        let timeout = try call.blockTimeout(call.count - 1)
        let keys = Array(call.argv[1..<(call.count - 1)])
        try call.block(keys: keys, timeout: timeout, out: &out, empty: { $0.nullArray() }) {
            call, out, retrying throws(CommandError) -> Bool in
            guard let (key, elements) = try call.popFirst(keys, from: end, count: 1, skippingOtherTypes: retrying),
                  let element = elements.first else { return false }
            out.arrayHeader(2)
            out.bulk(key)
            out.bulk(element)
            return true
        }
    }

    /// BLMOVE and BRPOPLPUSH: the element moved, or a null on timeout.
    static func blockingMove(_ call: Call, _ from: ListEnd, _ to: ListEnd, timeoutAt: Int, _ out: inout RESPWriter) throws(CommandError) {
        let timeout = try call.blockTimeout(timeoutAt)
        let source = call[1], destination = call[2]
        try call.block(keys: [source], timeout: timeout, out: &out, empty: { $0.null() }) {
            call, out, retrying throws(CommandError) -> Bool in
            guard let element = try call.move(source, destination, from, to, skippingOtherTypes: retrying) else { return false }
            out.bulk(element)
            return true
        }
    }
}
