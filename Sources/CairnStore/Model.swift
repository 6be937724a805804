import Foundation

/// Everything the store needs to know about one ``StoredObject`` type, with the generic parts
/// closed over so sessions can handle objects of many types together (cascades, nullify).
///
/// `@unchecked Sendable`: built once per type and never mutated; it holds names, metatypes and
/// closures over immutable key paths.
final class Model: @unchecked Sendable {
    let typeName: String
    let schemaVersion: Int
    let objectFamily: String
    let indexFamily: String
    let textFamily: String
    let isClass: Bool
    let indexes: [(name: String, keyPaths: [AnyKeyPath])]
    let hasTextFields: Bool
    let relationships: [(name: String, rule: DeleteRule, targetType: any StoredObject.Type)]

    let encodeBody: (any StoredObject) throws -> [UInt8]
    let decodeBody: (_ version: Int, _ bytes: ArraySlice<UInt8>) throws -> any StoredObject
    let idKey: (any StoredObject) -> [UInt8]
    let indexKeys: (any StoredObject) -> Set<[UInt8]>
    let terms: (any StoredObject) -> Set<String>
    /// Per relationship (in declaration order), the encoded ids the object points at.
    let targetKeys: (any StoredObject) -> [[[UInt8]]]
    /// The object with every pointer of relationship `index` to encoded id `key` removed.
    let removeTarget: (any StoredObject, _ index: Int, _ key: [UInt8]) -> any StoredObject

    init<T: StoredObject>(_ type: T.Type, namespace: String) {
        // The header keeps the version in two bytes.
        precondition((0...0xFFFF).contains(T.schemaVersion), "\(T.self).schemaVersion must be within 0...65535")
        typeName = T.typeName
        schemaVersion = T.schemaVersion
        objectFamily = "\(namespace).obj.\(T.typeName)"
        indexFamily = "\(namespace).idx.\(T.typeName)"
        textFamily = "\(namespace).text.\(T.typeName)"
        isClass = T.self is AnyClass
        let indexes = T.indexes
        let textFields = T.textFields
        let relationships = T.relationships
        self.indexes = indexes.map { ($0.name, $0.keyPaths) }
        hasTextFields = !textFields.isEmpty
        self.relationships = relationships.map { ($0.name, $0.deleteRule, $0.targetType) }

        encodeBody = { object in
            do {
                return try MessagePackEncoder().encode(object as! T)
            } catch {
                throw CairnStoreError(.corruptObject, "\(T.typeName) does not encode: \(error)")
            }
        }
        decodeBody = { version, bytes in try Model.decode(T.self, version: version, bytes) }
        idKey = { ($0 as! T).id.keyBytes }
        indexKeys = { object in Set(indexes.map { $0.entryKey(object as! T) }) }
        terms = { object in
            var terms = Set<String>()
            for field in textFields {
                if let text = field.text(object as! T) { terms.formUnion(Tokenizer.tokens(text)) }
            }
            return terms
        }
        targetKeys = { object in relationships.map { $0.targetKeys(object as! T) } }
        removeTarget = { object, index, key in
            var owner = object as! T
            relationships[index].remove(&owner, key)
            return owner
        }
    }

    /// Decodes a body of `T` written with schema `version`, migrating it when that is not the current one.
    static func decode<T: StoredObject>(_ type: T.Type, version: Int, _ bytes: ArraySlice<UInt8>) throws -> T {
        guard version == T.schemaVersion else { return try T.migrate(from: StoredBody(schemaVersion: version, bytes: Array(bytes))) }
        do {
            return try MessagePackDecoder().decode(T.self, from: bytes)
        } catch {
            throw CairnStoreError(.corruptObject, "\(T.typeName) body does not decode: \(error)")
        }
    }

    /// The reverse-index key saying that the object `ownerKey` of this type points, through
    /// relationship `relationship`, at `targetKey` of `targetType`. Targets come first so one
    /// range finds every owner of a target.
    func referenceKey(targetType: String, targetKey: [UInt8], relationship: Int, ownerKey: [UInt8]) -> [UInt8] {
        var key = targetType.keyBytes
        key += targetKey
        typeName.appendKey(to: &key)
        relationship.appendKey(to: &key)
        key += ownerKey
        return key
    }

    /// Every reverse-index key of `object` (encoded id `ownerKey`).
    func referenceKeys(of object: any StoredObject, ownerKey: [UInt8]) -> Set<[UInt8]> {
        var keys = Set<[UInt8]>()
        for (index, targets) in targetKeys(object).enumerated() {
            let targetType = relationships[index].targetType.typeName
            for target in targets {
                keys.insert(referenceKey(targetType: targetType, targetKey: target, relationship: index, ownerKey: ownerKey))
            }
        }
        return keys
    }

    /// The full-text keys of `object`: each term, then the object's id.
    func textKeys(of object: any StoredObject, id: [UInt8]) -> Set<[UInt8]> {
        guard hasTextFields else { return [] }
        return Set(terms(object).map { $0.keyBytes + id })
    }
}

/// A parsed reverse-index key: which owner points at a target.
struct ReferenceEntry: Hashable {
    var ownerType: String
    var relationship: Int
    var ownerKey: [UInt8]

    /// Parses a key made by ``Model/referenceKey(targetType:targetKey:relationship:ownerKey:)``.
    init?(_ key: [UInt8]) {
        // target type, target id, owner type, relationship, owner id
        guard let afterTarget = KeyCodec.skipElement(key, from: 0).flatMap({ KeyCodec.skipElement(key, from: $0) }),
            let afterOwnerType = KeyCodec.skipElement(key, from: afterTarget),
            let afterRelationship = KeyCodec.skipElement(key, from: afterOwnerType),
            afterRelationship < key.count,
            let typeName = decodeString(Array(key[afterTarget..<afterOwnerType])),
            key[afterOwnerType] == KeyTag.int
        else { return nil }
        let n = BigEndian.read(UInt64.self, key[(afterOwnerType + 1)..<afterRelationship])
        ownerType = typeName
        relationship = Int(Int64(bitPattern: n ^ (1 << 63)))
        ownerKey = Array(key[afterRelationship...])
    }
}

/// Decodes a string element (tag, escaped UTF-8, terminator).
func decodeString(_ element: [UInt8]) -> String? {
    guard element.first == KeyTag.string, element.last == 0 else { return nil }
    var bytes: [UInt8] = []
    var i = 1
    while i < element.count - 1 {
        bytes.append(element[i])
        i += element[i] == 0 ? 2 : 1
    }
    return String(decoding: bytes, as: UTF8.self)
}
