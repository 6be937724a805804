import Crypto
import Foundation

/// The stored form of an object: a 12-byte header, then the object's MessagePack encoding, in
/// the clear or sealed with AES-GCM.
///
/// ```
/// byte 0      format (1)
/// byte 1      flags: bit 0 = encrypted
/// bytes 2-3   schema version the body was written with, big-endian
/// bytes 4-11  revision: 1 when created, +1 on every save, big-endian
/// bytes 12... MessagePack, or AES-GCM nonce (12) + ciphertext + tag (16) of it
/// ```
///
/// MessagePack (``MessagePackEncoder``): self-describing like JSON, so any `Codable` type works
/// without extra code and a migration can read an old body as an old struct or a dictionary;
/// standard, so other languages' Redis and MessagePack libraries read the objects; and compact
/// and quick to decode (several times faster than JSON here). The header keeps what the store
/// needs (version, revision) readable without decoding or decrypting the body.
struct BodyHeader: Equatable {
    static let size = 12
    static let currentFormat: UInt8 = 1
    static let encryptedFlag: UInt8 = 1

    var flags: UInt8
    var schemaVersion: Int
    var revision: UInt64

    var isEncrypted: Bool { flags & BodyHeader.encryptedFlag != 0 }

    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(BodyHeader.size)
        out.append(BodyHeader.currentFormat)
        out.append(flags)
        BigEndian.append(UInt16(truncatingIfNeeded: schemaVersion), to: &out)
        BigEndian.append(revision, to: &out)
        return out
    }

    init(flags: UInt8, schemaVersion: Int, revision: UInt64) {
        self.flags = flags
        self.schemaVersion = schemaVersion
        self.revision = revision
    }

    init?(_ body: [UInt8]) {
        guard body.count >= BodyHeader.size, body[0] == BodyHeader.currentFormat else { return nil }
        flags = body[1]
        schemaVersion = Int(BigEndian.read(UInt16.self, body[2..<4]))
        revision = BigEndian.read(UInt64.self, body[4..<12])
    }
}

/// Seals and opens object bodies with the store's key. Each body gets a fresh random 96-bit
/// nonce; the header, the type name and the object's key are authenticated with it, so a body
/// cannot be moved to another key or have its version or revision changed unnoticed.
/// `@unchecked Sendable`: `SymmetricKey` is an immutable value type that swift-crypto 3.12 does not
/// mark `Sendable`.
struct BodyCipher: @unchecked Sendable {
    let key: SymmetricKey

    func seal(_ plaintext: [UInt8], header: [UInt8], typeName: String, objectKey: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: context(header, typeName, objectKey))
        guard let combined = box.combined else { throw CairnStoreError(.corruptObject, "AES-GCM gave no combined form") }
        return Array(combined)
    }

    func open(_ sealed: ArraySlice<UInt8>, header: [UInt8], typeName: String, objectKey: [UInt8]) throws -> [UInt8] {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return Array(try AES.GCM.open(box, using: key, authenticating: context(header, typeName, objectKey)))
        } catch {
            throw CairnStoreError(.corruptObject, "\(typeName) body does not decrypt with this store's key: \(error)")
        }
    }

    private func context(_ header: [UInt8], _ typeName: String, _ objectKey: [UInt8]) -> [UInt8] {
        header + typeName.keyBytes + objectKey
    }
}

/// Encodes and decodes whole stored bodies for one store (encrypting when it has a key).
struct BodyCodec: Sendable {
    let cipher: BodyCipher?

    func encode(body: [UInt8], model: Model, objectKey: [UInt8], revision: UInt64) throws -> [UInt8] {
        let header = BodyHeader(
            flags: cipher == nil ? 0 : BodyHeader.encryptedFlag, schemaVersion: model.schemaVersion, revision: revision
        ).bytes
        guard let cipher else { return header + body }
        return header + (try cipher.seal(body, header: header, typeName: model.typeName, objectKey: objectKey))
    }

    /// The header and the (decrypted) MessagePack of a stored body.
    func open(_ body: [UInt8], model: Model, objectKey: [UInt8]) throws -> (BodyHeader, ArraySlice<UInt8>) {
        guard let header = BodyHeader(body) else {
            throw CairnStoreError(.corruptObject, "\(model.typeName) body has no valid header")
        }
        let payload = body[BodyHeader.size...]
        guard header.isEncrypted else { return (header, payload) }
        guard let cipher else {
            throw CairnStoreError(.passphraseRequired, "\(model.typeName) body is encrypted; open the store with its passphrase")
        }
        let plain = try cipher.open(payload, header: Array(body[0..<BodyHeader.size]), typeName: model.typeName, objectKey: objectKey)
        return (header, plain[...])
    }

    /// The object in a stored body, migrated to the current schema when it is older.
    func decode(_ body: [UInt8], model: Model, objectKey: [UInt8]) throws -> (any StoredObject, BodyHeader, ArraySlice<UInt8>) {
        let (header, plain) = try open(body, model: model, objectKey: objectKey)
        let object = try model.decodeBody(header.schemaVersion, plain)
        return (object, header, plain)
    }

    /// As ``decode(_:model:objectKey:)`` for a type known here: no existential box, no cast.
    func decode<T: StoredObject>(_ type: T.Type, _ body: [UInt8], model: Model, objectKey: [UInt8]) throws -> (T, BodyHeader, ArraySlice<UInt8>) {
        let (header, plain) = try open(body, model: model, objectKey: objectKey)
        return (try Model.decode(T.self, version: header.schemaVersion, plain), header, plain)
    }
}
