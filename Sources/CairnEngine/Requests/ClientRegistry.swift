import RESP
import Synchronization

/// What other connections may know about a client: `CLIENT LIST`, `CLIENT KILL`, INFO clients.
public final class ClientRecord: Sendable {
    public let id: Int64
    public let address: String
    public let localAddress: String
    public let createdAt: Int64
    let state: Mutex<State>
    /// Asks the server to close this client (set by the server; runs on any thread).
    let killHandler: Mutex<(@Sendable () -> Void)?> = Mutex(nil)

    struct State {
        var name = ""
        var libName = ""
        var libVersion = ""
        var lastCommand = "NULL"
        var lastInteraction: Int64
        /// The session's user, family and protocol are held here, once (`Session` reads them
        /// through the lock), so CLIENT LIST from another connection always sees the current ones.
        var family: Family? = nil
        var protocolVersion: RESPVersion = .v2
        var user = "default"
        /// Parked by a blocking pop: `flags=b`.
        var blocked = false
        /// Channels and patterns subscribed to: a pubsub client (`flags=P`).
        var channels = 0
        var patterns = 0
        var shardChannels = 0
        /// A replica streaming from this server (`flags=S`, `CLIENT KILL TYPE replica`).
        var isReplica = false

        /// `CLIENT KILL TYPE`'s name for the client.
        var type: String { isReplica ? "replica" : channels + patterns + shardChannels > 0 ? "pubsub" : "normal" }
    }

    /// Marks the client as a replica (its connection became a replication stream).
    public func markReplica() { state.withLock { $0.isReplica = true } }

    public init(id: Int64, address: String, localAddress: String, now: Int64) {
        self.id = id
        self.address = address
        self.localAddress = localAddress
        self.createdAt = now
        self.state = Mutex(State(lastInteraction: now))
    }

    public func setKillHandler(_ handler: @escaping @Sendable () -> Void) {
        killHandler.withLock { $0 = handler }
    }

    public var name: String { state.withLock { $0.name } }

    func kill() {
        let handler = killHandler.withLock { $0 }
        handler?()
    }

    /// One `CLIENT LIST` line.
    func line(now: Int64) -> String {
        state.withLock { s in
            "id=\(id) addr=\(address) laddr=\(localAddress) fd=0 name=\(s.name) age=\((now - createdAt) / 1000) "
                + "idle=\((now - s.lastInteraction) / 1000) flags=\(s.isReplica ? "S" : s.blocked ? "b" : s.channels + s.patterns + s.shardChannels > 0 ? "P" : "N") db=0 sub=\(s.channels) psub=\(s.patterns) ssub=\(s.shardChannels) multi=-1 qbuf=0 "
                + "qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r "
                + "cmd=\(s.lastCommand) user=\(s.user) redir=-1 resp=\(s.protocolVersion.rawValue) "
                + "lib-name=\(s.libName) lib-ver=\(s.libVersion) cf=\(s.family?.name ?? "default")"
        }
    }
}

/// Every connected client, by id.
public final class ClientRegistry: Sendable {
    private let clients = Mutex<[Int64: ClientRecord]>([:])
    private let nextID = Atomic<Int64>(1)

    public init() {}

    public func makeID() -> Int64 { nextID.add(1, ordering: .relaxed).oldValue }

    public func add(_ record: ClientRecord) { clients.withLock { $0[record.id] = record } }
    public func remove(_ id: Int64) { clients.withLock { _ = $0.removeValue(forKey: id) } }
    public var count: Int { clients.withLock { $0.count } }
    public var all: [ClientRecord] { clients.withLock { $0.values.sorted { $0.id < $1.id } } }
    public func record(_ id: Int64) -> ClientRecord? { clients.withLock { $0[id] } }
}
