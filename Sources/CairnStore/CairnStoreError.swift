/// An error of the object store. Transport and server failures come through as the client's
/// `CairnClientError`; everything the store itself detects is one of these.
///
/// Match on ``code`` in a `catch`:
/// ```swift
/// do { try await session.save() }
/// catch CairnStoreError.Code.conflict { ... fetch again and redo the change ... }
/// ```
public struct CairnStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: new codes may be added, so `switch` with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Another writer changed or deleted an object this session changed since the session read
        /// it (or between the save's read and its commit). Nothing of the save was written; start
        /// a new session, or use ``CairnStore/retrying(attempts:_:)``.
        public static let conflict = Code("conflict")
        /// The passphrase does not open this store (its key check did not decrypt).
        public static let wrongPassphrase = Code("wrong passphrase")
        /// The store holds encrypted objects (or an encryption salt) and no passphrase was given.
        public static let passphraseRequired = Code("passphrase required")
        /// A stored body could not be read: bad header, failed decryption, or an encoding that does not
        /// decode into the type.
        public static let corruptObject = Code("corrupt object")
        /// The stored object's schema version is one the type cannot migrate from.
        public static let unsupportedVersion = Code("unsupported version")
        /// A query names fields no declared index covers.
        public static let noIndex = Code("no index")
        /// A stored reference, root or default names a type other than the one asked for, or a
        /// type this store was not told about.
        public static let typeMismatch = Code("type mismatch")
        /// The server refused a command of the save's transaction, or a command inside EXEC
        /// failed; see the message.
        public static let saveFailed = Code("save failed")

        /// Matches an error of this code: `catch CairnStoreError.Code.conflict { ... }`.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? CairnStoreError)?.code == code
        }
    }

    public var code: Code
    /// What happened, with the type and (encoded) identifier when there is one.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
