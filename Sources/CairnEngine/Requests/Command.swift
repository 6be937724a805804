import RESP

/// One entry of the command table: a name from the command spec (`CommandSpec`, which gives its
/// arity, flags, key positions and what `COMMAND` reports) bound to its handler and to the
/// behaviour Swift gives it (grouping, key finders, work, counters). The handlers live with
/// their data types (`Types/`) and services, one file per family.
public struct Command: Sendable {
    /// The fields live in one shared box: a request's lookup copies its command out of the
    /// table, and one retain costs less than one per string, closure and dictionary (callgrind
    /// counted 400-900 instructions a request in the copies). The spec's facts sit in the box
    /// itself, read at a fixed offset. Copy-on-write: the setters below run only while the
    /// table is built.
    private final class Storage: @unchecked Sendable {  // written only through `unique()`
        let spec: CommandSpec
        var handler: Handler
        var subcommands: [String: Command]
        var index = 0
        var grouping: (@Sendable ([[UInt8]], Session) -> Grouping?)? = nil
        var movableKeys: (@Sendable ([[UInt8]]) -> [[UInt8]])? = nil
        var keyRanges: (@Sendable ([[UInt8]], Session) -> [KeyRange])? = nil
        var work: (@Sendable (Command, Call) throws(CommandError) -> UInt64)? = nil

        init(spec: CommandSpec, handler: @escaping Handler, subcommands: [String: Command]) {
            self.spec = spec
            self.handler = handler
            self.subcommands = subcommands
        }

        func copy() -> Storage {
            let c = Storage(spec: spec, handler: handler, subcommands: subcommands)
            c.index = index
            c.grouping = grouping
            c.movableKeys = movableKeys
            c.keyRanges = keyRanges
            c.work = work
            return c
        }
    }

    private var storage: Storage

    /// The box, copied first when another command shares it.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// Lower-case name, e.g. `get`, or `client|setname` for a subcommand.
    public var name: String { storage.spec.name }
    /// Redis arity: N means exactly N arguments including the name; -N means at least N.
    public var arity: Int { storage.spec.arity }
    public var flags: Flags { storage.spec.flags }
    /// Key positions as Redis's legacy (first, last, step); 0 for commands without keys.
    public var firstKey: Int { storage.spec.firstKey }
    public var lastKey: Int { storage.spec.lastKey }
    public var keyStep: Int { storage.spec.keyStep }
    /// Its facts from the command spec: what COMMAND INFO and DOCS report.
    var spec: CommandSpec { storage.spec }
    /// The Redis command group (`string`, `generic`, `sorted-set`, `server`, `cairn`...).
    public var group: String { storage.spec.group }
    public var summary: String { storage.spec.summary }
    public var since: String { storage.spec.since }
    /// Its arguments as one line of syntax, e.g. `key value [NX|XX]`, from the spec's arguments.
    public var arguments: String { storage.spec.syntax }
    var handler: Handler { storage.handler }
    /// Subcommands (CLIENT, CONFIG, COMMAND...), dispatched on the second argument.
    public internal(set) var subcommands: [String: Command] {
        get { storage.subcommands }
        set { unique().subcommands = newValue }
    }
    /// Position in the table's metrics (`CommandMetricsTable`), set by `CommandTable`.
    var index: Int {
        get { storage.index }
        set { unique().index = newValue }
    }
    /// Its ACL categories, from the spec.
    public var aclCategories: ACLCategories { storage.spec.aclCategories }
    /// When a request of this command may run together with its neighbours (`grouped(_:)`),
    /// given its arguments and session; nil: always alone, through `Engine.execute`.
    var grouping: (@Sendable ([[UInt8]], Session) -> Grouping?)? { storage.grouping }

    /// How the server may run a request together with its neighbours, once it passed the
    /// admission step (`Engine.screen`): the same rules, another executor.
    public enum Grouping: Sendable {
        /// Consecutive requests of one client read with one MultiGet (`Engine.executePlainGets`).
        case read
        /// Requests of every client served in one poller round run by their own handlers over
        /// one transaction overlay and committed as one batch (`Engine.executeBatched`).
        case batched

        /// Most consecutive requests of one client in one group. GETs fetch every value of
        /// their group before writing any (RocksDB copies memtable values out), so a group of
        /// big values costs its sum at once: 16 keeps that small and still covers a pipeline of
        /// 16 (1,024 GETs of a 1 MiB value held a bystander 2.25 s).
        public var mostRequests: Int {
            switch self {
            case .read: 16
            case .batched: Engine.maxBatched
            }
        }
    }

    /// For a command whose keys are not at fixed positions (EVAL's `numkeys`): finds them, for
    /// `keys(in:)` (EXEC's locks, ACL key patterns, size limits).
    var movableKeys: (@Sendable ([[UInt8]]) -> [[UInt8]])? { storage.movableKeys }

