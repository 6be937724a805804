import ArgumentParser
import CairnEngine
import CairnServer
import Dispatch
import Foundation
import Logging
import Synchronization

/// `cairnd`: the Cairn server. Argument parsing and wiring only; the work is in CairnServer.
@main
struct Cairnd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cairnd",
        abstract: "Cairn: a persistent, ordered key-value server on RocksDB that speaks the Redis protocol.",
        subcommands: [Serve.self, BackupCommand.self, RestoreCommand.self, CheckCommand.self],
        defaultSubcommand: Serve.self
    )
}

/// Options shared by subcommands that open a data directory.
struct ServerOptions: ParsableArguments {
    @Argument(help: "A config file in redis.conf style (see config/cairn.conf).")
    var configFile: String?

    @Option(name: .customLong("config"), help: "A config file (same as the positional argument).")
    var configOption: String?

    @Option(help: "Address to listen on (default 127.0.0.1).") var bind: String?
    @Option(help: "TCP port (default 7379; 0 picks a free port).") var port: Int?
    @Option(help: "Data directory (default ./data).") var dir: String?
    @Option(help: "Password clients must AUTH with.") var requirepass: String?
    @Option(help: "WAL sync policy: always, everysec (default) or no.") var appendfsync: String?
    @Option(name: .customLong("log-level"), help: "debug, verbose, notice (default), warning; or trace, info, error.")
    var logLevel: String?
    @Option(name: .customLong("port-file"), help: "Write the listening port to this file once ready.")
    var portFile: String?
    @Option(help: "Most clients at once.") var maxclients: Int?
    @Option(help: "Close clients idle this many seconds (0 = never).") var timeout: Int?
    @Option(name: .customLong("proto-max-bulk-len"), help: "Largest bulk string a client may send, e.g. 512mb.")
    var protoMaxBulkLen: String?
    @Option(name: .customLong("client-query-buffer-limit"), help: "Most unparsed request bytes per client, e.g. 1gb.")
    var queryBufferLimit: String?
    @Option(name: .customLong("client-output-buffer-limit"), help: "Most pending reply bytes per client, e.g. 256mb.")
    var outputBufferLimit: String?
    @Option(name: .customLong("set"), parsing: .singleValue, help: "Any option as name=value (repeatable), e.g. --set block-cache-size=1gb.")
    var settings: [String] = []

    var configPath: String? { configOption ?? configFile }

    /// The configuration: defaults, then the file, then flags, through the server's option
    /// table (the engine's options and `ServerSettings`'s).
    func load() throws -> Configuration {
        var config = Configuration()
        if let path = configPath {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("cannot read config file \(path)")
            }
            do { try ConfigFile.apply(text, to: &config, table: .server) } catch {
                throw ValidationError("\(path): \(error)")
            }
        }
        var pairs: [(String, String)] = []
        if let bind { pairs.append(("bind", bind)) }
        if let port { pairs.append(("port", String(port))) }
        if let dir { pairs.append(("dir", dir)) }
        if let requirepass { pairs.append(("requirepass", requirepass)) }
        if let appendfsync { pairs.append(("appendfsync", appendfsync)) }
        if let logLevel { pairs.append(("loglevel", logLevel)) }
        if let portFile { pairs.append(("port-file", portFile)) }
        if let maxclients { pairs.append(("maxclients", String(maxclients))) }
        if let timeout { pairs.append(("timeout", String(timeout))) }
        if let protoMaxBulkLen { pairs.append(("proto-max-bulk-len", protoMaxBulkLen)) }
        if let queryBufferLimit { pairs.append(("client-query-buffer-limit", queryBufferLimit)) }
        if let outputBufferLimit { pairs.append(("client-output-buffer-limit", outputBufferLimit)) }
        for s in settings {
            guard let eq = s.firstIndex(of: "=") else { throw ValidationError("--set takes name=value, got '\(s)'") }
            pairs.append((String(s[..<eq]), String(s[s.index(after: eq)...])))
        }
        for (name, value) in pairs {
            guard let option = ConfigTable.server.named(name) else { throw ValidationError("unknown option '\(name)'") }
            do { try option.apply(value, to: &config) } catch {
                throw ValidationError("bad value '\(value)' for \(name): \(error.reason)")
            }
        }
        return config
    }
}

