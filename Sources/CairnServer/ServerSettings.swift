public import CairnEngine
#if canImport(Glibc)
import Glibc
#endif

/// The settings only the server uses: where it listens, how many workers serve connections,
/// how many clients it takes. Kept in the configuration as a `ConfigurationExtension`, so the
/// config file, `cairnd`'s flags and `CONFIG GET/SET/REWRITE` read and write them through the
/// same table as the engine's options (`ConfigTable.server`); the engine does not know them.
/// Each property's comment gives its default and effect.
public struct ServerSettings: ConfigurationExtension {
    /// Address to listen on. Default `127.0.0.1` (loopback only).
    public var bind = "127.0.0.1"
    /// TCP port. Default 7379; 0 picks a free port (logged, and written to `port-file`), and
    /// from then on `CONFIG GET port` answers the port bound.
    public var port = 7379
    /// Serial queues serving connections (Redis's io-threads). Default: the cores this process
    /// may use (`AvailableCores`: its CPU affinity and cgroup quota, not the machine's count).
    public var ioThreads = ServerSettings.cores
    /// Path of a file to write the listening port into once ready; empty for none.
    public var portFile = ""
    /// Most clients connected at once; the next gets `-ERR max number of clients reached`.
    /// Lowered at start when the open files limit cannot hold it (`DescriptorBudget`).
    /// Default 10000.
    public var maxclients = 10000

    public init() {}

    static var cores: Int { AvailableCores.count }

    /// Only `maxclients` may change while the server runs (CONFIG SET); the others answer
    /// Redis's "can't set immutable config".
    public static let options: [ConfigOption] = [
        .string("bind", mutable: false, \.server.bind),
        .int("port", mutable: false, max: 65535, \.server.port),
        .int("io-threads", mutable: false, min: 1, \.server.ioThreads),
        .string("port-file", mutable: false, \.server.portFile),
        .int("maxclients", min: 1, max: Int(UInt32.max), \.server.maxclients),
    ]
}

extension Configuration {
    /// The server's settings in this configuration.
    public var server: ServerSettings {
        get { self[ServerSettings.self] }
        set { self[ServerSettings.self] = newValue }
    }
}

extension ConfigTable {
    /// Every option of a server: the engine's and `ServerSettings.options`. What `cairnd` reads
    /// its file and flags with, and what a `Server` registers on its engine for CONFIG.
    public static let server = ConfigTable.engine.adding(ServerSettings.self)
}
