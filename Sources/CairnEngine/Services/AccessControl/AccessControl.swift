import Crypto
import Synchronization

/// One user of the server, as `ACL SETUSER` and the `user` lines of `cairn.conf` (or the
/// `aclfile`) describe it, with its passwords kept only as SHA-256 digests.
///
/// Rules are Redis 7.0's (https://redis.io/docs/latest/commands/acl-setuser/): `on`/`off`,
/// `>pw`/`<pw`/`#hash`/`!hash`/`nopass`/`resetpass`, `+@cat`/`-@cat`/`+cmd`/`-cmd`/
/// `+cmd|sub`/`allcommands`/`nocommands`, `~pattern`/`%R~pattern`/`%W~pattern`/`allkeys`/
/// `resetkeys`, `&pattern`/`allchannels`/`resetchannels`, `reset`. Selectors (`(...)`) are not
/// supported. Command rules are kept in the order given (a repeated command rule replaces its
/// earlier one), and ACL LIST / GETUSER print them that way after `+@all` or `-@all`, as
/// Redis 7.2 does; Redis 7.0 re-derives an equivalent but differently ordered list.
public struct ACLUser: Sendable, Equatable {
    public var name: String
    public var enabled = false
    /// Any password (or none) is accepted.
    public var nopass = false
    /// SHA-256 digests of the accepted passwords.
    public var passwordHashes: [[UInt8]] = []
    /// The commands start from `+@all` (true: commands added later are allowed too) or `-@all`.
    public var allCommands = false
    /// Command rules after that start, applied in order.
    public var commandRules: [CommandRule] = []
    public var allKeys = false
    public var keyPatterns: [KeyPattern] = []
    public var allChannels = false
    public var channelPatterns: [[UInt8]] = []

    /// `+@category`, `-@category`, `+command`, `-command|subcommand`.
    public struct CommandRule: Sendable, Equatable {
        public enum Target: Sendable, Equatable {
            case category(ACLCategories, String)
            /// A full name: `get`, `config` (every subcommand) or `config|get`.
            case command(String)
        }
        public var allow: Bool
        public var target: Target

        public var text: String {
            switch target {
            case .category(_, let name): (allow ? "+@" : "-@") + name
            case .command(let name): (allow ? "+" : "-") + name
            }
        }

        func matches(_ command: Command) -> Bool {
            switch target {
            case .category(let c, _): return command.aclCategories.contains(c)
            case .command(let name):
                return command.name == name || (command.name.count > name.count && command.name.hasPrefix(name + "|"))
            }
        }
    }

    /// `~pattern` (read and write), `%R~pattern`, `%W~pattern`.
    public struct KeyPattern: Sendable, Equatable {
        public var pattern: [UInt8]
        public var read: Bool
        public var write: Bool

        public var text: String {
            let p = Bytes.text(pattern)
            return read && write ? "~" + p : (read ? "%R~" : "%W~") + p
        }
    }

    public init(name: String) { self.name = name }

    /// The default user when `cairn.conf` defines none: on, no password, every command, key
    /// and channel. `requirepass` gives it a password.
    public static func defaultUser(requirepass: String) -> ACLUser {
        var user = ACLUser(name: "default")
        user.enabled = true
        user.nopass = true
        user.allCommands = true
        user.allKeys = true
        user.allChannels = true
        user.setRequirepass(requirepass)
        return user
    }

    /// `requirepass` is the default user's password, as in Redis: a non-empty value replaces
    /// its passwords; an empty one leaves the user as the config file made it.
    mutating func setRequirepass(_ password: String) {
        guard !password.isEmpty else { return }
        nopass = false
        passwordHashes = [ACLUser.digest(Array(password.utf8))]
    }

    /// Why a rule was refused; `ACL SETUSER` answers `ERR Error in ACL SETUSER modifier
    /// '<rule>': <reason>`.
    public struct RuleError: Error, Sendable, CustomStringConvertible {
        public var rule: String
        public var reason: String
        public var message: String { "Error in ACL SETUSER modifier '\(rule)': \(reason)" }
        public var description: String { message }
    }

