import Foundation
import RESP

#if canImport(Glibc)
import Glibc
#endif

/// A server to migrate from or to, from a `redis://[user:password@]host:port[/db]` address.
public struct MigrationEndpoint: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var user: String?
    public var password: String?
    public var db: Int

    public init(host: String, port: Int, user: String? = nil, password: String? = nil, db: Int = 0) {
        (self.host, self.port, self.user, self.password, self.db) = (host, port, user, password, db)
    }

    /// Parses `redis://...` (also `cairn://`, or a bare `host:port`); nil when malformed.
    public init?(url: String) {
        var rest = Substring(url)
        for scheme in ["redis://", "cairn://"] where rest.hasPrefix(scheme) { rest = rest.dropFirst(scheme.count) }
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            guard path.isEmpty || Int(path) != nil else { return nil }
            db = Int(path) ?? 0
            rest = rest[..<slash]
        } else {
            db = 0
        }
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let name = credentials[..<colon]
                user = name.isEmpty ? nil : String(name).removingPercentEncoding
                password = String(credentials[credentials.index(after: colon)...]).removingPercentEncoding
            } else {
                password = String(credentials).removingPercentEncoding
            }
        }
        guard let colon = rest.lastIndex(of: ":"), let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
            guard !rest.isEmpty, !rest.contains(":") else { return nil }
            host = String(rest)
            port = 6379
            return
        }
        host = String(rest[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        port = p
        guard !host.isEmpty else { return nil }
    }

    public var description: String { "\(host):\(port)" + (db == 0 ? "" : "/\(db)") }

    /// What to send first on a new connection: AUTH and SELECT as needed.
    var prelude: [[[UInt8]]] {
        var out: [[[UInt8]]] = []
        if let password { out.append([Array("AUTH".utf8)] + (user.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)]) }
        if db != 0 { out.append([Array("SELECT".utf8), Array(String(db).utf8)]) }
        return out
    }
}

/// What a migration did.
public struct MigrationSummary: Sendable, Equatable {
    /// Keys written to the target (RESTORE ... REPLACE answered OK).
    public var copied = 0
    /// Keys the source listed but that were gone (deleted or expired) by the time of DUMP.
    public var vanished = 0
    /// RESTOREs the target refused; the first few messages are in `firstErrors`.
    public var errors = 0
    public var firstErrors: [String] = []
    public var sourceKeys = 0
    public var targetKeys = 0
    public var seconds = 0.0

    /// True when every key went over and both servers count the same keys.
    public var succeeded: Bool { errors == 0 && sourceKeys == targetKeys }

    public var description: String {
        let rate = seconds > 0 ? Int(Double(copied) / seconds) : copied
        return "copied \(copied) keys in " + String(format: "%.2f s (%d keys/s)", seconds, rate)
            + ", \(errors) errors, \(vanished) vanished; DBSIZE source \(sourceKeys), target \(targetKeys)"
    }
}

/// Copies every key of one server to another as migration tools do with Redis: SCAN the
/// source; for each page, one pipeline of `DUMP` + `PTTL` per key to the source, then one
/// pipeline of `RESTORE key ttl payload REPLACE` to the target; at the end, DBSIZE on both.
/// A page is at most `batch` keys, so memory stays bounded by one page of payloads. Works
/// between any servers that speak DUMP/RESTORE (Redis 7.0 and Cairn, either way).
///
/// Keys written on the source during the copy may or may not be seen (SCAN's guarantee:
/// keys present from start to end are seen at least once).
public final class Migrator {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    private let source: RESPLink
    private let target: RESPLink
    private let batch: Int
    private let report: (MigrationProgress) -> Void

    /// - Parameters:
    ///   - source, target: connected sockets (owned by the caller) with receive timeouts.
    ///   - report: called after each page with the progress so far.
    public init(source: Int32, target: Int32, batch: Int = 500, report: @escaping (MigrationProgress) -> Void) {
        self.source = RESPLink(fd: source)
        self.target = RESPLink(fd: target)
        self.batch = max(1, batch)
        self.report = report
    }

