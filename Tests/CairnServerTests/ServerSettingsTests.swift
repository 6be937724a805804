import CairnEngine
import CairnServer
import Foundation
import Logging
import RESP
import Testing

/// The server's own options (bind, port, io-threads, port-file, maxclients) are rows of the one
/// option table, contributed by CairnServer: the config file, CONFIG GET/SET/REWRITE and INFO
/// treat them as the engine's own. In-process: an engine over a temporary directory and a
/// `Server` that is built (so it registers its options and answers INFO) but never started.
@Suite struct ServerSettingsTests {
    static let serverOptions = ["bind", "port", "io-threads", "port-file", "maxclients"]

    /// An engine and an unstarted server over a temporary directory, and one client session.
    final class Harness {
        let directory: String
        let engine: Engine
        let server: Server
        let session: Session

        init(configFile: String? = nil, configure: (inout Configuration) -> Void = { _ in }) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-settings-\(UUID().uuidString)").path
            var config = Configuration()
            config.dir = directory
            config.blockCacheSize = 8 << 20
            configure(&config)
            engine = try Engine(configuration: config, logger: Logger(label: "test"))
            server = Server(engine: engine, configFilePath: configFile, logger: Logger(label: "test"), workerCount: 1) { _ in }
            session = engine.makeSession(record: ClientRecord(id: engine.clients.makeID(), address: "127.0.0.1:1", localAddress: "127.0.0.1:7379", now: 0))
        }

        func run(_ words: String...) -> RESPValue {
            var out = RESPWriter(version: .v2)
            engine.execute(words.map { Array($0.utf8) }, session: session, out: &out)
            var parser = ValueParser()
            parser.append(out.bytes)
            return (try? parser.next()) ?? .error("no reply")
        }

        /// CONFIG GET's reply as name -> value.
        func configGet(_ pattern: String) -> [String: String] {
            guard case .array(let items) = run("CONFIG", "GET", pattern) else { return [:] }
            var pairs: [String: String] = [:]
            for i in stride(from: 0, to: items.count - 1, by: 2) {
                if case .bulkString(let name) = items[i], case .bulkString(let value) = items[i + 1] {
                    pairs[String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
                }
            }
            return pairs
        }

        func info(_ section: String) -> String {
            guard case .bulkString(let text) = run("INFO", section) else { return "" }
            return String(decoding: text, as: UTF8.self)
        }

        deinit {
            try? engine.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test func serverOptionsAppearInConfigGetAll() throws {
        let h = try Harness { $0.server.port = 7001 }
        let all = h.configGet("*")
        let defaults = ServerSettings()
        #expect(all["bind"] == "127.0.0.1")
        #expect(all["port"] == "7001")
        #expect(all["io-threads"] == String(defaults.ioThreads))
        #expect(all["port-file"] == "")
        #expect(all["maxclients"] == "10000")
        // Beside the engine's options, in the same reply.
        #expect(all["dir"] == h.directory)
        #expect(all["save"] == "")
        // Globs reach them as any other option.
        #expect(Set(h.configGet("*port*").keys) == ["port", "port-file", "replica-announce-port"])
        #expect(h.configGet("MAXCLIENTS") == ["maxclients": "10000"])
    }

    @Test func onlyMaxclientsIsMutable() throws {
        let h = try Harness()
        #expect(h.run("CONFIG", "SET", "maxclients", "50") == .simpleString("OK"))
        #expect(h.engine.configuration.server.maxclients == 50)
        #expect(h.configGet("maxclients") == ["maxclients": "50"])
        #expect(h.info("clients").contains("\r\nmaxclients:50\r\n"))
        for name in ["bind", "port", "io-threads", "port-file"] {
            #expect(h.run("CONFIG", "SET", name, "1")
                == .error("ERR CONFIG SET failed (possibly related to argument '\(name)') - can't set immutable config"))
        }
        #expect(h.run("CONFIG", "SET", "maxclients", "0")
            == .error("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"))
        // All or nothing across the two modules' options.
        #expect(h.run("CONFIG", "SET", "timeout", "9", "maxclients", "0") != .simpleString("OK"))
        #expect(h.engine.configuration.timeout == 0)
        #expect(h.engine.configuration.server.maxclients == 50)
    }