    /// Parses `NAME rule...` (the words after `user`). Rules apply left to right from a user
    /// that is off, has no password and may run nothing, as `ACL SETUSER` does for a new user.
    public static func parse(_ words: [String]) throws(RuleError) -> ACLUser {
        guard let name = words.first, !name.isEmpty else { throw RuleError(rule: "", reason: "user needs a name") }
        guard !name.contains(where: { $0 == " " || $0 == "\n" }) else { throw RuleError(rule: name, reason: "Usernames can't contain spaces or null characters") }
        var user = ACLUser(name: name)
        for rule in words.dropFirst() { try user.apply(rule) }
        return user
    }

    static let syntaxError = "Syntax error"
    static let unknownCommand = "Unknown command or category name in ACL"

    mutating func apply(_ rule: String) throws(RuleError) {
        func fail(_ reason: String) -> RuleError { RuleError(rule: rule, reason: reason) }
        let lower = rule.lowercased()
        switch lower {
        case "on": enabled = true
        case "off": enabled = false
        case "nopass": nopass = true; passwordHashes = []
        case "resetpass": nopass = false; passwordHashes = []
        case "allcommands", "+@all": allCommands = true; commandRules = []
        case "nocommands", "-@all": allCommands = false; commandRules = []
        case "allkeys", "~*": allKeys = true; keyPatterns = []
        case "resetkeys": allKeys = false; keyPatterns = []
        case "allchannels", "&*": allChannels = true; channelPatterns = []
        case "resetchannels": allChannels = false; channelPatterns = []
        case "sanitize-payload", "skip-sanitize-payload": break
        case "reset": self = ACLUser(name: name)
        default:
            if rule.hasPrefix(">") || rule.hasPrefix("<") {
                let hash = ACLUser.digest(Array(rule.utf8.dropFirst()))
                try addOrRemove(hash, adding: rule.hasPrefix(">"), rule)
            } else if rule.hasPrefix("#") || rule.hasPrefix("!") {
                let digits = rule.utf8.dropFirst()
                guard digits.count == 64, digits.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
                      let hash = ACLUser.hex(rule.dropFirst()) else {
                    throw fail("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
                }
                try addOrRemove(hash, adding: rule.hasPrefix("#"), rule)
            } else if rule.hasPrefix("~") || rule.hasPrefix("%") {
                var read = true, write = true
                var pattern = Substring(rule)
                if rule.hasPrefix("%") {
                    guard let tilde = rule.firstIndex(of: "~") else { throw fail(ACLUser.syntaxError) }
                    let flags = rule[rule.index(after: rule.startIndex)..<tilde].uppercased()
                    guard !flags.isEmpty, flags.allSatisfy({ $0 == "R" || $0 == "W" }) else { throw fail(ACLUser.syntaxError) }
                    read = flags.contains("R")
                    write = flags.contains("W")
                    pattern = rule[tilde...]
                }
                guard !allKeys else {
                    throw fail("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
                }
                let bytes = Array(pattern.utf8.dropFirst())
                if let i = keyPatterns.firstIndex(where: { $0.pattern == bytes }) {
                    keyPatterns[i].read = keyPatterns[i].read || read
                    keyPatterns[i].write = keyPatterns[i].write || write
                } else {
                    keyPatterns.append(KeyPattern(pattern: bytes, read: read, write: write))
                }
            } else if rule.hasPrefix("&") {
                guard !allChannels else {
                    throw fail("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
                }
                let bytes = Array(rule.utf8.dropFirst())
                if !channelPatterns.contains(bytes) { channelPatterns.append(bytes) }
            } else if lower.hasPrefix("+") || lower.hasPrefix("-") {
                let allow = lower.hasPrefix("+")
                if lower.hasPrefix("+@") || lower.hasPrefix("-@") {
                    let name = String(lower.dropFirst(2))
                    guard let category = ACLCategories.named(name) else { throw fail(ACLUser.unknownCommand) }
                    commandRules.append(CommandRule(allow: allow, target: .category(category, name)))
                } else {
                    let name = String(lower.dropFirst())
                    guard !name.isEmpty, CommandTable.standard.find(name) != nil, !name.hasSuffix("|") else { throw fail(ACLUser.unknownCommand) }
                    // A command rule replaces an earlier rule for the same command.
                    commandRules.removeAll { $0.target == .command(name) }
                    commandRules.append(CommandRule(allow: allow, target: .command(name)))
                }
            } else {
                throw fail(ACLUser.syntaxError)
            }
        }
    }

    private mutating func addOrRemove(_ hash: [UInt8], adding: Bool, _ rule: String) throws(RuleError) {
        if adding {
            if !passwordHashes.contains(hash) { passwordHashes.append(hash) }
            nopass = false
        } else {
            guard passwordHashes.contains(hash) else {
                throw RuleError(rule: rule, reason: "The password you are trying to remove from the user does not exist")
            }
            passwordHashes.removeAll { $0 == hash }
        }
    }

    /// True when `password` is one of the user's passwords. Every stored digest is compared in
    /// full (constant time), so timing tells nothing about the password or which one matched.
    public func accepts(_ password: [UInt8]) -> Bool {
        if nopass { return true }
        let candidate = ACLUser.digest(password)
        var matched = false
        for hash in passwordHashes where constantTimeEquals(hash, candidate) { matched = true }
        return matched
    }

    /// Whether the user may run `command`. AUTH, HELLO, QUIT and RESET (`noAuth`) are open to
    /// everyone, as in Redis; SHUTDOWN, also `noAuth`, is an admin command like any other.
    func mayRun(_ command: Command) -> Bool {
        if command.flags.contains(.noAuth) && !command.flags.contains(.admin) { return true }
        var allowed = allCommands
        for rule in commandRules where rule.matches(command) { allowed = rule.allow }
        return allowed
    }

    /// Whether the user may read (`read`) and/or write (`write`) `key`: one pattern must grant
    /// both when both are needed, as in Redis.
    func mayAccess(_ key: [UInt8], read: Bool, write: Bool) -> Bool {
        if allKeys { return true }
        return keyPatterns.contains { p in (!read || p.read) && (!write || p.write) && Glob.matches(p.pattern, key) }
    }

    /// Whether the user may read (or, for a `write` range, write) every key of `range`: one
    /// pattern must cover it whole (`KeyRange.isInside`), or match it when it is one key.
    func mayAccess(_ range: KeyRange) -> Bool {
        if allKeys || range.isEmpty { return true }
        let single = range.upper == range.lower + [0] ? range.lower : nil
        return keyPatterns.contains { p in
            guard range.write ? p.write : p.read else { return false }
            return range.isInside(p.pattern) || single.map { Glob.matches(p.pattern, $0) } ?? false
        }
    }

    /// Whether the user may publish or subscribe to `channel`; a PSUBSCRIBE pattern
    /// (`literal`) must equal one of the user's patterns, as in Redis.
    func mayUse(channel: [UInt8], literal: Bool) -> Bool {
        if allChannels { return true }
        return channelPatterns.contains { literal ? $0 == channel : Glob.matches($0, channel) }
    }

    /// The commands part of the rule line: `+@all` or `-@all`, then the rules in order.
    public var commandsText: String {
        ([allCommands ? "+@all" : "-@all"] + commandRules.map(\.text)).joined(separator: " ")
    }

    /// The key patterns as ACL GETUSER's `keys` shows them.
    public var keysText: String { allKeys ? "~*" : keyPatterns.map(\.text).joined(separator: " ") }

    public var channelsText: String { allChannels ? "&*" : channelPatterns.map { "&" + Bytes.text($0) }.joined(separator: " ") }

    /// The user as `ACL LIST` prints it, `ACL SAVE` and `CONFIG REWRITE` write it: passwords
    /// only as `#<sha256 hex>`, never in clear.
    public var rule: String {
        var parts = ["user", name, enabled ? "on" : "off"]
        if nopass { parts.append("nopass") }
        parts += passwordHashes.map { "#" + ACLUser.hexString($0) }
        if !keysText.isEmpty { parts.append(keysText) }
        if allChannels {
            parts.append("&*")
        } else {
            parts.append("resetchannels")
            if !channelPatterns.isEmpty { parts.append(channelsText) }
        }
        parts.append(commandsText)
        return parts.joined(separator: " ")
    }

    static func digest(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    static func hexString(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var s = ""
        for b in bytes { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 15)]) }
        return s
    }

    static func hex(_ text: Substring) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            guard let h = nibble(chars[i]), let l = nibble(chars[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }
}

/// Compares without an early exit, so timing does not reveal how much of a secret matched.
func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var diff = UInt8(truncatingIfNeeded: a.count ^ b.count)
    let n = max(a.count, b.count)
    for i in 0..<n {
        diff |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
    }
    return diff == 0
}

/// The users the server knows, built from the configuration: the `user` lines of `cairn.conf`
/// plus the default user (on, no password, every category unless a `user default` line says
/// otherwise; `requirepass` is its password).
public struct AccessControl: Sendable {
    public internal(set) var users: [String: ACLUser]

