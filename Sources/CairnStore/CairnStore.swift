public import CairnClient
import Crypto
import _CryptoExtras
import Foundation
import Synchronization

/// A Codable object store kept in a Cairn server.
///
/// ```swift
/// let client = CairnClient(port: 7379)
/// let store = try await CairnStore.open(client: client, models: [Playlist.self, Song.self])
/// let session = store.session()
/// let song = Song(id: "s1", title: "Heroes", artist: "Bowie", year: 1977)
/// session.insert(song)
/// try await session.save()          // one MULTI/EXEC: object, index and text entries
/// ```
///
/// Everything lives in column families named after ``namespace``: `NS.meta` (encryption salt
/// and key check, counts, named roots, defaults), `NS.refs` (the reverse index of
/// relationships), and per type `NS.obj.TYPE`, `NS.idx.TYPE`, `NS.text.TYPE`. They are created
/// on first use.
///
/// A store is `Sendable`: share it among tasks. A ``StoreSession`` (unit of work, identity map)
/// belongs to one task.
public final class CairnStore: Sendable {
    /// The client the store talks through.
    public let client: CairnClient
    /// The prefix of every column family of this store.
    public let namespace: String
    let codec: BodyCodec
    let metaFamily: String
    let refsFamily: String
    private let state = Mutex(State())
    /// Fault injection for tests of atomicity and conflicts.
    let hooks = Mutex(Hooks())

    private struct State {
        /// By type name: the first Swift type registered under each name (owners found through
        /// the reverse index are looked up by name).
        var models: [String: Model] = [:]
        /// By Swift type: two types may share a name (an old and a new version of a model).
        var modelsByType: [ObjectIdentifier: Model] = [:]
        var families: Set<String> = []
    }

    struct Hooks {
        /// Runs after MULTI and the queued commands were sent, before EXEC.
        var beforeExec: (@Sendable () async throws -> Void)?
        /// Queued just before EXEC (e.g. an unknown command, so the server refuses the EXEC).
        var extraQueuedCommand: [String]?
    }

    /// PBKDF2-HMAC-SHA256 rounds for new encrypted stores (OWASP's 2023 figure, and the
    /// minimum swift-crypto accepts). The count used is stored, so it can grow later.
    public static let keyDerivationRounds = 210_000

    private init(client: CairnClient, namespace: String, cipher: BodyCipher?) {
        self.client = client
        self.namespace = namespace
        self.codec = BodyCodec(cipher: cipher)
        metaFamily = "\(namespace).meta"
        refsFamily = "\(namespace).refs"
    }

    /// Opens (or creates) the store `namespace` on the server behind `client`.
    ///
    /// With a `passphrase`, object bodies are encrypted with AES-256-GCM under a key derived
    /// from it with PBKDF2-HMAC-SHA256 and a random 16-byte salt kept in the store; the first
    /// open stores the salt and a key-check value, later opens verify the passphrase against it.
    /// Keys, index entries, full-text terms, relationship entries and body sizes stay in the
    /// clear (docs/store.md, "Encryption").
    ///
    /// - Parameter models: the types the store holds. A type is also registered the first time
    ///   a session touches it; list them here so that deleting an object can update owners of a
    ///   type this process has not touched yet.
    /// - Throws: ``CairnStoreError/Code/wrongPassphrase`` when the passphrase does not match
    ///   the stored key check; ``CairnStoreError/Code/passphraseRequired`` when the store is
    ///   encrypted and no passphrase was given.
    public static func open(
        client: CairnClient, namespace: String = "store", passphrase: String? = nil, models: [any StoredObject.Type] = []
    ) async throws -> CairnStore {
        let meta = "\(namespace).meta"
        try await createFamily(meta, client: client)
        let cipher = try await openCipher(client.columnFamily(meta), passphrase: passphrase)
        let store = CairnStore(client: client, namespace: namespace, cipher: cipher)
        store.state.withLock { _ = $0.families.insert(meta) }
        try await store.ensureFamily(store.refsFamily)
        for type in models { _ = try await store.model(type) }
        return store
    }

    private static let keyCheckPlaintext = Array("cairnstore key check".utf8)

