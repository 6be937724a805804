public import RESP
import Synchronization

/// Channels and patterns, and who listens to them: https://redis.io/docs/latest/develop/interact/pubsub/
///
/// A publisher encodes each message once per protocol version and hands the bytes to every
/// subscriber's `Subscriber.deliver` (the server appends them to that client's reply buffer on
/// its own queue), so a slow subscriber never slows the publisher: its buffer grows until the
/// server's pubsub output limit disconnects it.
public final class PubSub: Sendable {
    private struct State {
        var channels: [[UInt8]: [Int64: Subscriber]] = [:]
        var patterns: [[UInt8]: [Int64: Subscriber]] = [:]
    }
    private let state = Mutex(State())

    init() {}

    /// Subscribes `subscriber` to `channel` (or `pattern`); false when it already was.
    func add(_ subscriber: Subscriber, to name: [UInt8], pattern: Bool) -> Bool {
        state.withLock { s in
            if pattern { return s.patterns[name, default: [:]].updateValue(subscriber, forKey: subscriber.id) == nil }
            return s.channels[name, default: [:]].updateValue(subscriber, forKey: subscriber.id) == nil
        }
    }

    func remove(_ id: Int64, from name: [UInt8], pattern: Bool) {
        state.withLock { s in
            if pattern {
                s.patterns[name]?.removeValue(forKey: id)
                if s.patterns[name]?.isEmpty == true { s.patterns.removeValue(forKey: name) }
            } else {
                s.channels[name]?.removeValue(forKey: id)
                if s.channels[name]?.isEmpty == true { s.channels.removeValue(forKey: name) }
            }
        }
    }

    /// Sends `message` to the subscribers of `channel` and of every matching pattern; returns
    /// how many received it (a client subscribed both ways counts twice, as in Redis).
    func publish(_ message: [UInt8], to channel: [UInt8]) -> Int {
        let (direct, matched) = state.withLock { s in
            (Array(s.channels[channel]?.values ?? [:].values),
             s.patterns.filter { Glob.matches($0.key, channel) }.flatMap { p in p.value.values.map { (p.key, $0) } })
        }
        var encoded: [RESPVersion: [UInt8]] = [:]
        for subscriber in direct {
            let version = subscriber.version
            if encoded[version] == nil { encoded[version] = Self.encode(["message", channel, message], version: version) }
            subscriber.deliver(encoded[version]!)
        }
        for (pattern, subscriber) in matched {
            subscriber.deliver(Self.encode(["pmessage", pattern, channel, message], version: subscriber.version))
        }
        return direct.count + matched.count
    }

    /// Channels with at least one subscriber, matching `pattern` when given (PUBSUB CHANNELS).
    func activeChannels(matching pattern: [UInt8]?) -> [[UInt8]] {
        state.withLock { s in s.channels.keys.filter { name in pattern.map { Glob.matches($0, name) } ?? true } }
            .sorted { $0.lexicographicallyPrecedes($1) }
    }

    func subscriberCount(_ channel: [UInt8]) -> Int { state.withLock { $0.channels[channel]?.count ?? 0 } }

    /// Patterns subscribed to by anyone (PUBSUB NUMPAT counts them).
    var patternCount: Int { state.withLock { $0.patterns.count } }

    /// A subscription push (`message`, `subscribe`...): a RESP2 array or a RESP3 push.
    static func encode(_ parts: [Any], version: RESPVersion) -> [UInt8] {
        var w = RESPWriter(version: version, capacity: 64)
        w.pushHeader(parts.count)
        for p in parts {
            switch p {
            case let s as String: w.bulk(s)
            case let b as [UInt8]: w.bulk(b)
            case let n as Int: w.integer(n)
            default: w.null()
            }
        }
        return w.bytes
    }
}

/// How the server delivers pushes to one client: set on the session by the server when the
/// connection opens; its protocol version follows HELLO.
public final class Subscriber: Sendable {
    public let id: Int64
    public let deliver: @Sendable ([UInt8]) -> Void
    private let versionRaw: Atomic<Int>

    public init(id: Int64, version: RESPVersion, deliver: @escaping @Sendable ([UInt8]) -> Void) {
        self.id = id
        self.deliver = deliver
        self.versionRaw = Atomic(version.rawValue)
    }

    var version: RESPVersion {
        get { RESPVersion(rawValue: versionRaw.load(ordering: .relaxed)) ?? .v2 }
        set { versionRaw.store(newValue.rawValue, ordering: .relaxed) }
    }
}