    public init(_ configuration: Configuration) {
        self.init(users: configuration.users, requirepass: configuration.requirepass)
    }

    /// `users` plus the default user (from `users` or the built-in one) with `requirepass`.
    init(users list: [ACLUser], requirepass: String) {
        var users: [String: ACLUser] = [:]
        for user in list { users[user.name] = user }
        var defaultUser = users["default"] ?? ACLUser.defaultUser(requirepass: "")
        defaultUser.setRequirepass(requirepass)
        users["default"] = defaultUser
        self.users = users
    }

    /// Users by name, as ACL USERS and ACL LIST list them.
    public var sorted: [ACLUser] { users.values.sorted { $0.name < $1.name } }

    /// True when a new connection is logged in as `default` without AUTH.
    public var defaultNeedsNoAuth: Bool {
        guard let d = users["default"] else { return false }
        return d.enabled && d.nopass
    }

    /// True when some enabled user can log in without a password (the bind warning).
    public var anyoneWithoutPassword: Bool { users.values.contains { $0.enabled && $0.nopass } }

    /// The user `name` if it is enabled and `password` is one of its passwords. Unknown users
    /// cost one digest too, so timing does not tell which names exist.
    public func check(user name: String, password: [UInt8]) -> ACLUser? {
        guard let user = users[name] else {
            _ = ACLUser.digest(password)
            return nil
        }
        let accepted = user.accepts(password)  // before `enabled`, so a disabled user costs the same
        return user.enabled && accepted ? user : nil
    }
}

/// Rate limit on failed AUTH: each client address (IP, without the port) may fail at most
/// `auth-max-failures` times per minute, and the whole server at most
/// `auth-max-failures-total` times, so many source addresses do not multiply the guesses.
/// Past either, AUTH and HELLO AUTH (from the address, or from anyone) are refused without
/// looking at the password until the minute is over. Every failure is logged with the
/// address. Nothing sleeps: a worker queue serves other clients meanwhile.
public final class AuthThrottle: Sendable {
    struct Entry {
        var windowStart: Int64
        var failures: Int
    }

