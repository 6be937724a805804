import Foundation

/// A type whose values the store keeps: `Codable`, with an identifier, a type name and a schema
/// version, plus what the store should maintain for it (indexes, full-text fields,
/// relationships). Structs and classes both work; classes get one instance per stored object
/// in a session (the identity map).
///
/// ```swift
/// struct Song: StoredObject {
///     var id: String
///     var title: String
///     var artist: String
///     var year: Int
///     static let indexes: [Index<Song>] = [Index("artist_year", \.artist, \.year), Index("year", \.year)]
///     static let textFields: [TextField<Song>] = [TextField(\.title)]
/// }
/// ```
///
/// Each type lives in its own column families, named after ``typeName``: objects in
/// `NS.obj.TYPE`, index entries in `NS.idx.TYPE`, the full-text index in `NS.text.TYPE`.
public protocol StoredObject: Codable, SendableMetatype {
    /// The identifier's type: `String`, `Int`, `UUID` or any ``IndexValue`` that is `Codable`.
    associatedtype ID: IndexValue & Hashable & Codable

    /// The identifier, unique within the type. The object's key is its encoding.
    var id: ID { get }

    /// The name the type is stored under (column family names). Default: the Swift type's name.
    /// Keep it stable: renaming the Swift type must not change it.
    static var typeName: String { get }

    /// The version of the stored form that this code writes. Default 1. Bump it when the
    /// `Codable` shape changes and teach ``migrate(from:)`` the old shape.
    static var schemaVersion: Int { get }

    /// Secondary indexes the store maintains. Default none.
    static var indexes: [Index<Self>] { get }

    /// Text fields indexed for ``StoreSession/search(_:_:limit:)``. Default none.
    static var textFields: [TextField<Self>] { get }

    /// Relationships to other stored objects, with their delete rules. Default none.
    static var relationships: [Relationship<Self>] { get }

    /// Reads an object stored with another schema version than ``schemaVersion``. Called on
    /// read; the object is written in the current version the next time it is saved.
    ///
    /// The default decodes the old body as `Self` (enough when fields were only added, as
    /// optionals or with defaults in `init(from:)`), and refuses versions newer than this code.
    /// - Throws: ``CairnStoreError/Code/unsupportedVersion`` for a version it cannot read.
    static func migrate(from body: StoredBody) throws -> Self
}

extension StoredObject {
    public static var typeName: String { String(describing: Self.self) }
    public static var schemaVersion: Int { 1 }
    public static var indexes: [Index<Self>] { [] }
    public static var textFields: [TextField<Self>] { [] }
    public static var relationships: [Relationship<Self>] { [] }

    public static func migrate(from body: StoredBody) throws -> Self {
        guard body.schemaVersion <= schemaVersion else {
            throw CairnStoreError(
                .unsupportedVersion, "\(typeName) stored with schema version \(body.schemaVersion), newer than \(schemaVersion)")
        }
        return try body.decode(Self.self)
    }
}

/// A stored object's body as written by an older (or newer) schema version, handed to
/// ``StoredObject/migrate(from:)``.
public struct StoredBody: Sendable {
    /// The schema version the object was written with.
    public let schemaVersion: Int
    /// The object's MessagePack encoding as stored (decrypted).
    public let bytes: [UInt8]

    /// Decodes the body as `type` (an old version of the model, kept for the purpose).
    /// - Throws: ``CairnStoreError/Code/corruptObject`` when it does not decode.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try MessagePackDecoder().decode(T.self, from: bytes)
        } catch {
            throw CairnStoreError(.corruptObject, "schema version \(schemaVersion) does not decode as \(T.self): \(error)")
        }
    }

    /// The body as a dictionary (`String`, `Int64`, `Double`, `Bool`, `Data`, `NSNull`, arrays and
    /// dictionaries as values), for migrations that move fields around by hand.
    public func dictionary() throws -> [String: Any] {
        guard let object = try? MessagePackDecoder().object(from: bytes) as? [String: Any] else {
            throw CairnStoreError(.corruptObject, "schema version \(schemaVersion) is not a map")
        }
        return object
    }
}

/// A declared secondary index over one, two or three fields of `T`, in that order.
///
/// Entries sort by the fields' values (then by id), so an index answers equality on a prefix of
/// its fields and a range (or order) on the next one: `Index("artist_year", \.artist, \.year)`
/// answers `artist == x`, `artist == x && year in 1990..<2000`, and "songs of x by year".
///
/// `@unchecked Sendable`: it holds only its name, key paths and closures that read them; all
/// immutable.
public struct Index<T: StoredObject>: @unchecked Sendable {
    /// The index's name, part of every entry's key: renaming it orphans the old entries.
    public let name: String
    let keyPaths: [AnyKeyPath]
    let encodeFields: (T) -> [UInt8]

    public init<A: IndexValue>(_ name: String, _ a: KeyPath<T, A>) {
        self.name = name
        keyPaths = [a]
        encodeFields = { object in object[keyPath: a].keyBytes }
    }

    public init<A: IndexValue, B: IndexValue>(_ name: String, _ a: KeyPath<T, A>, _ b: KeyPath<T, B>) {
        self.name = name
        keyPaths = [a, b]
        encodeFields = { object in
            var key = object[keyPath: a].keyBytes
            object[keyPath: b].appendKey(to: &key)
            return key
        }
    }

    public init<A: IndexValue, B: IndexValue, C: IndexValue>(
        _ name: String, _ a: KeyPath<T, A>, _ b: KeyPath<T, B>, _ c: KeyPath<T, C>
    ) {
        self.name = name
        keyPaths = [a, b, c]
        encodeFields = { object in
            var key = object[keyPath: a].keyBytes
            object[keyPath: b].appendKey(to: &key)
            object[keyPath: c].appendKey(to: &key)
            return key
        }
    }

    /// The entry's key for `object`: index name, field values, object id.
    func entryKey(_ object: T) -> [UInt8] {
        var key = name.keyBytes
        key += encodeFields(object)
        object.id.appendKey(to: &key)
        return key
    }
}

/// A text field indexed for full-text search. `@unchecked Sendable`: an immutable key path.
public struct TextField<T: StoredObject>: @unchecked Sendable {
    let text: (T) -> String?

    public init(_ keyPath: KeyPath<T, String>) {
        text = { $0[keyPath: keyPath] }
    }

    public init(_ keyPath: KeyPath<T, String?>) {
        text = { $0[keyPath: keyPath] }
    }
}

