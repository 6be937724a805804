/// A RocksDB failure, with a code mapped from RocksDB's status text.
///
/// Match codes in `catch` clauses: `catch StorageError.Code.busy { ... }`.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let notFound = Code("not found")
        public static let corruption = Code("corruption")
        public static let notSupported = Code("not supported")
        public static let invalidArgument = Code("invalid argument")
        public static let ioError = Code("I/O error")
        /// The disk is full (an I/O error saying "No space left").
        public static let noSpace = Code("no space")
        /// The data directory is locked by another process, or a resource is busy.
        public static let busy = Code("busy")
        public static let incomplete = Code("incomplete")
        public static let timedOut = Code("timed out")
        public static let aborted = Code("aborted")
        public static let tryAgain = Code("try again")
        /// The database (or this handle) was closed.
        public static let closed = Code("closed")
        /// The column family was dropped.
        public static let familyDropped = Code("family dropped")
        public static let unknown = Code("unknown")

        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? StorageError)?.code == code
        }
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// Maps RocksDB's status text (`"IO error: ..."`, `"Corruption: ..."`) to a code.
    public init(status text: String) {
        let code: Code
        if text.hasPrefix("NotFound") || text.hasPrefix("Not found") {
            code = .notFound
        } else if text.hasPrefix("Corruption") {
            code = .corruption
        } else if text.hasPrefix("Not implemented") {
            code = .notSupported
        } else if text.hasPrefix("Invalid argument") {
            code = text.contains("dropped") ? .familyDropped : .invalidArgument
        } else if text.hasPrefix("IO error") {
            if text.contains("No space left") {
                code = .noSpace
            } else if text.contains("lock") && (text.contains("Resource temporarily unavailable") || text.contains("No locks available") || text.contains("already held")) {
                self.init(code: .busy, message: "the data directory is in use by another process (its LOCK file is held): \(text)")
                return
            } else {
                code = .ioError
            }
        } else if text.hasPrefix("Resource busy") {
            code = .busy
        } else if text.hasPrefix("Operation timed out") {
            code = .timedOut
        } else if text.hasPrefix("Operation aborted") {
            code = .aborted
        } else if text.hasPrefix("Operation failed. Try again") {
            code = .tryAgain
        } else if text.hasPrefix("Result incomplete") || text.hasPrefix("Incomplete") {
            code = .incomplete
        } else {
            code = .unknown
        }
        self.init(code: code, message: text)
    }

    static let closedDatabase = StorageError(code: .closed, message: "the database is closed")
}