    /// Why an AUTH is refused before its password is checked.
    enum Block {
        case address, server
    }

    static let window: Int64 = 60_000
    /// Addresses remembered at most; the oldest windows are forgotten first past this.
    static let capacity = 10_000
    private let entries = Mutex<[String: Entry]>([:])
    /// Failures of every address in the server's current window.
    private let total = Mutex(Entry(windowStart: 0, failures: 0))

    public init() {}

    /// The IP part of `ip:port` (or `[v6]:port`).
    static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        return String(address[..<colon])
    }

    /// True when `address` has used up its failures for the current window.
    func isBlocked(_ address: String, limit: Int, now: Int64) -> Bool {
        guard limit > 0 else { return false }
        let host = AuthThrottle.host(of: address)
        return entries.withLock { e in
            guard let entry = e[host], now - entry.windowStart < AuthThrottle.window else { return false }
            return entry.failures >= limit
        }
    }

    /// Whether AUTH from `address` is refused now: the address used up `perAddress` failures
    /// of its window, or the server `total` of its own (0 disables either).
    func block(_ address: String, perAddress: Int, total limit: Int, now: Int64) -> Block? {
        if limit > 0 {
            let over = total.withLock { t in now - t.windowStart < AuthThrottle.window && t.failures >= limit }
            if over { return .server }
        }
        return isBlocked(address, limit: perAddress, now: now) ? .address : nil
    }

