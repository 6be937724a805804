import Synchronization

/// The clients in MONITOR mode, and the lines they are sent.
/// https://redis.io/docs/latest/commands/monitor/
///
/// `Engine.completed` feeds every request of every executor here once it ran, as Redis feeds
/// its monitors after the call: `+1700000000.123456 [0 127.0.0.1:5555] "get" "k"`. Admin
/// commands are not shown and passwords are redacted, as in Redis. With no monitor the cost
/// is one relaxed load per request.
public final class Monitors: Sendable {
    private let sinks = Mutex<[Int64: MonitorSink]>([:])
    private let active = Atomic<Int>(0)

    init() {}

    /// Starts sending lines to `sink`, the client `id`'s.
    public func add(_ id: Int64, _ sink: MonitorSink) {
        sinks.withLock { s in
            s[id] = sink
            active.store(s.count, ordering: .relaxed)
        }
    }

    public func remove(_ id: Int64) {
        guard active.load(ordering: .relaxed) > 0 else { return }
        sinks.withLock { s in
            s.removeValue(forKey: id)
            active.store(s.count, ordering: .relaxed)
        }
    }

    @inline(__always)
    var isEmpty: Bool { active.load(ordering: .relaxed) == 0 }

    /// The lines of the commands the running script ran (`[0 lua]`), held until the line of
    /// the request that ran the script: Redis 7.0 shows a request before what it runs.
    private let scriptLines = Mutex<(session: Int64, lines: [[UInt8]])>((0, []))

    /// Sends one line for `argv`, run by `session` at Unix microseconds `at`, to every monitor;
    /// `byScript`: run by the script `session` is running, shown as Redis shows it, `[0 lua]`.
    func feed(_ argv: [[UInt8]], session: Session, at microseconds: Int64, byScript: Bool = false) {
        let targets = sinks.withLock { Array($0.values) }
        guard !targets.isEmpty else { return }
        if byScript {
            let line = Monitors.line(argv, address: "lua", at: microseconds)
            scriptLines.withLock {
                if $0.session != session.id { $0 = (session.id, []) }
                $0.lines.append(line)
            }
            return
        }
        var line = Monitors.line(argv, address: session.record.address, at: microseconds)
        let held = scriptLines.withLock { held -> [[UInt8]] in
            guard held.session == session.id, !held.lines.isEmpty else { return [] }
            defer { held = (0, []) }
            return held.lines
        }
        for l in held { line += l }
        for t in targets { t.append(line) }
    }

    /// One MONITOR line, a RESP simple string: the time, `[db address]`, and each argument
    /// quoted as Redis's `sdscatrepr` quotes it.
    static func line(_ argv: [[UInt8]], address: String, at microseconds: Int64) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + argv.reduce(0) { $0 + $1.count + 3 })
        out.append(UInt8(ascii: "+"))
        out += Array("\(microseconds / 1_000_000).\(String(microseconds % 1_000_000).leftPadded(6)) [0 \(address)]".utf8)
        for arg in SlowLog.redacted(argv) {
            out += Array(" \"".utf8)
            for b in arg {
                switch b {
                case UInt8(ascii: "\\"): out += [92, 92]
                case UInt8(ascii: "\""): out += [92, 34]
                case 10: out += [92, UInt8(ascii: "n")]
                case 13: out += [92, UInt8(ascii: "r")]
                case 9: out += [92, UInt8(ascii: "t")]
                case 7: out += [92, UInt8(ascii: "a")]
                case 8: out += [92, UInt8(ascii: "b")]
                case 0x20...0x7e: out.append(b)
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    out += [92, UInt8(ascii: "x"), hex[Int(b >> 4)], hex[Int(b & 15)]]
                }
            }
            out.append(34)
        }
        out += [13, 10]
        return out
    }
}

/// Where one monitor's lines wait for its connection: the server drains them on the
/// connection's own queue (`wake`), so feeding never waits for a monitor. A monitor that lets
/// more than `limit` bytes pile up is dropped (`overflow`), as Redis drops a client past its
/// output buffer limit: a slow monitor is disconnected and never slows anyone else.
public final class MonitorSink: Sendable {
    private let state = Mutex<(pending: [UInt8], scheduled: Bool, overflowed: Bool)>(([], false, false))
    public let limit: Int
    private let wake: @Sendable () -> Void
    private let overflow: @Sendable () -> Void

    public init(limit: Int, wake: @escaping @Sendable () -> Void, overflow: @escaping @Sendable () -> Void) {
        self.limit = limit
        self.wake = wake
        self.overflow = overflow
    }

    func append(_ line: [UInt8]) {
        enum Action { case none, wake, overflow }
        let action: Action = state.withLock { s in
            if s.overflowed { return .none }
            if s.pending.count + line.count > limit {
                s.overflowed = true
                s.pending = []
                return .overflow
            }
            s.pending += line
            if s.scheduled { return .none }
            s.scheduled = true
            return .wake
        }
        switch action {
        case .none: break
        case .wake: wake()
        case .overflow: overflow()
        }
    }

    /// The lines waiting, handed to the connection (which then writes them).
    public func take() -> [UInt8] {
        state.withLock { s in
            s.scheduled = false
            defer { s.pending = [] }
            return s.pending
        }
    }
}
