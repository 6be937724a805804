import Synchronization

/// The slow log: the latest requests that ran longer than `slowlog-log-slower-than`
/// microseconds, at most `slowlog-max-len` of them, newest first.
/// https://redis.io/docs/latest/commands/slowlog-get/
///
/// Fed by `Engine.completed`, the one spot every executor reports to. The thresholds are
/// atomics, so a request under the threshold takes no lock; only an entry being added does.
public final class SlowLog: Sendable {
    public struct Entry: Sendable {
        public let id: Int64
        /// Unix seconds when the request finished.
        public let time: Int64
        public let microseconds: Int64
        /// The request as Redis keeps it (`trimmed`).
        public let argv: [[UInt8]]
        public let address: String
        public let clientName: String
    }

    /// `slowlog-log-slower-than`: negative disables, 0 logs every request.
    let slowerThan = Atomic<Int>(10_000)
    let maxLength = Atomic<Int>(128)
    private let state = Mutex<(nextID: Int64, entries: [Entry])>((0, []))

    /// Redis's limits for what an entry keeps of a request.
    static let maxArguments = 32
    static let maxArgumentBytes = 128

    init() {}

    func apply(_ c: Configuration) {
        slowerThan.store(c.slowlogLogSlowerThan, ordering: .relaxed)
        maxLength.store(c.slowlogMaxLen, ordering: .relaxed)
        state.withLock { s in if s.entries.count > c.slowlogMaxLen { s.entries.removeLast(s.entries.count - c.slowlogMaxLen) } }
    }

    /// Whether a request that took `microseconds` belongs in the log.
    @inline(__always)
    func wants(_ microseconds: Int) -> Bool {
        let threshold = slowerThan.load(ordering: .relaxed)
        return threshold >= 0 && microseconds >= threshold
    }

    func add(_ argv: [[UInt8]], microseconds: Int, session: Session, now: Int64) {
        let kept = SlowLog.trimmed(argv)
        let name = session.record.name
        let limit = maxLength.load(ordering: .relaxed)
        state.withLock { s in
            let entry = Entry(id: s.nextID, time: now / 1000, microseconds: Int64(microseconds), argv: kept,
                              address: session.record.address, clientName: name)
            s.nextID += 1
            s.entries.insert(entry, at: 0)
            if s.entries.count > limit { s.entries.removeLast(s.entries.count - limit) }
        }
    }

    /// The newest `count` entries (all when negative).
    public func latest(_ count: Int) -> [Entry] {
        state.withLock { s in count < 0 ? s.entries : Array(s.entries.prefix(count)) }
    }

    public var count: Int { state.withLock { $0.entries.count } }

    public func reset() { state.withLock { $0.entries.removeAll() } }

    /// At most 32 arguments, the last of them replaced by "... (N more arguments)" when there
    /// are more; each argument cut at 128 bytes with "... (N more bytes)". Passwords redacted.
    static func trimmed(_ argv: [[UInt8]]) -> [[UInt8]] {
        let argv = redacted(argv)
        let shown = min(argv.count, maxArguments)
        var out: [[UInt8]] = []
        out.reserveCapacity(shown)
        for i in 0..<shown {
            if i == maxArguments - 1 && argv.count > maxArguments {
                out.append(Array("... (\(argv.count - maxArguments + 1) more arguments)".utf8))
            } else if argv[i].count > maxArgumentBytes {
                out.append(Array(argv[i].prefix(maxArgumentBytes)) + Array("... (\(argv[i].count - maxArgumentBytes) more bytes)".utf8))
            } else {
                out.append(argv[i])
            }
        }
        return out
    }

    /// The request with its secrets replaced by "(redacted)", as Redis shows AUTH and HELLO
    /// in the slow log and to MONITOR.
    static func redacted(_ argv: [[UInt8]]) -> [[UInt8]] {
        guard let name = argv.first, name.count == 4 || name.count == 5 else { return argv }
        let hidden = Array("(redacted)".utf8)
        if name.isKeyword("AUTH") {
            return [argv[0]] + argv.dropFirst().map { _ in hidden }
        }
        if name.isKeyword("HELLO"), let at = argv.firstIndex(where: { $0.isKeyword("AUTH") }) {
            var copy = argv
            for i in (at + 1)..<min(at + 3, argv.count) { copy[i] = hidden }
            return copy
        }
        return argv
    }
}
