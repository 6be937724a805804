import RESP
import Synchronization

/// ACL LOG: the latest denied commands, keys, channels and failed logins, newest first, at most
/// `acllog-max-len`. A denial like one of the 10 newest (same reason, context, object and
/// user) within a minute counts into it and moves it to the front, as Redis groups them.
/// https://redis.io/docs/latest/commands/acl-log/
final class ACLLog: Sendable {
    struct Entry {
        var count: Int
        var reason: String
        var context: String
        var object: [UInt8]
        var user: String
        var createdAt: Int64
        var clientInfo: String
    }

    private let entries = Mutex<[Entry]>([])
    let maxLength = Atomic<Int>(128)

    func add(reason: String, context: String, object: [UInt8], user: String, client: String) {
        let now = Clock.milliseconds()
        let limit = maxLength.load(ordering: .relaxed)
        entries.withLock { e in
            if let i = e.prefix(10).firstIndex(where: {
                $0.reason == reason && $0.context == context && $0.object == object && $0.user == user && now - $0.createdAt < 60_000
            }) {
                var entry = e.remove(at: i)
                entry.count += 1
                entry.createdAt = now
                entry.clientInfo = client
                e.insert(entry, at: 0)
            } else {
                e.insert(Entry(count: 1, reason: reason, context: context, object: object, user: user, createdAt: now, clientInfo: client), at: 0)
            }
            if e.count > limit { e.removeLast(e.count - limit) }
        }
    }

    func reset() { entries.withLock { $0.removeAll() } }

    /// The newest `count` entries (all when nil) in Redis's reply shape.
    func write(count: Int?, to out: inout RESPWriter) {
        let list = entries.withLock { Array($0.prefix(count ?? $0.count)) }
        let now = Clock.milliseconds()
        out.arrayHeader(list.count)
        for e in list {
            out.mapHeader(7)
            out.bulk("count"); out.integer(e.count)
            out.bulk("reason"); out.bulk(e.reason)
            out.bulk("context"); out.bulk(e.context)
            out.bulk("object"); out.bulk(e.object)
            out.bulk("username"); out.bulk(e.user)
            out.bulk("age-seconds"); out.double(Double(now - e.createdAt) / 1000)
            out.bulk("client-info"); out.bulk(e.clientInfo)
        }
    }
}
