public import RESP
import Synchronization

/// Channels and patterns, and who listens to them: https://redis.io/docs/latest/develop/interact/pubsub/
///
/// A publisher encodes each message once per protocol version and hands the bytes to every
/// subscriber's `Subscriber.deliver` (the server appends them to that client's reply buffer on
/// its own queue), so a slow subscriber never slows the publisher: its buffer grows until the
/// server's pubsub output limit disconnects it.
public final class PubSub: Sendable {
    /// What a subscription names: a channel, a pattern, or a shard channel (SSUBSCRIBE: in a
    /// cluster, the channel of one shard; here, a namespace of its own, as in a standalone Redis).
    enum Kind {
        case channel, pattern, shard
    }

    private struct State {
        var channels: [[UInt8]: [Int64: Subscriber]] = [:]
        var patterns: [[UInt8]: [Int64: Subscriber]] = [:]
        var shards: [[UInt8]: [Int64: Subscriber]] = [:]

        subscript(kind kind: Kind) -> [[UInt8]: [Int64: Subscriber]] {
            get {
                switch kind {
                case .channel: channels
                case .pattern: patterns
                case .shard: shards
                }
            }
            set {
                switch kind {
                case .channel: channels = newValue
                case .pattern: patterns = newValue
                case .shard: shards = newValue
                }
            }
        }
    }
    private let state = Mutex(State())

    init() {}

    /// Subscribes `subscriber` to `name` of `kind`; false when it already was.
    func add(_ subscriber: Subscriber, to name: [UInt8], _ kind: Kind) -> Bool {
        state.withLock { s in s[kind: kind][name, default: [:]].updateValue(subscriber, forKey: subscriber.id) == nil }
    }

    func remove(_ id: Int64, from name: [UInt8], _ kind: Kind) {
        state.withLock { s in
            s[kind: kind][name]?.removeValue(forKey: id)
            if s[kind: kind][name]?.isEmpty == true { s[kind: kind].removeValue(forKey: name) }
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

    /// SPUBLISH: sends `message` to the subscribers of shard channel `channel` (no pattern
    /// reaches a shard channel); returns how many received it.
    func publish(_ message: [UInt8], toShard channel: [UInt8]) -> Int {
        let subscribers = state.withLock { s in Array(s.shards[channel]?.values ?? [:].values) }
        var encoded: [RESPVersion: [UInt8]] = [:]
        for subscriber in subscribers {
            let version = subscriber.version
            if encoded[version] == nil { encoded[version] = Self.encode(["smessage", channel, message], version: version) }
            subscriber.deliver(encoded[version]!)
        }
        return subscribers.count
    }

    /// Channels (or shard channels) with at least one subscriber, matching `pattern` when given
    /// (PUBSUB CHANNELS, SHARDCHANNELS).
    func activeChannels(_ kind: Kind = .channel, matching pattern: [UInt8]?) -> [[UInt8]] {
        state.withLock { s in s[kind: kind].keys.filter { name in pattern.map { Glob.matches($0, name) } ?? true } }
            .sorted { $0.lexicographicallyPrecedes($1) }
    }

    func subscriberCount(_ channel: [UInt8], _ kind: Kind = .channel) -> Int { state.withLock { $0[kind: kind][channel]?.count ?? 0 } }

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
