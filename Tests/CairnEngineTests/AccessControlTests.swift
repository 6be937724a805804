import CairnEngine
import RESP
import Testing

@Suite struct AccessControlTests {
    static let conf = """
        user reader on >readerpw ~* +@read
        user writer on >writerpw allkeys +@read +@write
        user root on #a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3 +@all
        user sleeper off >pw +@all
        """

    @Test func parsesUserLinesAndKeepsOnlyDigests() throws {
        var config = Configuration()
        try ConfigFile.apply(Self.conf, to: &config)
        #expect(config.users.map(\.name) == ["reader", "writer", "root", "sleeper"])
        let reader = config.users[0]
        #expect(reader.enabled && reader.commandsText == "-@all +@read" && reader.passwordHashes.count == 1)
        #expect(reader.passwordHashes[0].count == 32)
        #expect(!reader.rule.contains("readerpw"))
        #expect(reader.accepts(Array("readerpw".utf8)))
        #expect(!reader.accepts(Array("readerpw ".utf8)))
        #expect(!reader.accepts([]))
        // "#<hex>" is the SHA-256 of "123".
        #expect(config.users[2].accepts(Array("123".utf8)))
        #expect(config.users[2].allCommands && config.users[2].commandRules.isEmpty)
        #expect(config.users[3].enabled == false)
    }

    @Test func rejectsUnsupportedRules() {
        for line in ["user x on bogus", "user x on +nosuch", "user x on #abc", "user", "user x on +@nonsense", "user x allkeys ~k"] {
            var config = Configuration()
            #expect(throws: ConfigFile.ParseError.self) { try ConfigFile.apply(line, to: &config) }
        }
    }

    @Test func ruleRoundTripsThroughConfigRewrite() throws {
        var config = Configuration()
        try ConfigFile.apply(Self.conf, to: &config)
        var back = Configuration()
        try ConfigFile.apply(ConfigFile.render(config), to: &back)
        #expect(back == config)
        #expect(config.users[0].rule.hasPrefix("user reader on #"))
        #expect(config.users[0].rule.hasSuffix(" ~* resetchannels -@all +@read"))
    }

    @Test func requirepassIsTheDefaultUsersPassword() {
        var config = Configuration()
        #expect(AccessControl(config).defaultNeedsNoAuth)
        config.requirepass = "secret"
        let acl = AccessControl(config)
        #expect(!acl.defaultNeedsNoAuth)
        #expect(acl.check(user: "default", password: Array("secret".utf8)) != nil)
        #expect(acl.check(user: "default", password: Array("Secret".utf8)) == nil)
        #expect(acl.check(user: "nobody", password: Array("secret".utf8)) == nil)
    }

    @Test func disabledUsersCannotLogIn() throws {
        var config = Configuration()
        try ConfigFile.apply(Self.conf, to: &config)
        let acl = AccessControl(config)
        #expect(acl.check(user: "sleeper", password: Array("pw".utf8)) == nil)
        #expect(acl.check(user: "writer", password: Array("writerpw".utf8))?.commandsText == "-@all +@read +@write")
    }

    @Test func categoriesFollowCommandFlagsAndGroups() {
        let table = try! EngineHarness().engine.table
        func categories(_ name: String) -> ACLCategories { table.find(name)!.aclCategories }
        #expect(categories("get") == [ACLCategories.named("read")!, .named("string")!, .named("fast")!])
        #expect(categories("hset").contains([.named("write")!, .named("hash")!]))
        #expect(categories("blpop").contains(.named("blocking")!))
        for name in ["flushall", "flushdb", "cf.drop", "cf.create", "shutdown", "config|set", "config|get", "compact", "client|kill"] {
            // Admin commands are behind @admin only: no other category grants them.
            #expect(categories(name).contains(.named("admin")!), "\(name)")
            #expect(!categories(name).contains(.named("write")!) && !categories(name).contains(.named("connection")!), "\(name)")
        }
        #expect(categories("ping").contains(.named("connection")!))
    }

