import CLua
import Crypto
import RESP
import Synchronization

/// The server's scripting: one Lua state, the script cache, and the running script's state
/// that other clients see (BUSY, SCRIPT KILL).
///
/// Scripts run one at a time: the Lua state is one, as in Redis. The server runs EVAL and
/// friends off the workers (`Command.Flags.long`), so while a script runs the other clients
/// are served: commands on other keys go on, a write to a key the script locked waits for it,
/// and once the script has run past `busy-reply-threshold` every command but a few gets
/// `-BUSY` from the admission step (`busyRefusal`).
///
/// Locks: a script holds the lock stripes of the keys it declares (KEYS) for the whole run.
/// When it touches a key it did not declare (or a command reading or writing unnamed keys:
/// KEYS, SCAN, FLUSHDB, RANGE), the run is abandoned and run again holding every stripe (the
/// slower path: other clients' writes wait meanwhile). Nothing of the abandoned run is seen:
/// its writes were only staged in its batch.
///
/// `@unchecked Sendable`: the Lua state is reached only under `lua`'s lock; `budget` points
/// into it and only its kill flag is written from other threads (see `LuaState`).
final class Scripting: @unchecked Sendable {
    let lua: Mutex<LuaState>
    private let budget: UnsafeMutablePointer<cairn_lua_budget>
    /// Script bodies by SHA1 (SCRIPT EXISTS reads this without waiting for a running script).
    private let bodies = Mutex<[String: [UInt8]]>([:])
    /// Unix milliseconds the running script started; 0 when none runs.
    private let runningSince = Atomic<Int64>(0)
    /// The session running it (its own `redis.call`s are not BUSY).
    private let runningSession = Atomic<Int64>(0)
    /// Whether it ran a write command (then SCRIPT KILL refuses, as Redis does).
    private let runningWrote = Atomic<Bool>(false)
    /// What runs and the request that ran it (FUNCTION STATS, the BUSY texts); nil when none.
    private let running = Mutex<(target: ScriptTarget, argv: [[UInt8]])?>(nil)
    /// The function libraries (Functions.swift); changed only under `lua`'s lock.
    let libraries = Mutex(LoadedLibraries())
    /// Set by SHUTDOWN: the running script ends and its staged writes are dropped.
    private let shuttingDown = Atomic<Bool>(false)

    init() {
        let state = LuaState()
        budget = state.budget
        lua = Mutex(state)
    }

