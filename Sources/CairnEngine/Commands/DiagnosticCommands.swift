import RESP

/// SLOWLOG, LATENCY and MONITOR: what operators ask a slow or busy server.
/// https://redis.io/docs/latest/commands/slowlog/, https://redis.io/docs/latest/commands/latency/,
/// https://redis.io/docs/latest/commands/monitor/
///
/// All three are fed in one place, `Engine.completed`, which every executor (alone, grouped
/// read, grouped write, EXEC, the long queue) reports to once a request ran.
enum DiagnosticCommands {
    static let all: [Command] = [
        Command("slowlog", subcommands: slowlog) { _, _ throws(CommandError) in },
        Command("latency", subcommands: latency) { _, _ throws(CommandError) in },
        Command("monitor") { call, out throws(CommandError) in
            // The server starts sending this client the lines once this reply is written.
            call.session.outcome.startsMonitoring = true
            out.simpleString("OK")
        }.reachingEverything(write: false),
    ]

    /// A HELP reply: one status line per entry, as Redis's `addReplyHelp`.
    /// `PARENT HELP`: Redis's help reply for a command with subcommands, `lines` between its
    /// header and the closing HELP entry.
    static func helpCommand(_ parent: String, _ lines: [String]) -> Command {
        Command("\(parent.lowercased())|help") {
            _, out throws(CommandError) in
            help(parent, lines, to: &out)
        }
    }

    static func help(_ command: String, _ lines: [String], to out: inout RESPWriter) {
        let all = ["\(command) <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"] + lines + ["HELP", "    Prints this help."]
        out.arrayHeader(all.count)
        for line in all { out.simpleString(line) }
    }

    static let slowlog: [Command] = [
        Command("slowlog|get") { call, out throws(CommandError) in
            var count = 10
            if call.count > 3 {
                throw CommandError("ERR", "unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP.")
            }
            if call.count == 3 {
                count = Int(try call.integer(2, in: -1...Int64.max, message: "count should be greater than or equal to -1"))
            }
            let entries = call.engine.stats.slowLog.latest(count)
            out.arrayHeader(entries.count)
            for e in entries {
                out.arrayHeader(6)
                out.integer(e.id)
                out.integer(e.time)
                out.integer(e.microseconds)
                out.arrayHeader(e.argv.count)
                for a in e.argv { out.bulk(a) }
                out.bulk(e.address)
                out.bulk(e.clientName)
            }
        }.reachingEverything(write: false),
        Command("slowlog|len") { call, out throws(CommandError) in
            out.integer(call.engine.stats.slowLog.count)
        },
        Command("slowlog|reset") { call, out throws(CommandError) in
            call.engine.stats.slowLog.reset()
            out.simpleString("OK")
        },
        DiagnosticCommands.helpCommand("SLOWLOG", [
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ]),
    ]

    static let latency: [Command] = [
        Command("latency|latest") { call, out throws(CommandError) in
            let events = call.engine.stats.latency.all
            out.arrayHeader(events.count)
            for (name, e) in events {
                out.arrayHeader(4)
                out.bulk(name)
                out.integer(e.latest.time)
                out.integer(e.latest.milliseconds)
                out.integer(e.max)
            }
        },
        Command("latency|history") { call, out throws(CommandError) in
            let history = call.engine.stats.latency.event(call.text(2))?.history ?? []
            out.arrayHeader(history.count)
            for s in history {
                out.arrayHeader(2)
                out.integer(s.time)
                out.integer(s.milliseconds)
            }
        },
        Command("latency|reset") { call, out throws(CommandError) in
            out.integer(call.engine.stats.latency.reset((2..<call.count).map { call.text($0) }))
        },
        Command("latency|histogram") { call, out throws(CommandError) in
            let engine = call.engine
            var metrics: [CommandMetrics] = []
            if call.count == 2 {
                metrics = engine.stats.commands.all.filter { $0.calls.value > 0 }.sorted { $0.name < $1.name }
            } else {
                var seen = Set<String>()
                for i in 2..<call.count {
                    guard let c = engine.table.find(call.text(i)), seen.insert(c.name).inserted else { continue }
                    // A container (CONFIG) stands for its subcommands, as in Redis.
                    let wanted = c.subcommands.isEmpty ? [c] : c.subcommands.values.sorted { $0.name < $1.name }
                    metrics += wanted.map { engine.stats.commands[$0] }.filter { $0.calls.value > 0 }
                }
            }
            out.mapHeader(metrics.count)
            for m in metrics {
                let buckets = m.powerOfTwoHistogram()
                out.bulk(m.name)
                out.mapHeader(2)
                out.bulk("calls")
                out.integer(m.calls.value)
                out.bulk("histogram_usec")
                out.mapHeader(buckets.count)
                for b in buckets {
                    out.integer(b.upToMicroseconds)
                    out.integer(b.cumulative)
                }
            }
        },
        Command("latency|doctor") { call, out throws(CommandError) in
            out.verbatim(Array(doctor(call.engine).utf8))
        },
        DiagnosticCommands.helpCommand("LATENCY", [
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ]),
    ]

    /// LATENCY DOCTOR's report, in the spirit (and opening words) of Redis's.
    static func doctor(_ engine: Engine) -> String {
        let events = engine.stats.latency.all
        let threshold = engine.configuration.latencyMonitorThreshold
        guard !events.isEmpty else {
            if threshold == 0 {
                return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Cairn instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n"
            }
            return "Dave, no latency spike was observed during the lifetime of this Cairn instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
        }
        var text = "Dave, I have observed latency spikes in this Cairn instance. You don't mind talking about it, do you Dave?\n\n"
        for (i, (name, e)) in events.enumerated() {
            let samples = e.history.map(\.milliseconds)
            let average = samples.reduce(0, +) / max(samples.count, 1)
            let span = samples.count > 1 ? Int(e.history.last!.time - e.history.first!.time) * 100 / (samples.count - 1) : 0
            let period = "\(span / 100).\(String(span % 100).leftPadded(2))"
            text += "\(i + 1). \(name): \(samples.count) latency spikes (average \(average)ms, period \(period) sec). Worst all time event \(e.max)ms.\n"
        }
        text += "\nI have a few advices for you:\n\n"
        text += "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n"
        text += "- Commands that read the whole database (KEYS, DBSIZE, SCAN without a prefix, DELRANGE over a wide range) take time in proportion to it: prefer key prefixes, RANGE with LIMIT, and SCAN with a small COUNT.\n"
        text += "- Large values cost time to copy: check INFO commandstats and LATENCY HISTOGRAM for the commands that take longest, and the rocksdb section of INFO for pending compactions.\n"
        return text
    }
}
