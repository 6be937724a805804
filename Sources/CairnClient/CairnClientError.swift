import RESP

/// An error from the client: a server error reply, or a failure of the connection, a timeout,
/// a protocol violation, a closed client or a reply of an unexpected shape.
///
/// Match on ``code`` in a `catch`:
/// ```swift
/// do { try await client.incr("name") }
/// catch let error as CairnClientError where error.code == .server && error.prefix == "ERR" { print(error.message) }
/// ```
/// After a ``Code/connection``, ``Code/timeout`` or ``Code/protocolViolation`` the connection that
/// carried the request has been closed (its reply stream can no longer be trusted); the pool opens
/// a new one for the next request. Whether the request reached the server is unknown.
public struct CairnClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: new codes may be added, so `switch` with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The server replied with an error (`-ERR ...`, `-WRONGTYPE ...`); see ``CairnClientError/prefix``.
        public static let server = Code("server")
        /// Connecting failed, or the connection broke (reset, closed by the server) mid-request.
        public static let connection = Code("connection")
        /// Connecting or a reply took longer than the configured timeout.
        public static let timeout = Code("timeout")
        /// The TLS handshake failed: the server's certificate is not trusted or names another
        /// host, or the two sides share no protocol version or cipher (the message says which).
        /// Not retried: connecting again would fail the same way.
        public static let tls = Code("tls")
        /// The server sent bytes that are not valid RESP.
        public static let protocolViolation = Code("protocol")
        /// The reply was valid RESP but not the shape the typed method expects.
        public static let unexpectedReply = Code("unexpected reply")
        /// The client was closed with ``CairnClient/close()``.
        public static let closed = Code("closed")
        /// EXEC returned nil: a watched key changed, so the transaction did not run.
        public static let transactionAborted = Code("transaction aborted")
        /// The task waiting for the request was cancelled.
        public static let cancelled = Code("cancelled")

        /// Matches an error of this code: `catch CairnClientError.Code.timeout { ... }`.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? CairnClientError)?.code == code
        }
    }

    public var code: Code
    /// For ``Code/server``: the first word of the error reply (`ERR`, `WRONGTYPE`, `NOAUTH`, `EXECABORT`...).
    /// Empty for other codes.
    public var prefix: String
    /// The rest of the server's error text, or a description of the client-side failure.
    public var message: String

    public init(_ code: Code, prefix: String = "", message: String) {
        self.code = code
        self.prefix = prefix
        self.message = message
    }

    /// A server error from the full text of an error reply (`"WRONGTYPE Operation against..."`).
    public init(serverReply text: String) {
        if let space = text.firstIndex(of: " ") {
            self.init(.server, prefix: String(text[..<space]), message: String(text[text.index(after: space)...]))
        } else {
            self.init(.server, prefix: text, message: "")
        }
    }

    public var description: String {
        code == .server ? "\(prefix) \(message)" : "\(code): \(message)"
    }

    static func unexpected(_ value: RESPValue, expected: String) -> CairnClientError {
        CairnClientError(.unexpectedReply, message: "expected \(expected), got \(value)")
    }
}