extension Logger.Level {
    /// Redis's level names and swift-log's (`Configuration.logLevels`).
    init?(cairnName name: String) {
        switch name.lowercased() {
        case "nothing": self = .critical
        case "trace": self = .trace
        case "debug": self = .debug
        case "verbose", "info": self = .info
        case "notice": self = .notice
        case "warning", "warn": self = .warning
        case "error": self = .error
        default: return nil
        }
    }
}

/// Runs the server in the foreground until SIGTERM, SIGINT or SHUTDOWN.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the server (the default).")

    @OptionGroup var options: ServerOptions

    func run() throws {
        // Before any thread starts: RocksDB's and Dispatch's threads would otherwise each get
        // a malloc arena, and freed memtables would stay in the heaps; both fragment memory
        // well past what is in use.
        ProcessMemory.limitMallocArenas(to: 2)
        ProcessMemory.mapLargeAllocations()
        var config = try options.load()
        let level = Logger.Level(cairnName: config.loglevel) ?? .notice
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "cairnd")
        do {
            try DescriptorBudget.apply(to: &config, logger: logger)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
        let engine: Engine
        do {
            engine = try Engine(configuration: config, logger: logger)
        } catch {
            logger.critical("cannot open the data directory \(config.dir): \(error)")
            throw ExitCode(1)
        }
        let server = Server(engine: engine, configFilePath: options.configPath.map(absolutePath), logger: logger) { status in
            Foundation.exit(status)
        }
        Signals.install(logger: logger)
        do {
            try server.start()
        } catch {
            logger.critical("cannot listen on \(config.server.bind):\(config.server.port): \(error)")
            try? engine.close()
            throw ExitCode(1)
        }
        Signals.started(server)
        dispatchMain()
    }

    func absolutePath(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

/// SIGTERM and SIGINT start a graceful shutdown; SIGPIPE is ignored (writes use MSG_NOSIGNAL).
/// Not at top level of a main file: those closures would be main-actor isolated and trap on a
/// Dispatch queue.
///
/// Installed, and registered with the system, before the server starts: `start()` writes the
/// port file that tells a supervisor or a test the server is up, and a SIGTERM sent the moment
/// it appeared used to come while the disposition was SIG_IGN and Dispatch had not registered
/// its handler yet; the signal was lost and the server ran on. One that comes before `start()`
/// has finished is acted on when it has.
enum Signals {
    nonisolated(unsafe) static var sources: [any DispatchSourceSignal] = []
    /// The started server, and whether a signal asked for a shutdown.
    static let state = Mutex<(server: Server?, shutdownRequested: Bool)>((nil, false))

    static func install(logger: Logger) {
        signal(SIGPIPE, SIG_IGN)
        // As redis-server: a closed terminal or a parent's session ending does not stop the server.
        signal(SIGHUP, SIG_IGN)
        let registered = DispatchGroup()
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            registered.enter()
            source.setRegistrationHandler { registered.leave() }
            source.setEventHandler {
                logger.notice("received \(sig == SIGTERM ? "SIGTERM" : "SIGINT"), shutting down")
                let server = state.withLock { state in
                    state.shutdownRequested = true
                    return state.server
                }
                server?.shutdown()
            }
            source.activate()
            sources.append(source)
        }
        registered.wait()
    }

    /// The server has started: signals from now on shut it down, and so does one that came before.
    static func started(_ server: Server) {
        let requested = state.withLock { state in
            state.server = server
            return state.shutdownRequested
        }
        if requested { server.shutdown() }
    }
}
