import CairnEngine
import Foundation
import RESP
import Testing

/// Walks the whole command table as a user limited to `~app:*` and fails for any command that
/// reaches a key outside that pattern: a reply that shows a secret value, or a secret key that
/// changed. A command added without saying which keys it touches fails here too: every command
/// must declare keys (positions, a key finder or key ranges) or be named below as reaching none.
@Suite struct CommandTableACLWalkTests {
    /// Commands that touch no key's value, and why that is safe for a user limited by key
    /// patterns. KEYS, SCAN, RANDOMKEY and DBSIZE list or count key names and read no value:
    /// Redis's rule, which Cairn keeps (docs/security.md).
    static let keyless: Set<String> = [
        // connection and session state
        "auth", "hello", "ping", "echo", "quit", "reset", "select", "cf.use", "client", "multi", "exec", "discard",
        "unwatch", "snapshot.create", "snapshot.release", "snapshot.use", "snapshot.list", "iter.close",
        // names and counts only (Redis's rule for a restricted user)
        "keys", "scan", "randomkey", "dbsize", "cf.list", "cf.info",
        // pub/sub: channels, which `&` patterns govern
        "publish", "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "pubsub",
        // scripts and functions: every redis.call passes the admission step with its own keys
        "script", "function",
        // server state and diagnostics with no key data
        "info", "command", "config", "acl", "time", "lastsave", "role", "latency", "memory|doctor", "memory|stats",
        "memory|malloc-stats", "memory|purge", "memory|help", "object|help", "xgroup|help", "xinfo|help", "slowlog|len", "slowlog|reset", "slowlog|help", "shutdown",
        "wait", "failover", "replconf", "sync", "backup.list", "backup.verify", "backup.purge", "cf.create",
        // Redis Cluster's commands, which only answer that cluster support is disabled
        "cluster", "readonly", "readwrite", "asking",
    ]

    /// Every command and subcommand of the table, by full name.
    static func everyCommand(_ engine: Engine) -> [Command] {
        engine.table.sorted.flatMap { c in c.subcommands.isEmpty ? [c] : [c] + c.subcommands.values.sorted { $0.name < $1.name } }
    }

    @Test func everyCommandDeclaresTheKeysItReaches() throws {
        let h = try EngineHarness()
        // A container's own handler (COMMAND alone, or an error) reaches no key: its
        // subcommands are checked one by one.
        let undeclared = Self.everyCommand(h.engine).filter { c in
            c.subcommands.isEmpty && !c.declaresKeys && !Self.keyless.contains(c.name) && !Self.keyless.contains(c.name.split(separator: "|").first.map(String.init) ?? "")
        }.map(\.name)
        #expect(undeclared == [], "commands that declare no keys, key finder or key ranges, and are not known to reach none")
    }

    /// Secret keys of every type, and their values, which no reply to the restricted user may show.
    static let marker = "SECRETVALUE"
    static let secretKeys = ["secret:str", "secret:hash", "secret:set", "secret:zset", "secret:list", "secret:stream", "secret:n"]

    static func seed(_ h: EngineHarness) {
        h.run("SET", "secret:str", "\(marker)-str")
        h.run("HSET", "secret:hash", "f", "\(marker)-hash")
        h.run("SADD", "secret:set", "\(marker)-set")
        h.run("ZADD", "secret:zset", "1", "\(marker)-zset")
        h.run("RPUSH", "secret:list", "\(marker)-list")
        h.run("XADD", "secret:stream", "1-1", "f", "\(marker)-stream")
        h.run("XGROUP", "CREATE", "secret:stream", "g", "0")
        h.run("SET", "secret:n", "42")
        h.run("SET", "app:str", "mine")
        h.run("HSET", "app:hash", "f", "mine")
        h.run("SADD", "app:set", "mine")
        h.run("ZADD", "app:zset", "1", "mine")
        h.run("RPUSH", "app:list", "mine")
        h.run("CF.CREATE", "secrets")
        h.run("CF.USE", "secrets")
        h.run("SET", "secret:str", "\(marker)-family")
        h.run("CF.USE", "default")
    }

    /// Everything the admin sees of the secret keys, in both families.
    static func secretState(_ h: EngineHarness) -> [String] {
        var state: [String] = []
        for family in ["default", "secrets"] {
            h.run("CF.USE", family)
            for key in secretKeys {
                state.append("\(family) \(key) \(h.run("TYPE", key)) \(h.run("DUMP", key)) \(h.run("PTTL", key))")
                // DUMP does not cover a stream's entries and groups.
                state.append("\(h.run("XRANGE", key, "-", "+")) \(h.run("XINFO", "GROUPS", key))")
            }
        }
        h.run("CF.USE", "default")
        return state
    }