    /// This command with keys found by `finder` (see `movableKeys`).
    func movingKeys(_ finder: @escaping @Sendable ([[UInt8]]) -> [[UInt8]]) -> Command {
        var copy = self
        copy.unique().movableKeys = finder
        return copy
    }

    /// For a command that reaches keys it does not name (an ordered range, or every key):
    /// those ranges, for the ACL key patterns (`Guardrails.denial`). A request for which it
    /// returns nothing reaches no key besides `keys(in:)`.
    var keyRanges: (@Sendable ([[UInt8]], Session) -> [KeyRange])? { storage.keyRanges }

    /// This command reaching the ranges `finder` returns (see `keyRanges`).
    func reaching(_ finder: @escaping @Sendable ([[UInt8]], Session) -> [KeyRange]) -> Command {
        var copy = self
        copy.unique().keyRanges = finder
        return copy
    }

    /// Whether the table says which keys the command reaches: key positions, a key finder or
    /// key ranges. A command with none reaches no key (the ACL walk test holds the list).
    package var declaresKeys: Bool { firstKey > 0 || movableKeys != nil || keyRanges != nil }

    /// This command reaching every key, for reading or, when `write`, changing them.
    func reachingEverything(write: Bool) -> Command {
        reaching { _, _ in [.everything(write: write)] }
    }

    /// For a command whose work grows with the collections it touches: about how many members
    /// a request will read or write, measured before it runs (LongWork.swift). Past
    /// `Engine.longWorkMembers` it runs off the worker.
    var work: (@Sendable (Command, Call) throws(CommandError) -> UInt64)? { storage.work }

    /// This command with its work measured by `measure` (see `work`).
    func measuringWork(_ measure: @escaping @Sendable (Command, Call) throws(CommandError) -> UInt64) -> Command {
        var copy = self
        copy.unique().work = measure
        return copy
    }

    /// This command with a grouping rule (see `grouping`).
    func grouped(_ rule: @escaping @Sendable ([[UInt8]], Session) -> Grouping?) -> Command {
        var copy = self
        copy.unique().grouping = rule
        return copy
    }

    typealias Handler = @Sendable (Call, inout RESPWriter) throws(CommandError) -> Void

    /// Redis's command flags, which the spec gives each command (COMMAND INFO lists them, but
    /// `may_replicate`), and Cairn's own behaviour switches (`long`, `noMulti`), which it does not
    /// list. Two names differ from Redis's: Redis's `no_multi` is `noTransaction` here, and
    /// `noMulti` is Cairn's `not_queued`.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Writes data: refused on a read-only replica, in disk-full mode and in read-only
        /// scripts; needs a write key pattern; held by CLIENT PAUSE WRITE.
        public static let write = Flags(rawValue: 1 << 0)
        public static let readonly = Flags(rawValue: 1 << 1)
        /// Hidden from MONITOR; its ACL categories are @admin, @dangerous and @slow or @fast only.
        public static let admin = Flags(rawValue: 1 << 2)
        /// Allowed before AUTH (AUTH, HELLO, QUIT, RESET).
        public static let noAuth = Flags(rawValue: 1 << 3)
        /// Runs immediately inside MULTI instead of being queued (EXEC, DISCARD, WATCH...):
        /// the spec's Cairn flag `not_queued`.
        public static let noMulti = Flags(rawValue: 1 << 4)
        /// Counted as `fast-command` by the latency monitor.
        public static let fast = Flags(rawValue: 1 << 5)
        public static let loading = Flags(rawValue: 1 << 7)
        public static let stale = Flags(rawValue: 1 << 8)
        /// Refused inside MULTI, which then fails EXEC (EXECABORT), and in scripts: the command
        /// acts outside the transaction's write batch (CF.CREATE, CF.DROP, backups, COMPACT), so
        /// running it from EXEC could not be atomic with the rest. Redis's `no_multi`.
        public static let noTransaction = Flags(rawValue: 1 << 9)
        /// Takes time in proportion to the whole database (DBSIZE, KEYS, COMPACT): the server
        /// runs it off the connection's worker (`Engine.Route.long`). The spec's Cairn flag `long`.
        public static let long = Flags(rawValue: 1 << 10)
        /// Not entered in the slow log (EXEC: its commands are, one by one). Redis's `skip_slowlog`.
        public static let skipSlowlog = Flags(rawValue: 1 << 11)
        /// May name no key at all (EVAL, FCALL and their variants with `numkeys` 0): COMMAND
        /// GETKEYS answers an empty list for it where it refuses other commands' requests
        /// without keys. Redis's `no_mandatory_keys`.
        public static let noMandatoryKeys = Flags(rawValue: 1 << 12)
        /// A command that is not a write but may still change data or reach replicas (PFCOUNT
        /// stores the count it computed, PUBLISH, EVAL): a read-only script may not call it and
        /// CLIENT PAUSE WRITE holds it. Redis's `may_replicate`, which COMMAND INFO does not list.
        public static let mayReplicate = Flags(rawValue: 1 << 13)
        /// Refused in scripts (`ScriptRun`). Redis's `noscript`.
        public static let noscript = Flags(rawValue: 1 << 14)
        // Reported by COMMAND INFO as Redis reports them; Cairn's behaviour does not read them.
        public static let denyoom = Flags(rawValue: 1 << 15)
        public static let pubsub = Flags(rawValue: 1 << 16)
        public static let blocking = Flags(rawValue: 1 << 17)
        public static let skipMonitor = Flags(rawValue: 1 << 18)
        public static let asking = Flags(rawValue: 1 << 19)
        public static let noAsyncLoading = Flags(rawValue: 1 << 20)
        public static let allowBusy = Flags(rawValue: 1 << 21)
        /// Keys at positions the legacy (first, last, step) cannot give: derived from the key
        /// specs, as Redis derives it.
        public static let movableKeys = Flags(rawValue: 1 << 22)

