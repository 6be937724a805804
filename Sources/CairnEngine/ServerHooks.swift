/// What the engine asks of the server it runs in. The engine knows nothing of sockets; the
/// server implements this and sets it on the engine before serving.
public protocol ServerHooks: AnyObject, Sendable {
    /// SHUTDOWN: stop accepting, finish replies, close the database, exit 0.
    func requestShutdown()
    /// Lines for INFO server (`tcp_port`, ...) the engine cannot know.
    func serverInfo() -> [(String, String)]
    /// Called after CONFIG SET changed the configuration.
    func configurationChanged(_ configuration: Configuration)
    /// The config file CONFIG REWRITE writes to, or nil when started without one.
    var configFilePath: String? { get }
}