    /// Records a failure; returns the failures of the address's current window.
    @discardableResult
    func recordFailure(_ address: String, now: Int64) -> Int {
        let host = AuthThrottle.host(of: address)
        total.withLock { t in
            if now - t.windowStart >= AuthThrottle.window { t = Entry(windowStart: now, failures: 0) }
            t.failures += 1
        }
        return entries.withLock { e in
            if e.count >= AuthThrottle.capacity {
                e = e.filter { now - $0.value.windowStart < AuthThrottle.window }
                if e.count >= AuthThrottle.capacity { e.removeAll() }
            }
            var entry = e[host] ?? Entry(windowStart: now, failures: 0)
            if now - entry.windowStart >= AuthThrottle.window { entry = Entry(windowStart: now, failures: 0) }
            entry.failures += 1
            e[host] = entry
            return entry.failures
        }
    }
}

/// What the engine checks before running a request besides arity: access control (users,
/// their commands, key and channel patterns), failed-AUTH throttling and the size limits on
/// keys and values. The users change at run time (ACL SETUSER, DELUSER, LOAD); each change
/// bumps `generation`, and a session re-reads its user when it sees a new one, so a change
/// applies to connections already logged in from their next command, as in Redis.
public final class Guardrails: Sendable {
    private let state: Mutex<AccessControl>
    /// Bumped by every change of the users.
    let generation = Atomic<Int>(0)
    /// The `requirepass` last applied, so CONFIG SET of another option leaves users alone.
    private let requirepass: Mutex<String>
    public let authThrottle = AuthThrottle()
    /// Denied commands, keys, channels and logins (ACL LOG).
    let log = ACLLog()
    let maxKeySize: Atomic<Int>
    let maxValueSize: Atomic<Int>
    let authMaxFailures: Atomic<Int>
    let authMaxFailuresTotal: Atomic<Int>