    public func run(from: MigrationEndpoint, to: MigrationEndpoint) throws(Failure) -> MigrationSummary {
        let started = Date()
        try source.prelude(from.prelude, name: "source")
        try target.prelude(to.prelude, name: "target")
        var summary = MigrationSummary()
        let total = try source.integer(["DBSIZE"], name: "source")
        var cursor = "0"
        var scanned = 0
        repeat {
            let page = try source.call(["SCAN", cursor, "COUNT", String(batch)], name: "source")
            guard case .array(let parts) = page, parts.count == 2, let next = parts[0].string, case .array(let names) = parts[1] else {
                throw Failure(message: "the source's SCAN reply is malformed: \(page)")
            }
            cursor = next
            let keys = names.compactMap(\.bytes)
            scanned += keys.count
            guard !keys.isEmpty else { continue }
            var reads: [[[UInt8]]] = []
            for key in keys {
                reads.append([Array("DUMP".utf8), key])
                reads.append([Array("PTTL".utf8), key])
            }
            let dumped = try source.pipeline(reads, name: "source")
            var writes: [[[UInt8]]] = []
            for (i, key) in keys.enumerated() {
                guard case .bulkString(let payload) = dumped[2 * i], case .integer(let ttl) = dumped[2 * i + 1], ttl != -2 else {
                    if case .error(let e) = dumped[2 * i] { throw Failure(message: "the source refused DUMP: \(e)") }
                    summary.vanished += 1
                    continue
                }
                writes.append([Array("RESTORE".utf8), key, Array(String(max(0, ttl)).utf8), payload, Array("REPLACE".utf8)])
            }
            for reply in try target.pipeline(writes, name: "target") {
                if case .error(let e) = reply {
                    summary.errors += 1
                    if summary.firstErrors.count < 5 { summary.firstErrors.append(e) }
                } else {
                    summary.copied += 1
                }
            }
            report(MigrationProgress(scanned: scanned, copied: summary.copied, total: total, seconds: Date().timeIntervalSince(started)))
        } while cursor != "0"
        summary.sourceKeys = try source.integer(["DBSIZE"], name: "source")
        summary.targetKeys = try target.integer(["DBSIZE"], name: "target")
        summary.seconds = Date().timeIntervalSince(started)
        return summary
    }
}

/// How far a migration is, for the progress bar or lines.
public struct MigrationProgress: Sendable {
    public var scanned: Int
    public var copied: Int
    /// The source's DBSIZE when the migration started.
    public var total: Int
    public var seconds: Double

    /// `[##########----------]  50%  50000/100000 keys  12000 keys/s`, `width` marks wide.
    public func bar(width: Int = 30) -> String {
        let fraction = total > 0 ? min(1, Double(scanned) / Double(total)) : 1
        let filled = Int(fraction * Double(width))
        let rate = seconds > 0 ? Int(Double(copied) / seconds) : 0
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + String(format: "%3d%%  %d/%d keys  %d keys/s", Int(fraction * 100), copied, total, rate)
    }

    /// `copied 50000 of 100000 keys (50%)`, for a log or a pipe.
    public var line: String {
        let percent = total > 0 ? min(100, scanned * 100 / total) : 100
        return "copied \(copied) of \(total) keys (\(percent)%)"
    }
}

/// A blocking RESP connection over a socket someone else owns: pipelines out, replies in.
struct RESPLink {
    let fd: Int32
    private let parser = Box()

    final class Box { var parser = ValueParser() }

    init(fd: Int32) { self.fd = fd }

    func prelude(_ commands: [[[UInt8]]], name: String) throws(Migrator.Failure) {
        for reply in try pipeline(commands, name: name) {
            if case .error(let e) = reply { throw Migrator.Failure(message: "the \(name) refused the login: \(e)") }
        }
    }

    func call(_ words: [String], name: String) throws(Migrator.Failure) -> RESPValue {
        try pipeline([words.map { Array($0.utf8) }], name: name)[0]
    }

    func integer(_ words: [String], name: String) throws(Migrator.Failure) -> Int {
        let reply = try call(words, name: name)
        guard case .integer(let n) = reply else { throw Migrator.Failure(message: "the \(name) answered \(words[0]) with \(reply)") }
        return Int(n)
    }

    func pipeline(_ commands: [[[UInt8]]], name: String) throws(Migrator.Failure) -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        var bytes: [UInt8] = []
        for c in commands { bytes += RESPWriter.command(c) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Migrator.Failure(message: "writing to the \(name): \(String(cString: strerror(errno)))") }
            sent += n
        }
        var replies: [RESPValue] = []
        replies.reserveCapacity(commands.count)
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while replies.count < commands.count {
            do {
                if let value = try parser.parser.next() {
                    replies.append(value)
                    continue
                }
            } catch {
                throw Migrator.Failure(message: "the \(name)'s reply is malformed: \(error)")
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw Migrator.Failure(message: n == 0 ? "the \(name) closed the connection" : "reading from the \(name): \(String(cString: strerror(errno)))")
            }
            parser.parser.append(Array(chunk[..<n]))
        }
        return replies
    }
}
