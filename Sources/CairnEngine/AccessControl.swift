import Crypto
import Synchronization

/// What a user may run, by command category. A command's category comes from its flags:
/// `.admin` → admin (whatever else it has), else `.write` → write, else `.readonly` → read;
/// a command with none of these (PING, ECHO, CLIENT SETNAME, INFO, COMMAND...) is open to any
/// authenticated user.
///
/// In the spirit of Redis ACL categories (https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/),
/// with three coarse categories instead of Redis's twenty.
public struct CommandCategories: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let read = CommandCategories(rawValue: 1 << 0)
    public static let write = CommandCategories(rawValue: 1 << 1)
    public static let admin = CommandCategories(rawValue: 1 << 2)
    public static let all: CommandCategories = [.read, .write, .admin]

    /// Names in the order ACL LIST and ACL CAT print them.
    public static let named: [(String, CommandCategories)] = [("read", .read), ("write", .write), ("admin", .admin)]

    /// The category a command needs, or an empty set when any authenticated user may run it.
    public static func required(by flags: Command.Flags) -> CommandCategories {
        if flags.contains(.admin) { return .admin }
        if flags.contains(.write) { return .write }
        if flags.contains(.readonly) { return .read }
        return []
    }
}

/// One user of the server: a `user` line of `cairn.conf`, with its passwords kept only as
/// SHA-256 digests.
///
/// Syntax (a subset of Redis's ACL rules; https://redis.io/docs/latest/commands/acl-setuser/):
/// `user NAME [on|off] [>password | #sha256hex | nopass | resetpass] [+@read] [+@write]
/// [+@admin] [+@all | allcommands] [-@category | nocommands] [~* | allkeys] [&* | allchannels] [reset]`.
/// Key patterns other than `~*` are not supported: every user sees every key.
public struct ACLUser: Sendable, Equatable {
    public var name: String
    public var enabled = false
    /// Any password (or none) is accepted.
    public var nopass = false
    /// SHA-256 digests of the accepted passwords.
    public var passwordHashes: [[UInt8]] = []
    public var categories: CommandCategories = []

    public init(name: String) { self.name = name }