    /// Users come from `user` lines, or from the `aclfile` (not both, as in Redis).
    init(_ configuration: Configuration) throws(CommandError) {
        var users = configuration.users
        if !configuration.aclfile.isEmpty {
            guard users.isEmpty else {
                throw CommandError("ERR", "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
            }
            users = try ACLFile.load(configuration.aclfile)
        }
        state = Mutex(AccessControl(users: users, requirepass: configuration.requirepass))
        requirepass = Mutex(configuration.requirepass)
        maxKeySize = Atomic(configuration.maxKeySize)
        maxValueSize = Atomic(configuration.maxValueSize)
        authMaxFailures = Atomic(configuration.authMaxFailures)
        authMaxFailuresTotal = Atomic(configuration.authMaxFailuresTotal)
        log.maxLength.store(configuration.acllogMaxLen, ordering: .relaxed)
    }

    func apply(_ configuration: Configuration) {
        let changed = requirepass.withLock { old in
            defer { old = configuration.requirepass }
            return old != configuration.requirepass
        }
        if changed {
            // CONFIG SET requirepass: the default user's password, as in Redis (empty: nopass).
            change { acl in
                guard var d = acl.users["default"] else { return }
                if configuration.requirepass.isEmpty {
                    d.nopass = true
                    d.passwordHashes = []
                } else {
                    d.setRequirepass(configuration.requirepass)
                }
                acl.users["default"] = d
            }
        }
        maxKeySize.store(configuration.maxKeySize, ordering: .relaxed)
        maxValueSize.store(configuration.maxValueSize, ordering: .relaxed)
        authMaxFailures.store(configuration.authMaxFailures, ordering: .relaxed)
        authMaxFailuresTotal.store(configuration.authMaxFailuresTotal, ordering: .relaxed)
        log.maxLength.store(configuration.acllogMaxLen, ordering: .relaxed)
    }

    public var accessControl: AccessControl { state.withLock { $0 } }

    /// Changes the users; sessions pick the change up on their next command.
    func modify<R>(_ body: (inout AccessControl) throws(CommandError) -> R) throws(CommandError) -> R {
        let result = try state.withLock { (acl: inout AccessControl) throws(CommandError) -> R in try body(&acl) }
        generation.add(1, ordering: .relaxed)
        return result
    }

    func change<R>(_ body: (inout AccessControl) -> R) -> R {
        let result = state.withLock { body(&$0) }
        generation.add(1, ordering: .relaxed)
        return result
    }


    /// The current rules of the session's user (nil when it was deleted), re-read when the
    /// users changed since the session last looked.
    func user(of session: Session) -> ACLUser? {
        let g = generation.load(ordering: .relaxed)
        if session.aclGeneration != g {
            session.acl = state.withLock { $0.users[session.user] }
            session.aclGeneration = g
        }
        return session.acl
    }

    /// What a user may not do with a request.
    enum Denial: Equatable {
        case command
        case key([UInt8])
        case channel([UInt8])
    }

    /// Why `user` may not run `argv` (of `command`), or nil when it may. Keys come from the
    /// command table's key positions (`Command.keys(in:)`), so every command is covered: a
    /// write command needs write access to each key it names, any other command read access,
    /// except the sources of the commands in `readSources`, which are only read. (Redis 7.0
    /// asks per key of its key specs; Cairn's table has no per-key flags.)
    static func denial(_ command: Command, _ argv: [[UInt8]], user: ACLUser, session: Session) -> Denial? {
        guard user.mayRun(command) else { return .command }
        if !user.allKeys {
            let write = command.flags.contains(.write)
            let destination = write ? readSources[command.name] : nil
            for (i, key) in command.keys(in: argv).enumerated() {
                let writes = destination.map { $0 == i } ?? write
                if !user.mayAccess(key, read: !writes, write: writes) { return .key(key) }
            }
            if let ranges = command.keyRanges {
                for range in ranges(argv, session) where !user.mayAccess(range) { return .key(range.lower) }
            }
        }
        if !user.allChannels {
            let top = command.name
            if top == "publish" || top == "spublish", argv.count > 1, !user.mayUse(channel: argv[1], literal: false) {
                return .channel(argv[1])
            }
            if top == "subscribe" || top == "ssubscribe" || top == "psubscribe" {
                for channel in argv.dropFirst() where !user.mayUse(channel: channel, literal: top == "psubscribe") {
                    return .channel(channel)
                }
            }
        }
        return nil
    }

    /// Write commands that only read all their keys but one: the position (among the
    /// command's keys) of the one they write.
    static let readSources: [String: Int] = [
        "copy": 1, "sunionstore": 0, "sinterstore": 0, "sdiffstore": 0, "zunionstore": 0,
        "zinterstore": 0, "zdiffstore": 0, "zrangestore": 0, "bitop": 0, "pfmerge": 0, "sort": 1,
    ]

    static func error(_ denial: Denial, _ command: Command) -> CommandError {
        switch denial {
        case .command: CommandError("NOPERM", "this user has no permissions to run the '\(command.name)' command")
        case .key: CommandError("NOPERM", "this user has no permissions to access one of the keys used as arguments")
        case .channel: CommandError("NOPERM", "this user has no permissions to access one of the channels used as arguments")
        }
    }

    /// The refusal for `command` run by `session`, or nil when it may run: NOPERM when the
    /// user may not run the command or touch one of its keys or channels, or an error when a
    /// key or value is over its limit.
    func check(_ command: Command, _ argv: [[UInt8]], session: Session) -> CommandError? {
        guard let user = user(of: session) else { return Guardrails.error(.command, command) }
        if let denial = Guardrails.denial(command, argv, user: user, session: session) { return Guardrails.error(denial, command) }
        guard command.flags.contains(.write) else { return nil }
        let maxKey = maxKeySize.load(ordering: .relaxed)
        if maxKey > 0 {
            for key in command.keys(in: argv) where key.count > maxKey {
                return CommandError("ERR", "key is too large (\(key.count) bytes; max-key-size is \(maxKey))")
            }
        }
        let maxValue = maxValueSize.load(ordering: .relaxed)
        if maxValue > 0 {
            for arg in argv.dropFirst() where arg.count > maxValue {
                return CommandError("ERR", "value is too large (\(arg.count) bytes; max-value-size is \(maxValue))")
            }
        }
        return nil
    }

    /// Records a refused request in ACL LOG (what `check` refused with NOPERM).
    func noteRefusal(_ command: Command, _ argv: [[UInt8]], session: Session, context: String) {
        guard let user = user(of: session) else { return }
        let denial = Guardrails.denial(command, argv, user: user, session: session) ?? .command
        let (reason, object): (String, [UInt8]) = switch denial {
        case .command: ("command", Array(command.name.utf8))
        case .key(let k): ("key", k)
        case .channel(let c): ("channel", c)
        }
        log.add(reason: reason, context: context, object: object, user: session.user, client: session.record.line(now: Clock.milliseconds()))
    }
}
