import RESP

/// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB, with Redis's replies:
/// subscription changes answer one push per channel (an array in RESP2, a `>` push in RESP3).
/// In RESP2 a subscribed client may only run the subscription commands, PING, QUIT and RESET
/// (`Engine.screen`); a RESP3 client may run anything. Subscriptions are not allowed inside
/// MULTI or scripts.
enum PubSubCommands {
    static let all: [Command] = [
        Command("subscribe") { call, out throws(CommandError) in
            try subscribe(call, &out, pattern: false)
        },
        Command("psubscribe") {
            call, out throws(CommandError) in
            try subscribe(call, &out, pattern: true)
        },
        Command("unsubscribe") { call, out throws(CommandError) in
            unsubscribe(call, &out, pattern: false)
        },
        Command("punsubscribe") {
            call, out throws(CommandError) in
            unsubscribe(call, &out, pattern: true)
        },
        Command("publish") { call, out throws(CommandError) in
            out.integer(call.engine.pubsub.publish(call[2], to: call[1]))
        },
        Command("pubsub", subcommands: [
                    Command("pubsub|channels") { call, out throws(CommandError) in
                        guard call.count <= 3 else { throw .arity(call.name) }
                        let names = call.engine.pubsub.activeChannels(matching: call.count == 3 ? call[2] : nil)
                        out.arrayHeader(names.count)
                        for n in names { out.bulk(n) }
                    },
                    Command("pubsub|numsub") { call, out throws(CommandError) in
                        out.arrayHeader((call.count - 2) * 2)
                        for i in 2..<call.count {
                            out.bulk(call[i])
                            out.integer(call.engine.pubsub.subscriberCount(call[i]))
                        }
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
                            "HELP", "    Prints this help.",
                        ]
                        out.arrayHeader(lines.count)
                        for l in lines { out.simpleString(l) }
                    },
                ]) { _, _ throws(CommandError) in },
    ]

    static func subscribe(_ call: Call, _ out: inout RESPWriter, pattern: Bool) throws(CommandError) {
        let session = call.session
        guard let subscriber = session.subscriber else { throw CommandError("ERR", "this connection cannot receive messages") }
        subscriber.version = session.protocolVersion
        for i in 1..<call.count {
            let name = call[i]
            if call.engine.pubsub.add(subscriber, to: name, pattern: pattern) {
                if pattern { session.patterns.insert(name) } else { session.channels.insert(name) }
            }
            out.bytes += PubSub.encode([pattern ? "psubscribe" : "subscribe", name, session.subscriptionCount], version: out.version)
        }
    }

    static func unsubscribe(_ call: Call, _ out: inout RESPWriter, pattern: Bool) {
        let session = call.session
        let kind = pattern ? "punsubscribe" : "unsubscribe"
        let names = call.count > 1 ? Array(call.argv[1...])
            : (pattern ? session.patterns : session.channels).sorted { $0.lexicographicallyPrecedes($1) }
        guard !names.isEmpty else {
            out.bytes += PubSub.encode([kind, NSNull(), session.subscriptionCount], version: out.version)
            return
        }
        for name in names {
            if pattern {
                if session.patterns.remove(name) != nil { call.engine.pubsub.remove(session.id, from: name, pattern: true) }
            } else {
                if session.channels.remove(name) != nil { call.engine.pubsub.remove(session.id, from: name, pattern: false) }
            }
            out.bytes += PubSub.encode([kind, name, session.subscriptionCount], version: out.version)
        }
    }
}

/// A placeholder for "no channel" in an unsubscribe push (encoded as a null).
struct NSNull {}

extension Engine {
    /// Drops every subscription of `session` (on RESET and when its connection closes).
    func unsubscribeAll(_ session: Session) {
        for name in session.channels { pubsub.remove(session.id, from: name, pattern: false) }
        for name in session.patterns { pubsub.remove(session.id, from: name, pattern: true) }
        session.channels = []
        session.patterns = []
    }
}
