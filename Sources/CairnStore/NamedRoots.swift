import CairnClient

// Named roots: a name in the store's meta family (`root:NAME`) whose value is the type name and
// the encoded ids of one object or a list of them. Written with the session's next save.
extension StoreSession {
    /// Names `object` as root `name` (replacing what the name held) on the next save.
    public func setRoot<T: StoredObject>(_ name: String, to object: T) {
        setRoot(name, ids: [object.id], of: T.self)
    }

    /// Names the list `objects`, in order, as root `name` on the next save.
    public func setRoot<T: StoredObject>(_ name: String, to objects: [T]) {
        setRoot(name, ids: objects.map(\.id), of: T.self)
    }

    /// Names the objects of `type` with `ids`, in order, as root `name` on the next save.
    public func setRoot<T: StoredObject>(_ name: String, ids: [T.ID], of type: T.Type) {
        var value = T.typeName.keyBytes
        for id in ids { id.appendKey(to: &value) }
        rootChanges[name] = .some(value)
    }

    /// Removes root `name` on the next save (the objects stay).
    public func removeRoot(_ name: String) {
        rootChanges[name] = .some(nil)
    }

    /// The object named `name` (the first, for a list), or nil when the name is not set or the
    /// object is gone. Unsaved root changes of this session are seen.
    /// - Throws: ``CairnStoreError/Code/typeMismatch`` when the root holds another type.
    public func root<T: StoredObject>(_ name: String, as type: T.Type) async throws -> T? {
        guard let first = try await rootKeys(name, type).first else { return nil }
        return try await fetch(type, model: try await store.model(type), keys: [first])[0]
    }

    /// The objects of list root `name`, in order (those gone are skipped); empty when not set.
    public func rootObjects<T: StoredObject>(_ name: String, as type: T.Type) async throws -> [T] {
        let keys = try await rootKeys(name, type)
        return try await fetch(type, model: try await store.model(type), keys: keys).compactMap { $0 }
    }

    private func rootKeys<T: StoredObject>(_ name: String, _ type: T.Type) async throws -> [[UInt8]] {
        let value: [UInt8]?
        if let pending = rootChanges[name] {
            value = pending
        } else {
            value = try await store.client.columnFamily(store.metaFamily).get("root:\(name)")
        }
        guard let value else { return [] }
        guard let afterType = KeyCodec.skipElement(value, from: 0), let typeName = decodeString(Array(value[..<afterType])) else {
            throw CairnStoreError(.corruptObject, "root '\(name)' is not a root value")
        }
        guard typeName == T.typeName else {
            throw CairnStoreError(.typeMismatch, "root '\(name)' holds \(typeName), not \(T.typeName)")
        }
        var keys: [[UInt8]] = []
        var i = afterType
        while i < value.count {
            guard let next = KeyCodec.skipElement(value, from: i) else {
                throw CairnStoreError(.corruptObject, "root '\(name)' has a malformed id")
            }
            keys.append(Array(value[i..<next]))
            i = next
        }
        return keys
    }
}