    @Test func serverOptionsSurviveConfigRewrite() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-settings-\(UUID().uuidString).conf").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let h = try Harness(configFile: file) {
            $0.server.bind = "0.0.0.0"
            $0.server.port = 7002
            $0.server.ioThreads = 3
            $0.server.portFile = "/tmp/a port file"
        }
        #expect(h.run("CONFIG", "SET", "maxclients", "77", "timeout", "5") == .simpleString("OK"))
        #expect(h.run("CONFIG", "REWRITE") == .simpleString("OK"))
        let text = try String(contentsOfFile: file, encoding: .utf8)
        for line in ["bind 0.0.0.0", "port 7002", "io-threads 3", "port-file \"/tmp/a port file\"", "maxclients 77", "timeout 5"] {
            #expect(text.contains("\n\(line)\n"), "\(line)")
        }
        var back = Configuration()
        try ConfigFile.apply(text, to: &back, table: .server)
        #expect(back.server.bind == "0.0.0.0")
        #expect(back.server.port == 7002)
        #expect(back.server.ioThreads == 3)
        #expect(back.server.portFile == "/tmp/a port file")
        #expect(back.server.maxclients == 77)
        #expect(back.server == h.engine.configuration.server)
        #expect(back.timeout == 5)
        // The engine alone does not know them.
        var engineOnly = Configuration()
        #expect(throws: ConfigFile.ParseError.self) { try ConfigFile.apply(text, to: &engineOnly) }
    }

    /// The documented file in config/ must parse and give the documented defaults.
    @Test func shippedConfigFileMatchesDefaults() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("config/cairn.conf"), encoding: .utf8)
        var config = Configuration()
        try ConfigFile.apply(text, to: &config, table: .server)
        #expect(config == Configuration())
        for name in Self.serverOptions {
            #expect(text.contains("\n\(name) ") || text.contains("\n# \(name) "), "config/cairn.conf documents \(name)")
        }
    }

    static let refused: [(String, String, String)] = [
        ("maxclients", "0", "argument must be between 1 and 4294967295 inclusive"),
        ("port", "70000", "argument must be between 0 and 65535 inclusive"),
        ("io-threads", "0", "argument must be between 1 and 9223372036854775807 inclusive"),
        ("bind", "a\nb", "argument must not contain control characters such as newlines (the config file could not hold it)"),
    ]

    /// As ConfigValidationTests for the engine's options: one validation, the same reason from
    /// the file, the flags and CONFIG SET.
    @Test(arguments: refused)
    func refusedEverywhereWithTheSameReason(_ name: String, _ value: String, _ reason: String) throws {
        let option = try #require(ConfigTable.server.named(name))
        var config = Configuration()
        #expect(throws: ConfigOption.Invalid(reason)) { try option.apply(value, to: &config) }
        #expect(config == Configuration())
        if !value.contains(where: \.isNewline) {
            do {
                try ConfigFile.apply("\(name) \"\(value)\"", to: &config, table: .server)
                Issue.record("the config file took \(name) \(value)")
            } catch {
                #expect(error.description == "config line 1: bad value '\(value)' for '\(name)': \(reason)")
            }
        }
    }

    /// Too few descriptors for the configured clients: the server's maxclients is lowered, the
    /// engine's table files keep at least RocksDB's minimum.
    @Test func descriptorBudgetLowersTheServersMaxclients() throws {
        var config = Configuration()
        config.server.ioThreads = 2
        config.maxBackgroundJobs = 2
        let overhead = DescriptorBudget.overhead(config)
        #expect(overhead == DescriptorBudget.reserved + 4)
        #expect(DescriptorBudget.needed(config) == 10000 + 8192 + overhead)
        let budget = try #require(DescriptorBudget.fit(config, limit: 256))
        #expect(budget.maxclients == 256 - overhead - budget.maxOpenFiles)
        #expect(budget.maxOpenFiles >= DescriptorBudget.minimumTableFiles)
        #expect(DescriptorBudget.fit(config, limit: overhead + DescriptorBudget.minimumTableFiles) == nil)
    }
}