    /// The default user when `cairn.conf` defines none: on, no password, every category.
    /// `requirepass` gives it a password.
    public static func defaultUser(requirepass: String) -> ACLUser {
        var user = ACLUser(name: "default")
        user.enabled = true
        user.nopass = true
        user.categories = .all
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

    public struct RuleError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Parses `NAME rule...` (the words after `user`). Rules apply left to right from a user
    /// that is off, has no password and may run nothing, as `ACL SETUSER` does for a new user.
    public static func parse(_ words: [String]) throws(RuleError) -> ACLUser {
        guard let name = words.first, !name.isEmpty else { throw RuleError(message: "user needs a name") }
        guard !name.contains(where: { $0 == " " || $0 == "\n" }) else { throw RuleError(message: "bad user name '\(name)'") }
        var user = ACLUser(name: name)
        for rule in words.dropFirst() { try user.apply(rule) }
        return user
    }

    mutating func apply(_ rule: String) throws(RuleError) {
        let lower = rule.lowercased()
        switch lower {
        case "on": enabled = true
        case "off": enabled = false
        case "nopass": nopass = true; passwordHashes = []
        case "resetpass": nopass = false; passwordHashes = []
        case "allcommands", "+@all": categories = .all
        case "nocommands", "-@all": categories = []
        // Every user sees every key and channel; these are accepted so Redis ACL lines work.
        case "allkeys", "~*", "%rw~*", "allchannels", "&*", "resetchannels": break
        case "reset": self = ACLUser(name: name)
        default:
            if rule.hasPrefix(">") {
                let hash = ACLUser.digest(Array(rule.utf8.dropFirst()))
                if !passwordHashes.contains(hash) { passwordHashes.append(hash) }
                nopass = false
            } else if rule.hasPrefix("<") {
                let hash = ACLUser.digest(Array(rule.utf8.dropFirst()))
                passwordHashes.removeAll { $0 == hash }
            } else if rule.hasPrefix("#") || rule.hasPrefix("!") {
                guard let hash = ACLUser.hex(rule.dropFirst()), hash.count == 32 else {
                    throw RuleError(message: "'\(rule.prefix(1))' must be followed by a 64-digit SHA-256 hex digest")
                }
                if rule.hasPrefix("#") {
                    if !passwordHashes.contains(hash) { passwordHashes.append(hash) }
                    nopass = false
                } else {
                    passwordHashes.removeAll { $0 == hash }
                }
            } else if (lower.hasPrefix("+@") || lower.hasPrefix("-@")),
                      let category = CommandCategories.named.first(where: { $0.0 == lower.dropFirst(2) })?.1 {
                if lower.hasPrefix("+") { categories.insert(category) } else { categories.remove(category) }
            } else if lower.hasPrefix("~") || lower.hasPrefix("%") {
                throw RuleError(message: "key pattern '\(rule)' is not supported: Cairn users see every key (use ~* or allkeys)")
            } else {
                throw RuleError(message: "unknown ACL rule '\(rule)' (Cairn knows on, off, >pass, #sha256, nopass, resetpass, +@read, +@write, +@admin, +@all, -@category, ~*)")
            }
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

    /// The user as `ACL LIST` prints it and `CONFIG REWRITE` writes it: passwords only as
    /// `#<sha256 hex>`, never in clear.
    public var rule: String {
        var parts = ["user", name, enabled ? "on" : "off"]
        if nopass { parts.append("nopass") }
        parts += passwordHashes.map { "#" + ACLUser.hexString($0) }
        parts.append("~*")
        parts.append("&*")
        if categories == .all {
            parts.append("+@all")
        } else if categories.isEmpty {
            parts.append("-@all")
        } else {
            parts += CommandCategories.named.filter { categories.contains($0.1) }.map { "+@" + $0.0 }
        }
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
    public let users: [String: ACLUser]

    public init(_ configuration: Configuration) {
        var users: [String: ACLUser] = [:]
        for user in configuration.users { users[user.name] = user }
        var defaultUser = users["default"] ?? ACLUser.defaultUser(requirepass: "")
        defaultUser.setRequirepass(configuration.requirepass)
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

/// What the engine checks before running a request besides arity: access control, failed-AUTH
/// throttling and the size limits on keys and values. Rebuilt from the configuration at start
/// and after every CONFIG SET, so the request path reads it without copying the configuration.
public final class Guardrails: Sendable {
    private let state: Mutex<AccessControl>
    public let authThrottle = AuthThrottle()
    let maxKeySize: Atomic<Int>
    let maxValueSize: Atomic<Int>
    let authMaxFailures: Atomic<Int>
    let authMaxFailuresTotal: Atomic<Int>

    init(_ configuration: Configuration) {
        state = Mutex(AccessControl(configuration))
        maxKeySize = Atomic(configuration.maxKeySize)
        maxValueSize = Atomic(configuration.maxValueSize)
        authMaxFailures = Atomic(configuration.authMaxFailures)
        authMaxFailuresTotal = Atomic(configuration.authMaxFailuresTotal)
    }

    func apply(_ configuration: Configuration) {
        let acl = AccessControl(configuration)
        state.withLock { $0 = acl }
        maxKeySize.store(configuration.maxKeySize, ordering: .relaxed)
        maxValueSize.store(configuration.maxValueSize, ordering: .relaxed)
        authMaxFailures.store(configuration.authMaxFailures, ordering: .relaxed)
        authMaxFailuresTotal.store(configuration.authMaxFailuresTotal, ordering: .relaxed)
    }

    public var accessControl: AccessControl { state.withLock { $0 } }

    /// The refusal for `command` run by `session`, or nil when it may run: NOPERM when the
    /// user lacks the command's category, or an error when a key or value is over its limit.
    func check(_ command: Command, _ argv: [[UInt8]], session: Session) -> CommandError? {
        let needed = CommandCategories.required(by: command.flags)
        if !needed.isEmpty && !session.permissions.isSuperset(of: needed) {
            return CommandError("NOPERM", "User \(session.user) has no permissions to run the '\(command.name)' command")
        }
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
}
