import Synchronization

/// CLIENT PAUSE: requests wait (they are not refused) until the pause ends, by its timeout or
/// CLIENT UNPAUSE. `WRITE` holds write commands (and EXEC of a transaction that writes),
/// `ALL` every command, CLIENT UNPAUSE included, as in Redis.
/// https://redis.io/docs/latest/commands/client-pause/
///
/// The server asks `Engine.pauseDelay` before it routes each request; when nothing is paused
/// that is one relaxed load.
public final class ClientPause: Sendable {
    /// Unix milliseconds when the pause ends; 0 when none.
    private let until = Atomic<Int64>(0)
    private let everything = Atomic<Bool>(false)

    init() {}

    /// Pauses until `end` (Unix ms). A pause in place keeps its later end and its stricter
    /// mode, as Redis's `pauseClients`.
    func pause(until end: Int64, all: Bool) {
        let now = Clock.milliseconds()
        if until.load(ordering: .relaxed) <= now { everything.store(false, ordering: .relaxed) }
        if all { everything.store(true, ordering: .relaxed) }
        _ = until.max(end, ordering: .relaxed)
    }

    func unpause() {
        until.store(0, ordering: .relaxed)
        everything.store(false, ordering: .relaxed)
    }

    /// Milliseconds left, and whether every command waits; nil when not paused.
    @inline(__always)
    func current() -> (milliseconds: Int64, all: Bool)? {
        let end = until.load(ordering: .relaxed)
        guard end > 0 else { return nil }
        let left = end - Clock.milliseconds()
        return left > 0 ? (left, everything.load(ordering: .relaxed)) : nil
    }
}

extension Engine {
    /// How many milliseconds this request must wait for a CLIENT PAUSE to end before it runs,
    /// or nil when it may run now. A request MULTI only queues is not held; its EXEC is, when
    /// it writes.
    public func pauseDelay(_ argv: [[UInt8]], session: Session) -> Int64? {
        guard let first = argv.first else { return nil }
        return pauseDelay(lookup(argv, first: first), session: session)
    }

    /// `pauseDelay` of a request whose command `looked` already is (`admit`).
    func pauseDelay(_ looked: Result<Command, CommandError>, session: Session) -> Int64? {
        guard let (left, all) = pause.current() else { return nil }
        if all { return left }
        guard case .success(let command) = looked else { return nil }
        if session.inTransaction && !command.flags.contains(.noMulti) { return nil }
        // A may-replicate read (PFCOUNT, which may store the count it computed) waits as a
        // write does, as in Redis.
        let changing: Command.Flags = [.write, .mayReplicate]
        var writes = !command.flags.isDisjoint(with: changing)
        if command.name == "exec", let queued = session.queued {
            writes = queued.contains { !(table.command(named: $0[0])?.flags.isDisjoint(with: changing) ?? true) }
        }
        return writes ? left : nil
    }
}