    @Test func keyPatternsAreCheckedInProcess() throws {
        let h = try EngineHarness {
            $0.users = [try! ACLUser.parse(["app", "on", ">p", "~app:*", "%R~ro:*", "+@all"])]
        }
        #expect(h.run("AUTH", "app", "p") == .ok)
        #expect(h.run("SET", "app:1", "v") == .ok)
        #expect(h.run("GET", "ro:1") == .null)
        let denied = RESPValue.error("NOPERM this user has no permissions to access one of the keys used as arguments")
        #expect(h.run("SET", "ro:1", "v") == denied)
        #expect(h.run("GET", "other") == denied)
        #expect(h.run("MSET", "app:2", "v", "other", "v") == denied)
        #expect(h.run("EVAL", "return 1", "1", "other") == denied)
    }

    @Test func permissionsAreCheckedInProcess() throws {
        let h = try EngineHarness {
            $0.requirepass = "top"
            $0.users = [try! ACLUser.parse(["reader", "on", ">r", "+@read", "+acl|whoami", "+@transaction", "allkeys"])]
        }
        #expect(h.run("GET", "a") == .error("NOAUTH Authentication required."))
        #expect(h.run("AUTH", "reader", "r") == .ok)
        #expect(h.run("ACL", "WHOAMI") == .bulk("reader"))
        #expect(h.run("GET", "a") == .null)
        #expect(h.run("SET", "a", "1") == .error("NOPERM this user has no permissions to run the 'set' command"))
        #expect(h.run("CONFIG", "GET", "port") == .error("NOPERM this user has no permissions to run the 'config|get' command"))
        #expect(h.run("MULTI") == .ok)
        #expect(h.run("DEL", "a") == .error("NOPERM this user has no permissions to run the 'del' command"))
        #expect(h.run("EXEC") == .error("EXECABORT Transaction discarded because of previous errors."))
        #expect(h.run("AUTH", "top") == .ok)
        #expect(h.run("ACL", "WHOAMI") == .bulk("default"))
        #expect(h.run("SET", "a", "1") == .ok)
        #expect(h.run("RESET") == .simpleString("RESET"))
        #expect(h.run("GET", "a") == .error("NOAUTH Authentication required."))
    }

    @Test func failedAuthIsThrottledPerAddress() throws {
        let h = try EngineHarness {
            $0.requirepass = "top"
            $0.authMaxFailures = 2
        }
        #expect(h.run("AUTH", "x") == .error("WRONGPASS invalid username-password pair or user is disabled."))
        #expect(h.run("AUTH", "y") == .error("WRONGPASS invalid username-password pair or user is disabled."))
        guard case .error(let text) = h.run("AUTH", "top") else { Issue.record("AUTH passed"); return }
        #expect(text.hasPrefix("WRONGPASS too many failed AUTH attempts"))
    }

    @Test func keyAndValueLimits() throws {
        let h = try EngineHarness {
            $0.maxKeySize = 4
            $0.maxValueSize = 8
        }
        #expect(h.run("SET", "abcd", "12345678") == .ok)
        #expect(h.run("SET", "abcde", "1") == .error("ERR key is too large (5 bytes; max-key-size is 4)"))
        #expect(h.run("SET", "a", "123456789") == .error("ERR value is too large (9 bytes; max-value-size is 8)"))
        #expect(h.run("APPEND", "abcd", "9") == .error("ERR string exceeds maximum allowed size (max-value-size)"))
        #expect(h.run("GET", "abcdefgh") == .null)
    }

    /// Found by the dispatch fuzzer: a bare COMMAND indexed past the end of argv and killed the server.
    @Test func bareCommandListsEveryCommand() throws {
        let h = try EngineHarness()
        guard case .array(let all) = h.run("COMMAND") else { Issue.record("COMMAND did not answer an array"); return }
        #expect(all.count == h.engine.table.commands.count)
        #expect(h.run("CONFIG") == .error("ERR wrong number of arguments for 'config' command"))
    }
}
