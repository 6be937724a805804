import CairnEngine
import RESP
import Testing

@Suite struct ConnectionAndTransactionTests {
    @Test func authRequired() throws {
        let h = try EngineHarness { $0.requirepass = "secret" }
        #expect(h.run("GET", "a") == .error("NOAUTH Authentication required."))
        #expect(h.run("AUTH", "wrong") == .error("WRONGPASS invalid username-password pair or user is disabled."))
        #expect(h.run("AUTH", "secret") == .ok)
        #expect(h.run("GET", "a") == .null)
    }

    @Test func authWithoutPassword() throws {
        let h = try EngineHarness()
        #expect(h.run("AUTH", "x") == .error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"))
    }

    @Test func helloSwitchesProtocol() throws {
        let h = try EngineHarness()
        guard case .map(let fields) = h.run("HELLO", "3") else { Issue.record("HELLO 3 must reply a map"); return }
        #expect(fields.contains { $0.key == .bulk("proto") && $0.value == .integer(3) })
        #expect(h.session.protocolVersion == .v3)
        #expect(h.run("GET", "none") == .null)
        #expect(h.run("HELLO", "4") == .error("NOPROTO unsupported protocol version"))
    }

    @Test func clientNamesAndSelect() throws {
        let h = try EngineHarness()
        #expect(h.run("CLIENT", "GETNAME") == .null)
        #expect(h.run("CLIENT", "SETNAME", "worker-1") == .ok)
        #expect(h.run("CLIENT", "GETNAME") == .bulk("worker-1"))
        #expect(h.run("CLIENT", "SETNAME", "a b") == .error("ERR Client names cannot contain spaces, newlines or special characters."))
        #expect(h.run("CLIENT", "NOPE") == .error("ERR unknown subcommand 'NOPE'. Try CLIENT HELP."))
        #expect(h.run("SELECT", "0") == .ok)
        #expect(h.run("SELECT", "1") == .error("ERR DB index is out of range"))
    }

    @Test func multiExecQueuesAndCommits() throws {
        let h = try EngineHarness()
        #expect(h.run("MULTI") == .ok)
        #expect(h.run("SET", "a", "1") == .simpleString("QUEUED"))
        #expect(h.run("INCR", "a") == .simpleString("QUEUED"))
        #expect(h.run("GET", "a") == .simpleString("QUEUED"))
        let other = h.otherSession()
        #expect(h.run("GET", "a", on: other) == .null, "nothing is visible before EXEC")
        #expect(h.run("EXEC") == .array([.ok, .integer(2), .bulk("2")]))
        #expect(h.run("GET", "a", on: other) == .bulk("2"))
    }

    @Test func execAbortsAfterQueueingError() throws {
        let h = try EngineHarness()
        h.run("MULTI")
        h.run("SET", "a", "1")
        #expect(h.run("GET") == .error("ERR wrong number of arguments for 'get' command"))
        #expect(h.run("EXEC") == .error("EXECABORT Transaction discarded because of previous errors."))
        #expect(h.run("GET", "a") == .null)
        #expect(h.run("EXEC") == .error("ERR EXEC without MULTI"))
    }

    @Test func watchConflictReturnsNull() throws {
        let h = try EngineHarness()
        h.run("SET", "w", "1")
        #expect(h.run("WATCH", "w") == .ok)
        h.run("SET", "w", "2", on: h.otherSession())
        h.run("MULTI")
        h.run("SET", "w", "3")
        #expect(h.run("EXEC") == .null)
        #expect(h.run("GET", "w") == .bulk("2"))
        h.run("WATCH", "w")
        h.run("MULTI")
        h.run("SET", "w", "4")
        #expect(h.run("EXEC") == .array([.ok]))
    }

    @Test func commandTableAnswersCommand() throws {
        let h = try EngineHarness()
        guard case .integer(let n) = h.run("COMMAND", "COUNT") else { Issue.record("COUNT"); return }
        #expect(n > 60)
        guard case .array(let info) = h.run("COMMAND", "INFO", "get"), case .array(let get) = info[0] else { Issue.record("INFO"); return }
        #expect(get[0] == .bulk("get"))
        #expect(get[1] == .integer(2))
        #expect(h.run("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2") == .array([.bulk("a"), .bulk("b")]))
    }

    @Test func configGetSet() throws {
        let h = try EngineHarness()
        #expect(h.run("CONFIG", "GET", "save") == .array([.bulk("save"), .bulk("")]))
        #expect(h.run("CONFIG", "GET", "appendonly") == .array([.bulk("appendonly"), .bulk("yes")]))
        #expect(h.run("CONFIG", "SET", "appendfsync", "always") == .ok)
        #expect(h.engine.configuration.appendfsync == .always)
        #expect(h.run("CONFIG", "SET", "dir", "/tmp") == .error("ERR CONFIG SET failed (possibly related to argument 'dir') - can't set immutable config"))
        // The server's options (port, maxclients...) are not the engine's: ServerSettingsTests.
        #expect(h.run("CONFIG", "GET", "port") == .array([]))
        #expect(h.run("CONFIG", "SET", "nope", "1") == .error("ERR Unknown option or number of arguments for CONFIG SET - 'nope'"))
    }

    @Test func infoHasSections() throws {
        let h = try EngineHarness()
        guard case .bulkString(let text) = h.run("INFO") else { Issue.record("INFO must be a bulk string in RESP2"); return }
        let s = String(decoding: text, as: UTF8.self)
        for section in ["# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# RocksDB"] {
            #expect(s.contains(section))
        }
        #expect(s.contains("redis_version:"))
    }
}
