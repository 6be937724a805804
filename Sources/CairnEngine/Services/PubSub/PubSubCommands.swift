import RESP

/// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB, and their sharded forms
/// SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH (shard channels: a namespace of their own, as in a
/// standalone Redis 7.0), with Redis's replies: subscription changes answer one push per
/// channel (an array in RESP2, a `>` push in RESP3).
/// In RESP2 a subscribed client may only run the subscription commands, PING, QUIT and RESET
/// (`Engine.screen`); a RESP3 client may run anything. Subscriptions are not allowed inside
/// MULTI or scripts.
enum PubSubCommands {
    static let all: [Command] = [
        Command("subscribe") { call, out throws(CommandError) in
            try subscribe(call, &out, .channel)
        },
        Command("psubscribe") {
            call, out throws(CommandError) in
            try subscribe(call, &out, .pattern)
        },
        Command("ssubscribe") {
            call, out throws(CommandError) in
            try subscribe(call, &out, .shard)
        },
        Command("unsubscribe") { call, out throws(CommandError) in
            unsubscribe(call, &out, .channel)
        },
        Command("punsubscribe") {
            call, out throws(CommandError) in
            unsubscribe(call, &out, .pattern)
        },
        Command("sunsubscribe") {
            call, out throws(CommandError) in
            unsubscribe(call, &out, .shard)
        },
        Command("publish") { call, out throws(CommandError) in
            out.integer(call.engine.pubsub.publish(call[2], to: call[1]))
        },
        Command("spublish") { call, out throws(CommandError) in
            out.integer(call.engine.pubsub.publish(call[2], toShard: call[1]))
        },
        Command("pubsub", subcommands: [
                    Command("pubsub|channels") { call, out throws(CommandError) in
                        try channels(call, .channel, &out)
                    },
                    Command("pubsub|shardchannels") { call, out throws(CommandError) in
                        try channels(call, .shard, &out)
                    },
                    Command("pubsub|numsub") { call, out throws(CommandError) in
                        subscriberCounts(call, .channel, &out)
                    },
                    Command("pubsub|shardnumsub") { call, out throws(CommandError) in
                        subscriberCounts(call, .shard, &out)
                    },
                    Command("pubsub|numpat") { call, out throws(CommandError) in
                        out.integer(call.engine.pubsub.patternCount)
                    },
                    Command("pubsub|help") {
                        _, out throws(CommandError) in
                        let lines = [
                            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                            "CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
                            "NUMPAT", "    Return number of subscriptions to patterns.",
                            "NUMSUB [<channel> ...]",
                            "    Return the number of subscribers for the specified channels, excluding",
                            "    pattern subscriptions(default: no channels).",
                            "SHARDCHANNELS [<pattern>]",
                            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
                            "SHARDNUMSUB [<shardchannel> ...]",
                            "    Return the number of subscribers for the specified shard level channel(s)",
                            "HELP", "    Prints this help.",
                        ]
                        out.arrayHeader(lines.count)
                        for l in lines { out.simpleString(l) }
                    },
                ]) { _, _ throws(CommandError) in },
    ]

    static func channels(_ call: Call, _ kind: PubSub.Kind, _ out: inout RESPWriter) throws(CommandError) {
        guard call.count <= 3 else { throw .arity(call.name) }
        let names = call.engine.pubsub.activeChannels(kind, matching: call.count == 3 ? call[2] : nil)
        out.arrayHeader(names.count)
        for n in names { out.bulk(n) }
    }

    static func subscriberCounts(_ call: Call, _ kind: PubSub.Kind, _ out: inout RESPWriter) {
        out.arrayHeader((call.count - 2) * 2)
        for i in 2..<call.count {
            out.bulk(call[i])
            out.integer(call.engine.pubsub.subscriberCount(call[i], kind))
        }
    }

    static func subscribe(_ call: Call, _ out: inout RESPWriter, _ kind: PubSub.Kind) throws(CommandError) {
        let session = call.session
        guard let subscriber = session.subscriber else { throw CommandError("ERR", "this connection cannot receive messages") }
        subscriber.version = session.protocolVersion
        for i in 1..<call.count {
            let name = call[i]
            if call.engine.pubsub.add(subscriber, to: name, kind) { session[subscriptions: kind].insert(name) }
            out.bytes += PubSub.encode([event(kind, subscribe: true), name, count(session, kind)], version: out.version)
        }
    }

    static func unsubscribe(_ call: Call, _ out: inout RESPWriter, _ kind: PubSub.Kind) {
        let session = call.session
        let event = event(kind, subscribe: false)
        let names = call.count > 1 ? Array(call.argv[1...]) : session[subscriptions: kind].sorted { $0.lexicographicallyPrecedes($1) }
        guard !names.isEmpty else {
            out.bytes += PubSub.encode([event, NSNull(), count(session, kind)], version: out.version)
            return
        }
        for name in names {
            if session[subscriptions: kind].remove(name) != nil { call.engine.pubsub.remove(session.id, from: name, kind) }
            out.bytes += PubSub.encode([event, name, count(session, kind)], version: out.version)
        }
    }

    static func event(_ kind: PubSub.Kind, subscribe: Bool) -> String {
        switch kind {
        case .channel: subscribe ? "subscribe" : "unsubscribe"
        case .pattern: subscribe ? "psubscribe" : "punsubscribe"
        case .shard: subscribe ? "ssubscribe" : "sunsubscribe"
        }
    }

    /// The count a subscription push carries: channels and patterns together, as Redis 7.0
    /// counts them; shard channels on their own.
    static func count(_ session: Session, _ kind: PubSub.Kind) -> Int {
        kind == .shard ? session.shardChannels.count : session.channels.count + session.patterns.count
    }
}

/// A placeholder for "no channel" in an unsubscribe push (encoded as a null).
struct NSNull {}

extension Engine {
    /// Drops every subscription of `session` (on RESET and when its connection closes).
    func unsubscribeAll(_ session: Session) {
        for kind in [PubSub.Kind.channel, .pattern, .shard] {
            for name in session[subscriptions: kind] { pubsub.remove(session.id, from: name, kind) }
            session[subscriptions: kind] = []
        }
    }
}

extension Session {
    /// The names this client subscribes to of `kind`.
    subscript(subscriptions kind: PubSub.Kind) -> Set<[UInt8]> {
        get {
            switch kind {
            case .channel: channels
            case .pattern: patterns
            case .shard: shardChannels
            }
        }
        set {
            switch kind {
            case .channel: channels = newValue
            case .pattern: patterns = newValue
            case .shard: shardChannels = newValue
            }
        }
    }
}