        /// Names as `COMMAND INFO` prints them, in Redis's order (`may_replicate` and Cairn's
        /// own switches are not printed).
        public var names: [String] {
            Self.printed.filter { contains($0.0) }.map(\.1)
        }

        private static let printed: [(Flags, String)] = [
            (.write, "write"), (.readonly, "readonly"), (.denyoom, "denyoom"), (.admin, "admin"), (.pubsub, "pubsub"),
            (.noscript, "noscript"), (.blocking, "blocking"), (.loading, "loading"), (.stale, "stale"),
            (.skipMonitor, "skip_monitor"), (.skipSlowlog, "skip_slowlog"), (.asking, "asking"), (.fast, "fast"),
            (.noAuth, "no_auth"), (.noMandatoryKeys, "no_mandatory_keys"), (.noAsyncLoading, "no_async_loading"),
            (.noTransaction, "no_multi"), (.movableKeys, "movablekeys"), (.allowBusy, "allow_busy"),
        ]
    }

    /// The table's entry for `name` (`get`, `client|setname`), with its facts from the spec,
    /// answered by `handler`; a container lists its `subcommands`. A name the spec lacks gets
    /// an arity no request fits, and `CommandTable.unspecified` names it.
    init(_ name: String, subcommands: [Command] = [], handler: @escaping Handler) {
        storage = Storage(
            spec: CommandSpec.named[name] ?? .missing(name), handler: handler,
            subcommands: Dictionary(uniqueKeysWithValues: subcommands.map { ($0.name.split(separator: "|").last.map(String.init) ?? $0.name, $0) }))
    }

    /// True when `count` arguments (including the name) satisfy the arity.
    func accepts(_ count: Int) -> Bool {
        arity >= 0 ? count == arity : count >= -arity
    }

    /// The keys of a request, from the key positions.
    public func keys(in argv: [[UInt8]]) -> [[UInt8]] {
        if let movableKeys { return movableKeys(argv) }
        guard firstKey > 0, firstKey < argv.count else { return [] }
        let last = lastKey < 0 ? argv.count + lastKey : min(lastKey, argv.count - 1)
        guard last >= firstKey else { return [] }
        return stride(from: firstKey, through: last, by: max(1, keyStep)).map { argv[$0] }
    }

    /// `keys(in:)` appended to `keys` in `family`, without an array of their own: what a
    /// batched round collects for its locks, request by request.
    func appendKeys(in argv: [[UInt8]], in family: Family, to keys: inout [(key: [UInt8], family: Family)]) {
        if let movableKeys {
            for key in movableKeys(argv) { keys.append((key, family)) }
            return
        }
        guard firstKey > 0, firstKey < argv.count else { return }
        let last = lastKey < 0 ? argv.count + lastKey : min(lastKey, argv.count - 1)
        guard last >= firstKey else { return }
        for i in stride(from: firstKey, through: last, by: max(1, keyStep)) { keys.append((argv[i], family)) }
    }
}

/// What a handler sees of one request.
public struct Call {
    public let engine: Engine
    public let session: Session
    public let argv: [[UInt8]]
    /// The command's display name for errors, e.g. `get` or `client|setname`.
    public let name: String
    /// Unix milliseconds when the command started. One reading per command, as Redis's command
    /// time snapshot: `SET k v PX 1` computes its expiry and checks it against the same instant,
    /// so a clock tick between the two cannot drop a key that was just acknowledged.
    public let now: Int64 = Clock.milliseconds()

    var count: Int { argv.count }
    subscript(_ i: Int) -> [UInt8] { argv[i] }

    /// The i-th argument as an integer, with Redis's error text.
    func integer(_ i: Int) throws(CommandError) -> Int64 {
        guard let v = Bytes.int64(argv[i]) else { throw .notInteger }
        return v
    }

    func text(_ i: Int) -> String { Bytes.text(argv[i]) }
}
