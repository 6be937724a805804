/// A reference to one stored object of type `Target`, or none. Stored as the target's id.
///
/// Resolve it with ``StoreSession/object(_:)``; the target is read when asked for, not with
/// the object that holds the reference.
public struct Reference<Target: StoredObject>: Codable, Hashable {
    public var id: Target.ID?

    public init(_ id: Target.ID? = nil) { self.id = id }
    public init(_ target: Target) { self.id = target.id }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        id = container.decodeNil() ? nil : try container.decode(Target.ID.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let id { try container.encode(id) } else { try container.encodeNil() }
    }
}

/// An ordered to-many relationship: the ids of `Target` objects in the order given. Stored as a
/// array of ids inside the owner, so the order survives every reload.
///
/// Resolve it with ``StoreSession/objects(_:)``, which reads the targets in batches (MGET).
public struct ToMany<Target: StoredObject>: Codable, Hashable, RandomAccessCollection {
    public var ids: [Target.ID]

    public init(_ ids: [Target.ID] = []) { self.ids = ids }
    public init(_ targets: [Target]) { self.ids = targets.map(\.id) }

    public var startIndex: Int { ids.startIndex }
    public var endIndex: Int { ids.endIndex }
    public subscript(position: Int) -> Target.ID { ids[position] }

    /// Appends `target` at the end.
    public mutating func append(_ target: Target) { ids.append(target.id) }
    /// Inserts `target` at `index`.
    public mutating func insert(_ target: Target, at index: Int) { ids.insert(target.id, at: index) }
    /// Removes the entry at `index`.
    @discardableResult
    public mutating func remove(at index: Int) -> Target.ID { ids.remove(at: index) }
    /// Removes every entry for `id`.
    public mutating func remove(id: Target.ID) { ids.removeAll { $0 == id } }
    /// Moves the entry at `from` so that it ends up at index `to`.
    public mutating func move(from: Int, to: Int) {
        let id = ids.remove(at: from)
        ids.insert(id, at: to)
    }

    public init(from decoder: any Decoder) throws {
        ids = try decoder.singleValueContainer().decode([Target.ID].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(ids)
    }
}

/// What deleting the owner of a relationship does to the objects it points at.
///
/// Whatever the rule, deleting a *target* removes it from every relationship that points at it
/// (a to-one becomes nil, a to-many loses the entry), in the same transaction, so no stored
/// relationship dangles.
public enum DeleteRule: Sendable, Hashable {
    /// The targets stay; only the owner's side goes.
    case nullify
    /// The targets are deleted with the owner (and their own cascades run, transitively).
    case cascade
}

/// A declared relationship of `Owner`: its name, where it lives, and its delete rule.
///
/// ```swift
/// static let relationships: [Relationship<Playlist>] = [.toMany("songs", \.songs, deleteRule: .cascade)]
/// ```
///
/// The store keeps a reverse index (target → owners) so deleting a target can find and update
/// the owners. `@unchecked Sendable`: immutable key paths and closures over them.
public struct Relationship<Owner: StoredObject>: @unchecked Sendable {
    /// The relationship's name, part of the reverse-index keys.
    public let name: String
    public let deleteRule: DeleteRule
    let targetType: any StoredObject.Type
    /// The encoded ids the owner points at.
    let targetKeys: (Owner) -> [[UInt8]]
    /// Removes every pointer to the target with encoded id `key` from the owner.
    let remove: (inout Owner, [UInt8]) -> Void

    /// An ordered to-many relationship kept in `keyPath`.
    public static func toMany<Target: StoredObject>(
        _ name: String, _ keyPath: WritableKeyPath<Owner, ToMany<Target>>, deleteRule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(
            name: name, deleteRule: deleteRule, targetType: Target.self,
            targetKeys: { owner in owner[keyPath: keyPath].ids.map(\.keyBytes) },
            remove: { owner, key in owner[keyPath: keyPath].ids.removeAll { $0.keyBytes == key } }
        )
    }

    /// A to-one relationship kept in `keyPath`.
    public static func toOne<Target: StoredObject>(
        _ name: String, _ keyPath: WritableKeyPath<Owner, Reference<Target>>, deleteRule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(
            name: name, deleteRule: deleteRule, targetType: Target.self,
            targetKeys: { owner in owner[keyPath: keyPath].id.map { [$0.keyBytes] } ?? [] },
            remove: { owner, key in
                if owner[keyPath: keyPath].id?.keyBytes == key { owner[keyPath: keyPath].id = nil }
            }
        )
    }
}
