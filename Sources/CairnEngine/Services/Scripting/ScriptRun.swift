import CLua
import RESP

/// What a run runs: a script of the cache (EVAL, EVALSHA) or a library's function (FCALL).
enum ScriptTarget: Equatable {
    case script(sha: String)
    case function(library: String, name: String)

    /// How its errors name it (`script: <name>, on ...`).
    var errorName: String {
        switch self {
        case .script(let sha): sha
        case .function(_, let name): name
        }
    }

    var isFunction: Bool {
        if case .function = self { true } else { false }
    }
}

/// One running script as `redis.call` sees it: whose it is, which lock stripes it holds, and
/// what it did so far.
///
/// Every `redis.call` passes the same door as a client's request (`Engine.screen`, then
/// `Engine.admitted` and `Engine.run`) and writes into the session's transaction, so the
/// script's writes commit as one batch and its reads see its own earlier writes.
final class ScriptRun {
    let engine: Engine
    let session: Session
    let target: ScriptTarget
    /// EVAL_RO, EVALSHA_RO, or a `#!lua flags=no-writes` script: writes are refused.
    let readOnly: Bool
    /// The family the held stripes belong to (the session's when the script started).
    let family: Family
    /// The lock stripes held for this run; nil when every stripe is held.
    let held: Set<Int>?
    /// Run by EXEC, whose transaction holds the locks and commits.
    let insideExec: Bool
    /// The protocol replies reach the script in (`redis.setresp`).
    var resp: RESPVersion = .v2
    /// A command touched a key whose stripe is not held: the run stops and is retried holding
    /// every stripe (its writes were only staged, so nothing of it is seen).
    private(set) var needsEveryStripe = false
    /// Called once, at the first write command (SCRIPT KILL then refuses, as Redis does).
    let onFirstWrite: () -> Void
    private var wrote = false
    /// Called when the run must stop at once (a retry with every stripe).
    let stop: () -> Void

    init(
        engine: Engine, session: Session, target: ScriptTarget, readOnly: Bool, held: Set<Int>?, insideExec: Bool,
        onFirstWrite: @escaping () -> Void, stop: @escaping () -> Void
    ) {
        self.engine = engine
        self.session = session
        self.target = target
        self.readOnly = readOnly
        self.family = session.family
        self.held = held
        self.insideExec = insideExec
        self.onFirstWrite = onFirstWrite
        self.stop = stop
    }

    /// Commands a script may not run besides those the spec flags `noscript` (Redis's) or
    /// `no_multi` (they act outside the script's batch): BLMPOP and BZMPOP, and every
    /// subcommand of the containers whose other subcommands Redis refuses (HELP included).
    static let refused: Set<String> = ["blmpop", "bzmpop", "acl", "client", "config", "function", "latency", "script", "slowlog"]

    /// Runs one `redis.call`/`redis.pcall` and returns its reply (an error reply for a refusal).
    func execute(_ argv: [[UInt8]]) -> RESPValue {
        if needsEveryStripe { return .error("ERR the script is being retried") }
        let command: Command
        switch engine.lookup(argv, first: argv[0]) {
        case .success(let c): command = c
        case .failure(let error):
            if engine.table.command(named: argv[0]) == nil {
                return .error("ERR Unknown Redis command called from script")
            }
            if error.message.hasPrefix("wrong number of arguments") {
                return .error("ERR Wrong number of args calling Redis command from script")
            }
            return .error(error.wire)
        }
        let top = command.name.split(separator: "|").first.map(String.init) ?? command.name
        if !command.flags.isDisjoint(with: [.noscript, .noTransaction]) || ScriptRun.refused.contains(top) {
            return .error("ERR This Redis command is not allowed from script")
        }
        if readOnly && (command.flags.contains(.write) || command.flags.contains(.mayReplicate)) {
            return .error("ERR Write commands are not allowed from read-only scripts.")
        }
        guard holdsLocks(command, argv) else {
            if insideExec {
                return .error("ERR a script run by EXEC may only access the keys it declares")
            }
            needsEveryStripe = true
            stop()
            return .error("ERR the script is being retried")
        }
        switch engine.screen(argv, session: session) {
        case .unknown(let error):
            return .error(error.wire)
        case .refused(let c, let error):
            engine.admitted(c.name, session: session)
            return .error(error.wire)
        case .admitted(let c):
            engine.admitted(c.name, session: session)
            if c.flags.contains(.write) && !wrote {
                wrote = true
                onFirstWrite()
            }
            var out = RESPWriter(version: resp)
            engine.run(c, argv, session: session, out: &out)
            var parser = ValueParser()
            parser.append(out.bytes)
            return (try? parser.next()) ?? .error("ERR the command's reply could not be read")
        }
    }

    /// Whether the stripes held cover what `command` touches: its keys in the family the run
    /// locked; a command that reads or writes data without naming keys (KEYS, SCAN, FLUSHDB,
    /// RANGE) needs every stripe.
    private func holdsLocks(_ command: Command, _ argv: [[UInt8]]) -> Bool {
        guard let held else { return true }
        let keys = command.keys(in: argv)
        if keys.isEmpty {
            return !command.flags.contains(.write) && !command.flags.contains(.readonly)
        }
        guard session.family === family else { return false }
        return keys.allSatisfy { held.contains(engine.locks.stripe(for: $0, in: family)) }
    }
}
