/// What the engine asks of the server it runs in. The engine knows nothing of sockets; the
/// server implements this and sets it on the engine before serving.
public protocol ServerHooks: AnyObject, Sendable {
    /// SHUTDOWN: stop accepting, finish replies, close the database, exit 0.
    func requestShutdown()
    /// Lines the engine cannot know for INFO's `section` (`server`: `tcp_port`, `io_workers`;
    /// `clients`: `maxclients`), in the order printed.
    func infoLines(section: String) -> [(String, String)]
    /// Called after CONFIG SET changed the configuration.
    func configurationChanged(_ configuration: Configuration)
    /// The config file CONFIG REWRITE writes to, or nil when started without one.
    var configFilePath: String? { get }
    /// Runs `body` while no client command, WAL sync or expiry sweep runs, passing the session
    /// of every connected client (online restore). Clients wait meanwhile.
    func withClientsPaused(_ body: ([Session]) -> Void)
    /// Runs slow work off the request path (BGSAVE, scheduled backups).
    func runInBackground(_ work: @escaping @Sendable () -> Void)
    /// REPLICAOF changed the role or the primary: start (or let end) the link to the primary.
    func replicationChanged()
}

extension ServerHooks {
    public func withClientsPaused(_ body: ([Session]) -> Void) { body([]) }
    public func runInBackground(_ work: @escaping @Sendable () -> Void) { work() }
    public func replicationChanged() {}
}
