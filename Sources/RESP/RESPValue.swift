/// The protocol version of a connection: RESP2 by default, RESP3 after `HELLO 3`.
public enum RESPVersion: Int, Sendable {
    case v2 = 2
    case v3 = 3
}

/// A RESP2/RESP3 value, as clients receive it. https://redis.io/docs/latest/develop/reference/protocol-spec/
public indirect enum RESPValue: Sendable, Equatable, CustomStringConvertible {
    /// `+OK`
    case simpleString(String)
    /// `-ERR message`: the full text, prefix included. RESP3 blob errors (`!`) decode to this too.
    case error(String)
    case integer(Int64)
    case bulkString([UInt8])
    /// RESP2 `$-1` and `*-1`, RESP3 `_`.
    case null
    case array([RESPValue])
    case double(Double)
    case boolean(Bool)
    case bigNumber(String)
    case verbatimString(format: String, text: [UInt8])
    /// Key-value pairs in the order received.
    case map([(key: RESPValue, value: RESPValue)])
    case set([RESPValue])
    case push([RESPValue])

    public static func == (lhs: RESPValue, rhs: RESPValue) -> Bool {
        switch (lhs, rhs) {
        case let (.simpleString(a), .simpleString(b)): a == b
        case let (.error(a), .error(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.bulkString(a), .bulkString(b)): a == b
        case (.null, .null): true
        case let (.array(a), .array(b)): a == b
        case let (.double(a), .double(b)): a == b || (a.isNaN && b.isNaN)
        case let (.boolean(a), .boolean(b)): a == b
        case let (.bigNumber(a), .bigNumber(b)): a == b
        case let (.verbatimString(f1, t1), .verbatimString(f2, t2)): f1 == f2 && t1 == t2
        case let (.map(a), .map(b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case let (.set(a), .set(b)): a == b
        case let (.push(a), .push(b)): a == b
        default: false
        }
    }

    /// Text of a bulk, simple or verbatim string (UTF-8, lossy).
    public var string: String? {
        switch self {
        case .simpleString(let s): s
        case .bulkString(let b): String(decoding: b, as: UTF8.self)
        case .verbatimString(_, let t): String(decoding: t, as: UTF8.self)
        default: nil
        }
    }

    public var bytes: [UInt8]? {
        switch self {
        case .bulkString(let b): b
        case .simpleString(let s): Array(s.utf8)
        case .verbatimString(_, let t): t
        default: nil
        }
    }

    public var int: Int64? {
        if case .integer(let n) = self { return n }
        return nil
    }

    public var array: [RESPValue]? {
        switch self {
        case .array(let a), .set(let a), .push(let a): a
        default: nil
        }
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .simpleString(let s): "+\(s)"
        case .error(let s): "-\(s)"
        case .integer(let n): ":\(n)"
        case .bulkString(let b): "\"\(String(decoding: b, as: UTF8.self))\""
        case .null: "(nil)"
        case .array(let a): "[\(a.map(\.description).joined(separator: ", "))]"
        case .double(let d): ",\(d)"
        case .boolean(let b): b ? "#t" : "#f"
        case .bigNumber(let s): "(\(s)"
        case .verbatimString(_, let t): "\"\(String(decoding: t, as: UTF8.self))\""
        case .map(let m): "{\(m.map { "\($0.key): \($0.value)" }.joined(separator: ", "))}"
        case .set(let a): "~[\(a.map(\.description).joined(separator: ", "))]"
        case .push(let a): ">[\(a.map(\.description).joined(separator: ", "))]"
        }
    }
}

/// Size limits every parser enforces, so hostile input gets an error instead of our memory.
public struct RESPLimits: Sendable {
    /// Largest bulk string (`proto-max-bulk-len`). Default 512 MiB.
    public var maxBulkLength = 512 * 1024 * 1024
    /// Most elements of one multibulk request or aggregate. Default 1,048,576.
    public var maxMultibulkCount = 1024 * 1024
    /// Longest inline request line. Default 64 KiB.
    public var maxInlineLength = 64 * 1024
    /// Deepest nesting of aggregates (value parser). Default 128.
    public var maxDepth = 128
    /// Most elements of one multibulk request from a client that still has to AUTH: 10, as
    /// Redis 7 (`processMultibulkBuffer`), enough for `AUTH` and `HELLO 3 AUTH u p SETNAME n`.
    public var maxUnauthenticatedMultibulkCount = 10
    /// Largest bulk string from a client that still has to AUTH: 16 KiB, as Redis 7.
    public var maxUnauthenticatedBulkLength = 16384

    public init() {}
}

/// A protocol violation. `message` is Redis's text where Redis has one; the server sends
/// `-ERR <message>` and closes the connection.
public struct RESPProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
