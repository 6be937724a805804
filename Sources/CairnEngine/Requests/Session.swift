public import RESP
public import Rocks

/// The state of one client connection as the engine sees it.
///
/// Not Sendable in spirit: the server touches a session only on its connection's serial queue.
/// What other connections may read (`CLIENT LIST`) lives in `record`, which is locked.
public final class Session: @unchecked Sendable {
    public let record: ClientRecord
    public var id: Int64 { record.id }
    /// RESP2 until `HELLO 3`. Held in `record` (CLIENT LIST shows it as `resp=`).
    public var protocolVersion: RESPVersion {
        get { record.state.withLock { $0.protocolVersion } }
        set {
            record.state.withLock { $0.protocolVersion = newValue }
            subscriber?.version = newValue
        }
    }
    /// How the server delivers pub/sub messages to this client; nil when it cannot (in-process).
    public var subscriber: Subscriber? = nil
    /// Channels, patterns and shard channels this client is subscribed to.
    var channels: Set<[UInt8]> = [] {
        didSet { record.state.withLock { [n = channels.count] in $0.channels = n } }
    }
    var patterns: Set<[UInt8]> = [] {
        didSet { record.state.withLock { [n = patterns.count] in $0.patterns = n } }
    }
    var shardChannels: Set<[UInt8]> = [] {
        didSet { record.state.withLock { [n = shardChannels.count] in $0.shardChannels = n } }
    }
    public var subscriptionCount: Int { channels.count + patterns.count + shardChannels.count }
    public var authenticated: Bool
    /// Held in `record` (CLIENT LIST shows it as `user=`).
    public var user: String {
        get { record.state.withLock { $0.user } }
        set { record.state.withLock { $0.user = newValue } }
    }
    /// The rules of `user` as last read, and the users' generation they were read at
    /// (`Guardrails.user(of:)` re-reads them after an ACL change).
    var acl: ACLUser? = nil
    var aclGeneration = -1
    /// The column family every data command acts on (`CF.USE`); the default family at first.
    /// Held in `record` (CLIENT LIST shows it as `cf=`), whatever changes it (CF.USE, CF.DROP, a restore).
    public var family: Family {
        get { record.state.withLock { $0.family! } }
        set { record.state.withLock { $0.family = newValue } }
    }
    /// What the running request asks of the server besides its reply; the executor returns it
    /// (`takeOutcome`).
    var outcome = Outcome()
    /// What the replica said of itself with REPLCONF before PSYNC.
    var replicaListeningPort = 0
    var replicaAnnouncedIP = ""
    /// Queued commands between MULTI and EXEC; nil outside a transaction.
    var queued: [[[UInt8]]]? = nil
    var transactionFailed = false
    /// WATCHed keys with the version each had when watched.
    var watched: [WatchedKey] = []
    /// True while a command holds key locks (they are not re-entrant).
    var holdsKeyLocks = false
    /// The request runs off the worker because its work is big (LongWork.swift): its key locks
    /// are claims, and its writes go in pieces.
    var runsLong = false
    /// Keyspace events the running command recorded outside a transaction, published when its
    /// handler returns (`Engine.flushEvents`).
    var pendingEvents: [KeyspaceEvents.Event] = []
    /// Counts the commands run (`Engine.run`), so a key missed twice by one command is
    /// one `keymiss` (`missed`: the keys the command numbered `serial` missed).
    var commandSerial = 0
    var missed: (serial: Int, keys: Set<[UInt8]>) = (0, [])
    /// The EXEC being run, whose writes are staged in one batch.
    var transaction: Transaction? = nil
    /// Snapshots this connection made, by id; released when it closes.
    var snapshots: [Int64: OwnedSnapshot] = [:]
    /// The snapshot reads go through (`SNAPSHOT.USE`), or nil for the latest data.
    var readSnapshot: OwnedSnapshot? = nil
    /// Server-side iterators this connection opened, by id; closed when it closes.
    var iterators: [Int64: OwnedIterator] = [:]

    /// Ids of snapshots and iterators closed by an online restore, for a clear error on next use.
    var closedByRestore: Set<Int64> = []
    /// True when a server connection runs this session, so a request may be answered later:
    /// deferred work, a parked blocking pop, a PSYNC hand-off (`Outcome`). In-process sessions
    /// (tests, the fuzzer) get those answers inline.
    public let canDefer: Bool

    public init(record: ClientRecord, authenticated: Bool, family: Family, canDefer: Bool = false) {
        self.record = record
        self.authenticated = authenticated
        self.canDefer = canDefer
        record.state.withLock { $0.family = family }
    }

    public var inTransaction: Bool { queued != nil }

    /// Marks the session logged in as `user`, with that user's permissions.
    func logIn(_ user: ACLUser) {
        authenticated = true
        self.user = user.name
        acl = nil
        aclGeneration = -1  // read the user's rules at the next command
    }
}

/// A column family as the engine uses it: its RocksDB handle and its merge operator name.
public final class Family: Sendable {
    public let name: String
    public let handle: ColumnFamily
    /// `add`, `append`, `max`, `min`, or nil when MERGE is not enabled on this family.
    public let mergeOperator: String?
    /// Its merge operator and table options as CF.CREATE chose them (`cairn.meta` records them).
    let settings: FamilySettings
    /// Small number mixed into lock stripes so equal keys in different families don't collide.
    let salt: UInt64
    /// The members family (shared by every family), where this family's collections keep
    /// their members under its name (`MemberKeys`).
    let members: ColumnFamily

    init(name: String, handle: ColumnFamily, settings: FamilySettings = .init(), members: ColumnFamily) {
        self.name = name
        self.handle = handle
        self.settings = settings
        self.mergeOperator = settings.merge
        self.members = members
        var h: UInt64 = 14_695_981_039_346_656_037
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 1_099_511_628_211 }
        self.salt = h
    }
}

/// A WATCHed key: its lock stripe's version when watched, and its expiry when it was live and
/// expiring (EXEC aborts once that instant passes).
struct WatchedKey {
    var stripe: Int
    var version: UInt64
    var expiresAt: Int64?
}

/// A snapshot owned by one connection.
final class OwnedSnapshot {
    let id: Int64
    let snapshot: Snapshot
    let createdAt: Int64
    /// The user it counts against (`max-snapshots-per-user`), as logged in when it was made.
    let user: String

    init(id: Int64, snapshot: Snapshot, createdAt: Int64, user: String) {
        self.id = id
        self.snapshot = snapshot
        self.createdAt = createdAt
        self.user = user
    }
}

/// A server-side iterator owned by one connection: a cursor over one family, moving forward
/// or backward, remembered between ITER commands.
final class OwnedIterator {
    let id: Int64
    let cursor: Cursor
    let family: Family
    /// Keeps the snapshot the iterator reads through alive.
    let snapshot: OwnedSnapshot?
    /// The keys it can reach (ITER.OPEN's PREFIX, else every key): what ACL key patterns are
    /// checked against on each step.
    let range: KeyRange
    var lastUsed: Int64
    /// Counts live iterators for INFO: every path that drops one (ITER.CLOSE, disconnect,
    /// idle reclaim, snapshot release, restore) ends here.
    private let stats: EngineStats

    init(id: Int64, cursor: Cursor, family: Family, snapshot: OwnedSnapshot?, range: KeyRange, now: Int64, stats: EngineStats) {
        self.id = id
        self.cursor = cursor
        self.family = family
        self.snapshot = snapshot
        self.range = range
        self.lastUsed = now
        self.stats = stats
        stats.openIterators.increment()
    }

    deinit { stats.openIterators.increment(by: -1) }
}
