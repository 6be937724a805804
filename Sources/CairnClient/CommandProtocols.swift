public import RESP

/// Anything that sends commands to a Cairn (or Redis) server: ``CairnClient``, a
/// ``ColumnFamily``, a ``CairnConnection``, a ``Snapshot``.
public protocol CommandSender: Sendable {
    /// Sends one command and returns its reply as the server sent it: the raw escape hatch for
    /// commands without a typed method.
    ///
    /// `try await client.send(["OBJECT", "ENCODING", "key"])`
    ///
    /// - Throws: ``CairnClientError`` with code `.server` (prefix and message kept) when the
    ///   reply is an error; `.connection`, `.timeout`, `.protocolViolation` for transport failures.
    func send(_ argv: [any RESPArgument]) async throws(CairnClientError) -> RESPValue

    /// Sends many commands in one write and reads their replies in order: one round trip.
    ///
    /// Server errors do not throw here: each appears in place as `RESPValue.error`, so the
    /// replies of the other commands are not lost. Transport failures throw.
    func pipeline(_ commands: [[any RESPArgument]]) async throws(CairnClientError) -> [RESPValue]
}

/// The library's handles (``CairnClient``, ``ColumnFamily``, ``CairnConnection``, ``Snapshot``,
/// ``Transaction``, ``ReplicaReader``): each says where its commands go, and `send` and
/// `pipeline` are written once here for all of them. The typed commands are written once too,
/// as extensions of ``KeyValueReader`` and ``KeyValueWriter``; a ``CommandQueue`` (a
/// ``Transaction``) has each write command's queued form, generated with it from the command spec.
public protocol RoutedSender: CommandSender {
    /// Where the handle's commands go; an implementation detail of the library.
    var _route: CommandRoute { get }
}

/// Where a handle's commands go (a pool and a column family, or one pinned connection).
/// Opaque: only the library makes one.
public struct CommandRoute: Sendable {
    let route: Route
    init(_ route: Route) { self.route = route }
}

extension RoutedSender {
    @discardableResult
    public func send(_ argv: [any RESPArgument]) async throws(CairnClientError) -> RESPValue {
        try await _route.route.send(argv)
    }

    public func pipeline(_ commands: [[any RESPArgument]]) async throws(CairnClientError) -> [RESPValue] {
        try await _route.route.pipeline(commands)
    }
}

/// Read commands: what a ``Snapshot`` offers. The writer protocol adds the rest.
public protocol KeyValueReader: CommandSender {}

/// Read and write commands: ``CairnClient``, ``ColumnFamily``, ``CairnConnection``.
///
/// The write commands that send one command are written once, in the `client` sections of the
/// command spec (`spec/commands/*.json`), which generates each with its ``CommandQueue`` form
/// (`TypedCommands.generated.swift`, by `scripts/command-spec`); the rest are written here by hand.
public protocol KeyValueWriter: KeyValueReader {}

/// Where commands are collected to be sent later, together: a ``Transaction`` (one MULTI/EXEC).
///
/// Every typed write command of ``KeyValueWriter`` generated from the command spec is available
/// on a queue under the same name and parameters; it queues the command instead of sending it,
/// and its reply is among the replies the queue returns when it runs
/// (``CairnClient/transaction(watching:attempts:_:)``).
public protocol CommandQueue {
    /// Queues any command.
    func queue(_ argv: [any RESPArgument])
}

extension CommandSender {
    /// `send` with variadic arguments, for the typed methods.
    func call(_ argv: any RESPArgument...) async throws(CairnClientError) -> RESPValue {
        try await send(argv)
    }
}

// Reply shapes the typed methods expect; anything else is `.unexpectedReply`.
extension RESPValue {
    func expectOK() throws(CairnClientError) {
        switch self {
        case .simpleString: return
        default: throw .unexpected(self, expected: "OK")
        }
    }

    func expectInt() throws(CairnClientError) -> Int64 {
        if case .integer(let n) = self { return n }
        if let s = string, let n = Int64(s) { return n }
        throw .unexpected(self, expected: "an integer")
    }

    func expectBool() throws(CairnClientError) -> Bool {
        if case .boolean(let b) = self { return b }
        return try expectInt() != 0
    }

    func expectBytes() throws(CairnClientError) -> [UInt8]? {
        if isNull { return nil }
        guard let b = bytes else { throw .unexpected(self, expected: "a bulk string or nil") }
        return b
    }

    func expectString() throws(CairnClientError) -> String {
        guard let s = string else { throw .unexpected(self, expected: "a string") }
        return s
    }

    func expectArray() throws(CairnClientError) -> [RESPValue] {
        if isNull { return [] }
        guard let a = array else { throw .unexpected(self, expected: "an array") }
        return a
    }

    func expectDouble() throws(CairnClientError) -> Double {
        if case .double(let d) = self { return d }
        guard let s = string, let d = Double(s) else { throw .unexpected(self, expected: "a number") }
        return d
    }

    /// A RESP3 map, or a RESP2 flat array of alternating keys and values, as text pairs.
    func expectTextPairs() throws(CairnClientError) -> [(String, String)] {
        if case .map(let pairs) = self {
            return pairs.map { ($0.key.text, $0.value.text) }
        }
        let items = try expectArray()
        guard items.count % 2 == 0 else { throw .unexpected(self, expected: "key-value pairs") }
        return stride(from: 0, to: items.count, by: 2).map { (items[$0].text, items[$0 + 1].text) }
    }

    /// A scalar as text: strings decoded, integers and doubles in decimal.
    var text: String {
        switch self {
        case .integer(let n): String(n)
        case .double(let d): String(d)
        default: string ?? description
        }
    }

    /// A flat array of alternating keys and values (RANGE, ITER.NEXT) as entries.
    func expectEntries() throws(CairnClientError) -> [KeyValue] {
        let items = try expectArray()
        guard items.count % 2 == 0 else { throw .unexpected(self, expected: "key-value pairs") }
        var out: [KeyValue] = []
        out.reserveCapacity(items.count / 2)
        for i in stride(from: 0, to: items.count, by: 2) {
            guard let k = items[i].bytes, let v = items[i + 1].bytes else { throw .unexpected(self, expected: "key-value pairs") }
            out.append(KeyValue(key: k, value: v))
        }
        return out
    }

    func expectByteArrays() throws(CairnClientError) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for item in try expectArray() {
            guard let b = item.bytes else { throw .unexpected(self, expected: "an array of strings") }
            out.append(b)
        }
        return out
    }
}

/// A key and its value, as bytes, with text views.
public struct KeyValue: Sendable, Hashable {
    public var key: [UInt8]
    public var value: [UInt8]

    public init(key: [UInt8], value: [UInt8]) {
        self.key = key
        self.value = value
    }

    /// The key decoded as UTF-8 (invalid bytes replaced).
    public var keyString: String { String(decoding: key, as: UTF8.self) }
    /// The value decoded as UTF-8 (invalid bytes replaced).
    public var valueString: String { String(decoding: value, as: UTF8.self) }
}