    static func sha1(_ bytes: [UInt8]) -> String {
        Insecure.SHA1.hash(data: bytes).map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    // MARK: cache

    func exists(_ sha: String) -> Bool { bodies.withLock { $0[sha] != nil } }

    /// Compiles and keeps `body`; its SHA1. Throws Redis's compile error.
    @discardableResult
    func load(_ body: [UInt8]) throws(CommandError) -> String {
        let sha = Scripting.sha1(body)
        try lua.withLock { (state: inout LuaState) throws(CommandError) in try state.compile(sha, Scripting.stripShebang(body).body) }
        bodies.withLock { $0[sha] = body }
        return sha
    }

    func flush() {
        lua.withLock { $0.flush() }
        bodies.withLock { $0 = [:] }
    }

    /// A script's `#!lua flags=...` first line: whether it declared `no-writes`, and the body
    /// with that line emptied (so line numbers stay). Throws Redis's errors for others.
    static func stripShebang(_ body: [UInt8]) throws(CommandError) -> (body: [UInt8], noWrites: Bool) {
        guard body.starts(with: Array("#!".utf8)) else { return (body, false) }
        let end = body.firstIndex(of: UInt8(ascii: "\n")) ?? body.endIndex
        let words = Bytes.text(Array(body[2..<end])).split(separator: " ").map(String.init)
        guard words.first == "lua" else {
            throw CommandError("ERR", "Unexpected engine in script shebang: \(words.first ?? "")")
        }
        var noWrites = false
        for word in words.dropFirst() {
            guard word.hasPrefix("flags=") else { throw CommandError("ERR", "Unknown lua shebang option: \(word)") }
            for flag in word.dropFirst(6).split(separator: ",") where !flag.isEmpty {
                switch flag {
                case "no-writes": noWrites = true
                case "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys": break
                default: throw CommandError("ERR", "Unexpected flag in script shebang: \(flag)")
                }
            }
        }
        return (Array(body[end...]), noWrites)
    }

    // MARK: running

    /// Runs a script (compiled already, or `body` given to compile) with its KEYS and ARGV
    /// for `call`'s session, and writes its reply to `out`.
    func run(
        _ call: Call, sha: String, body: [UInt8]?, keys: [[UInt8]], args: [[UInt8]], readOnly: Bool,
        out: inout RESPWriter
    ) throws(CommandError) {
        let stored = body ?? bodies.withLock { $0[sha] }
        guard let stored else { throw ScriptingCommands.noScript }
        let (source, noWrites) = try Scripting.stripShebang(stored)
        try execute(call, .script(sha: sha), keys: keys, args: args, readOnly: readOnly || noWrites, out: &out) {
            (state: LuaState) throws(CommandError) in
            try state.compile(sha, source)
            if body != nil { self.bodies.withLock { $0[sha] = stored } }
        }
    }

    /// Runs `target` under the locks of its keys (or every stripe), one run at a time, and
    /// writes its reply to `out`. `prepare` runs first under the Lua state's lock.
    func execute(
        _ call: Call, _ target: ScriptTarget, keys: [[UInt8]], args: [[UInt8]], readOnly: Bool, out: inout RESPWriter,
        prepare: @escaping (LuaState) throws(CommandError) -> Void
    ) throws(CommandError) {
        let engine = call.engine
        let session = call.session
        let version = out.version
        let argv = call.argv
        // Stripes first, then the Lua state, on every path (EXEC takes its stripes before it
        // runs a queued EVAL): one order, so no deadlock between a script and an EXEC.
        let once = { (held: Set<Int>?, insideExec: Bool) throws(CommandError) -> [UInt8]? in
            try self.lua.withLock { (state: inout LuaState) throws(CommandError) -> [UInt8]? in
                self.budget.pointee.killRequested = 0
                try prepare(state)
                self.runningWrote.store(false, ordering: .relaxed)
                self.runningSession.store(session.id, ordering: .relaxed)
                self.running.withLock { $0 = (target, argv) }
                self.runningSince.store(Clock.milliseconds(), ordering: .releasing)
                defer {
                    self.runningSince.store(0, ordering: .releasing)
                    self.running.withLock { $0 = nil }
                }
                if insideExec {
                    let run = self.makeRun(engine, session, target, readOnly, held: held, insideExec: true)
                    var out = RESPWriter(version: version)
                    state.call(run, keys: keys, args: args, out: &out)
                    return out.bytes
                }
                return try self.attempt(engine, session, target, readOnly, held: held, state: state, keys: keys, args: args, version: version)
            }
        }
        let family = session.family
        let declared = Set(keys.map { engine.locks.stripe(for: $0, in: family) })
        let reply: [UInt8]
        if session.transaction != nil {
            // Inside EXEC: its transaction holds the declared keys' stripes and commits.
            reply = try once(declared, true) ?? []
        } else if let bytes = try engine.locks.withLocks(keys, in: family, { () throws(CommandError) in try once(declared, false) }) {
            reply = bytes
        } else {
            reply = try engine.locks.withEveryStripe { () throws(CommandError) in try once(nil, false) } ?? []
        }
        out.bytes.append(contentsOf: reply)
    }

    private func makeRun(_ engine: Engine, _ session: Session, _ target: ScriptTarget, _ readOnly: Bool, held: Set<Int>?, insideExec: Bool) -> ScriptRun {
        let budget = self.budget
        return ScriptRun(
            engine: engine, session: session, target: target, readOnly: readOnly, held: held, insideExec: insideExec,
            onFirstWrite: { self.runningWrote.store(true, ordering: .relaxed) },
            stop: { budget.pointee.killRequested = 1 })
    }

    /// One run holding `held` (nil: every stripe) in a transaction of its own: the reply, or
    /// nil when the script touched a key outside `held` (run it again with every stripe).
    private func attempt(
        _ engine: Engine, _ session: Session, _ target: ScriptTarget, _ readOnly: Bool, held: Set<Int>?, state: LuaState,
        keys: [[UInt8]], args: [[UInt8]], version: RESPVersion
    ) throws(CommandError) -> [UInt8]? {
        let tx = Transaction()
        let family = session.family
        session.transaction = tx
        defer {
            session.transaction = nil
            // As in Redis 7, a script's SELECT (here CF.USE) does not outlive it.
            if session.family !== family { session.family = family }
        }
        let run = makeRun(engine, session, target, readOnly, held: held, insideExec: false)
        var out = RESPWriter(version: version)
        state.call(run, keys: keys, args: args, out: &out)
        if run.needsEveryStripe && held != nil { return nil }
        // Writes made before a script error stay, as in Redis; a shutdown drops them.
        if !tx.isEmpty && !shuttingDown.load(ordering: .relaxed) {
            do {
                try engine.commit(tx)
            } catch {
                var failed = RESPWriter(version: version)
                engine.reply(error, to: &failed)
                return failed.bytes
            }
            session.outcome.wroteToWAL = true
        } else if tx.isEmpty && !tx.events.isEmpty {
            engine.publish(tx.events)  // key misses of a script that wrote nothing
        }
        return out.bytes
    }

    // MARK: other clients

    /// `-BUSY` for a command of another client while a script has run past
    /// `busy-reply-threshold` (0 or less: never), except the commands Redis lets through.
    func busyRefusal(_ command: Command, session: Session, engine: Engine) -> CommandError? {
        let since = runningSince.load(ordering: .acquiring)
        guard since != 0, runningSession.load(ordering: .relaxed) != session.id else { return nil }
        let threshold = engine.configuration.busyReplyThreshold
        guard threshold > 0, Clock.milliseconds() - since >= Int64(threshold) else { return nil }
        if Scripting.allowedWhileBusy.contains(command.name) { return nil }
        return busyError(function: runningTarget?.isFunction ?? false)
    }

    static let allowedWhileBusy: Set<String> = [
        "auth", "hello", "multi", "discard", "watch", "unwatch", "quit", "shutdown", "script|kill", "function|kill",
        "function|stats",
    ]

    /// Redis's BUSY texts: which KILL ends what runs.
    func busyError(function: Bool) -> CommandError {
        CommandError("BUSY", "Redis is busy running a script. You can only call \(function ? "FUNCTION" : "SCRIPT") KILL or SHUTDOWN NOSAVE.")
    }

    /// Whether `session`'s script is running now (its commands are the script's).
    func isRunning(for session: Session) -> Bool {
        runningSince.load(ordering: .acquiring) != 0 && runningSession.load(ordering: .relaxed) == session.id
    }

    /// What runs now, if anything.
    var runningTarget: ScriptTarget? { running.withLock { $0?.target } }

    /// The running function for FUNCTION STATS: its name, the request, milliseconds so far.
    var runningFunction: (name: String, argv: [[UInt8]], milliseconds: Int64)? {
        let since = runningSince.load(ordering: .acquiring)
        guard since != 0, let now = running.withLock({ $0 }), case .function(_, let name) = now.target else { return nil }
        return (name, now.argv, max(0, Clock.milliseconds() - since))
    }

    /// SCRIPT KILL (`function` false) or FUNCTION KILL: stops the running script unless it
    /// wrote, or it is of the other kind (Redis's BUSY text naming the right KILL).
    func kill(function: Bool = false) throws(CommandError) {
        guard runningSince.load(ordering: .acquiring) != 0, let target = runningTarget else {
            throw CommandError("NOTBUSY", "No scripts in execution right now.")
        }
        guard !runningWrote.load(ordering: .relaxed) else {
            throw CommandError(
                "UNKILLABLE",
                "Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
            )
        }
        guard target.isFunction == function else { throw busyError(function: target.isFunction) }
        budget.pointee.killRequested = 1
    }

    /// SHUTDOWN: the running script (if any) stops and its staged writes are dropped, so the
    /// server can close; scripts started later do not commit either.
    func stopForShutdown() {
        shuttingDown.store(true, ordering: .relaxed)
        if runningSince.load(ordering: .acquiring) != 0 { budget.pointee.killRequested = 1 }
    }
}

extension Engine {
    /// Stops the running script, if any, dropping its staged writes; scripts started later
    /// commit nothing. The server calls this when it begins shutting down.
    public func stopScripts() { scripting.stopForShutdown() }
}