    private static func openCipher(_ meta: ColumnFamily, passphrase: String?) async throws -> BodyCipher? {
        var salt = try await meta.get("crypto:salt")
        guard let passphrase else {
            if salt != nil {
                throw CairnStoreError(.passphraseRequired, "this store is encrypted; open it with its passphrase")
            }
            return nil
        }
        if salt == nil {
            let fresh = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
            try await meta.set("crypto:rounds", keyDerivationRounds, condition: .ifNotExists)
            // NX: when two processes create the store at once, both end up with the first salt.
            try await meta.set("crypto:salt", fresh, condition: .ifNotExists)
            salt = try await meta.get("crypto:salt")
        }
        let rounds = Int(try await meta.getString("crypto:rounds") ?? "") ?? keyDerivationRounds
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(passphrase.utf8), salt: salt ?? [], using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: rounds)
        let cipher = BodyCipher(key: key)
        let header = Array("key-check".utf8)
        if let check = try await meta.get("crypto:check") {
            do {
                guard try cipher.open(check[...], header: header, typeName: "", objectKey: []) == keyCheckPlaintext else {
                    throw CairnStoreError(.wrongPassphrase, "the key check did not match")
                }
            } catch {
                throw CairnStoreError(.wrongPassphrase, "the passphrase does not open this store")
            }
        } else {
            let check = try cipher.seal(keyCheckPlaintext, header: header, typeName: "", objectKey: [])
            try await meta.set("crypto:check", check, condition: .ifNotExists)
            // Someone else may have won the race with another passphrase: verify what is stored.
            if let stored = try await meta.get("crypto:check"), stored != check {
                guard (try? cipher.open(stored[...], header: header, typeName: "", objectKey: [])) == keyCheckPlaintext else {
                    throw CairnStoreError(.wrongPassphrase, "the passphrase does not open this store")
                }
            }
        }
        return cipher
    }

    /// A new unit of work with an empty identity map.
    public func session() -> StoreSession {
        StoreSession(store: self)
    }

    /// Runs `body` in a fresh session and saves it; when the save meets a conflict, runs it
    /// again in another fresh session (which reads the current objects), up to `attempts` times.
    ///
    /// ```swift
    /// try await store.retrying { session in
    ///     guard var song = try await session.fetch(Song.self, id: "s1") else { return }
    ///     song.plays += 1
    ///     session.update(song)
    /// }
    /// ```
    /// - Throws: ``CairnStoreError/Code/conflict`` when every attempt conflicted; whatever
    ///   `body` throws (nothing is saved then).
    @discardableResult
    public func retrying<T>(attempts: Int = 5, _ body: (StoreSession) async throws -> T) async throws -> T {
        precondition(attempts > 0, "attempts must be at least 1")
        var attempt = 1
        while true {
            let session = session()
            let result = try await body(session)
            do {
                try await session.save()
                return result
            } catch CairnStoreError.Code.conflict where attempt < attempts {
                attempt += 1
                // Back off a little so two writers do not collide again in lockstep.
                try await Task.sleep(nanoseconds: UInt64.random(in: 1_000_000...(5_000_000 * UInt64(attempt))))
            }
        }
    }

    /// The number of stored objects of `type` (kept as a counter updated in every save's EXEC).
    public func count<T: StoredObject>(_ type: T.Type) async throws -> Int {
        let model = try await model(type)
        return Int(try await client.columnFamily(metaFamily).getString(countKey(model)) ?? "0") ?? 0
    }

    func countKey(_ model: Model) -> String { "count:\(model.typeName)" }

    /// Every object of `type` in id order, read `batchSize` at a time, outside any session: no
    /// identity map and no revision tracking, so memory stays flat over millions of objects.
    /// To change one, fetch it through a ``StoreSession``.
    public func all<T: StoredObject>(_ type: T.Type, batchSize: Int = 1000) -> ObjectSequence<T> {
        ObjectSequence(store: self, session: nil, batchSize: batchSize)
    }

    // MARK: Models and families

    /// The model of `type`, registering it (and creating its families) on first use.
    func model<T: StoredObject>(_ type: T.Type) async throws -> Model {
        if let known = state.withLock({ $0.modelsByType[ObjectIdentifier(T.self)] }) { return known }
        let model = Model(T.self, namespace: namespace)
        try await ensureFamily(model.objectFamily)
        if !model.indexes.isEmpty { try await ensureFamily(model.indexFamily) }
        if model.hasTextFields { try await ensureFamily(model.textFamily) }
        state.withLock { s in
            if s.models[T.typeName] == nil { s.models[T.typeName] = model }
            if s.modelsByType[ObjectIdentifier(T.self)] == nil { s.modelsByType[ObjectIdentifier(T.self)] = model }
            return ()
        }
        // Targets of relationships must be known to cascade into them.
        for relationship in model.relationships where self.model(named: relationship.targetType.typeName) == nil {
            _ = try await self.model(relationship.targetType)
        }
        return state.withLock { $0.modelsByType[ObjectIdentifier(T.self)]! }
    }

    /// The model registered for the Swift type `type`, or nil.
    func registeredModel(_ type: any StoredObject.Type) -> Model? {
        state.withLock { $0.modelsByType[ObjectIdentifier(type)] }
    }

    /// The registered model called `typeName`, or nil.
    func model(named typeName: String) -> Model? {
        state.withLock { $0.models[typeName] }
    }

    func ensureFamily(_ name: String) async throws {
        if state.withLock({ $0.families.contains(name) }) { return }
        try await CairnStore.createFamily(name, client: client)
        state.withLock { _ = $0.families.insert(name) }
    }

    private static func createFamily(_ name: String, client: CairnClient) async throws {
        do {
            try await client.createColumnFamily(name)
        } catch let error as CairnClientError where error.code == .server && error.message.contains("already exists") {
            return
        }
    }
}