    /// Values to try for an argument, by the name the command's syntax gives it. Several
    /// values per name, so commands whose meaning depends on them (bounds, counts, names) get
    /// the ones that would reach furthest.
    static func candidates(_ name: String, directory: String) -> [String] {
        switch name.lowercased() {
        case "key", "source", "destination", "newkey", "dstkey", "srckey": secretKeys + ["secret:*"]
        case "numkeys": ["1"]
        case "group", "groupname": ["g"]
        case "start", "min", "begin": ["-", "-inf", "0", "[secret:"]
        case "end", "max", "stop": ["+", "+inf", "-1", "(secret;"]
        case "pattern": ["*", "secret:*"]
        case "count", "numreplicas", "limit": ["10", "-10"]
        case "cursor", "offset", "db", "timeout": ["0"]
        case "id": ["1", "LATEST"]
        case "name": ["secrets", "default"]
        case "dir": [directory + "/walk-checkpoint"]
        case "script", "body", "function-code":
            [
                "return redis.call('get', 'secret:str')", "return redis.call('range', '-', '+')",
                "return redis.call('delrange', '-', '+')", "#!lua name=walk\nredis.register_function('w', function() return redis.call('get', 'secret:str') end)",
            ]
        case "sha1": ["0000000000000000000000000000000000000000"]
        case "host": ["127.0.0.1"]
        case "port": ["1"]
        default: ["x", "1"]
        }
    }

    /// Argument lists for one command from its syntax (`Command.arguments`): the required
    /// arguments, then each optional group added alone; each argument takes each of its
    /// candidates in turn (the others their first), so the variants grow with the sum, not the
    /// product, of the candidates.
    static func variants(_ command: Command, directory: String) -> [[String]] {
        let words = command.name.split(separator: "|").map { String($0).uppercased() }
        var required: [String] = []
        var optional: [[String]] = []
        var depth = 0
        var group: [String] = []
        for raw in command.arguments.split(separator: " ").map(String.init) {
            var token = raw
            let opens = token.filter { $0 == "[" }.count
            let closes = token.filter { $0 == "]" }.count
            token.removeAll { $0 == "[" || $0 == "]" }
            if token == "..." || token.isEmpty { depth += opens - closes; continue }
            // `A|B` choices: the first, as a keyword when upper-case, else a placeholder.
            let first = token.split(separator: "|").first.map(String.init) ?? token
            if depth + opens > 0 { group.append(first) } else { required.append(first) }
            depth += opens - closes
            if depth == 0 && !group.isEmpty {
                optional.append(group)
                group = []
            }
        }
        func expand(_ tokens: [String]) -> [[String]] {
            var base = tokens.map { t in t == t.uppercased() && t.first?.isLetter == true ? t : candidates(t, directory: directory)[0] }
            var out = [base]
            for (i, t) in tokens.enumerated() where !(t == t.uppercased() && t.first?.isLetter == true) {
                for value in candidates(t, directory: directory).dropFirst() {
                    var v = base
                    v[i] = value
                    out.append(v)
                }
                base = out[0]
            }
            return out
        }
        var lists = expand(required)
        for g in optional { lists += expand(required + g) }
        return lists.map { words + $0 }
    }

    @Test func aRestrictedUserReachesNothingOutsideItsPatterns() throws {
        let h = try EngineHarness {
            // Every command, but user and server management (command permissions, not key
            // patterns, keep those from such a user).
            $0.users = [try! ACLUser.parse(["app", "on", "nopass", "~app:*", "&*", "+@all", "-acl", "-config", "-shutdown"])]
        }
        Self.seed(h)
        let before = Self.secretState(h)
        var leaks: [String] = []
        var ran = 0
        for command in Self.everyCommand(h.engine) where command.subcommands.isEmpty || command.name.contains("|") {
            for argv in Self.variants(command, directory: h.directory) {
                let session = h.otherSession()
                guard h.run("AUTH", "app", "x", on: session) == .ok else { Issue.record("AUTH failed"); return }
                var out = RESPWriter(version: session.protocolVersion)
                let outcome = h.engine.execute(argv.map { Array($0.utf8) }, session: session, out: &out)
                if let deferred = outcome.deferred { deferred(&out) }
                ran += 1
                if ReplyBytes(out.bytes).contains(Self.marker) { leaks.append("\(argv.joined(separator: " ")) showed a secret value") }
                h.engine.connectionClosed(session)
            }
        }
        #expect(ran > 500)
        #expect(leaks == [])
        #expect(Self.secretState(h) == before, "a secret key changed")
    }
}

/// Substring search over reply bytes.
private struct ReplyBytes {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func contains(_ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard needle.count <= bytes.count else { return false }
        return (0...(bytes.count - needle.count)).contains { i in bytes[i..<i + needle.count].elementsEqual(needle) }
    }
}
