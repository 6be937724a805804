public import Foundation

/// A value type a default can hold: `Bool`, `Int`, `Double`, `String`, `Data`. Stored as a
/// one-byte type tag and the value's text (or bytes), so a default read as another type is an
/// error, not a silent reinterpretation.
public protocol DefaultValue: Sendable {
    static var defaultTag: UInt8 { get }
    var storedDefault: [UInt8] { get }
    init?(storedDefault: [UInt8])
}

extension Bool: DefaultValue {
    public static var defaultTag: UInt8 { UInt8(ascii: "b") }
    public var storedDefault: [UInt8] { [self ? UInt8(ascii: "1") : UInt8(ascii: "0")] }
    public init?(storedDefault: [UInt8]) {
        guard storedDefault.count == 1 else { return nil }
        self = storedDefault[0] == UInt8(ascii: "1")
    }
}

extension Int: DefaultValue {
    public static var defaultTag: UInt8 { UInt8(ascii: "i") }
    public var storedDefault: [UInt8] { Array(String(self).utf8) }
    public init?(storedDefault: [UInt8]) { self.init(String(decoding: storedDefault, as: UTF8.self)) }
}

extension Double: DefaultValue {
    public static var defaultTag: UInt8 { UInt8(ascii: "d") }
    public var storedDefault: [UInt8] { Array("\(self)".utf8) }
    public init?(storedDefault: [UInt8]) { self.init(String(decoding: storedDefault, as: UTF8.self)) }
}

extension String: DefaultValue {
    public static var defaultTag: UInt8 { UInt8(ascii: "s") }
    public var storedDefault: [UInt8] { Array(utf8) }
    public init?(storedDefault: [UInt8]) { self = String(decoding: storedDefault, as: UTF8.self) }
}

extension Data: DefaultValue {
    public static var defaultTag: UInt8 { UInt8(ascii: "x") }
    public var storedDefault: [UInt8] { Array(self) }
    public init?(storedDefault: [UInt8]) { self = Data(storedDefault) }
}

/// A named, typed default with the value it has until one is saved.
///
/// ```swift
/// extension DefaultKey where Value == Double {
///     static let volume = DefaultKey("volume", default: 0.8)
/// }
/// session.set(.volume, 0.5)           // written by the next save, with the objects
/// let v = try await store.value(for: .volume)
/// ```
public struct DefaultKey<Value: DefaultValue>: Sendable {
    public let name: String
    public let defaultValue: Value

    public init(_ name: String, default defaultValue: Value) {
        self.name = name
        self.defaultValue = defaultValue
    }
}

extension StoreSession {
    /// Sets a default on the next save (in the same EXEC as the session's objects).
    public func set<Value>(_ key: DefaultKey<Value>, _ value: Value) {
        defaultChanges[key.name] = .some([Value.defaultTag] + value.storedDefault)
    }

    /// Removes a saved default on the next save: it reads as its default value again.
    public func removeValue<Value>(for key: DefaultKey<Value>) {
        defaultChanges[key.name] = .some(nil)
    }

    /// The default's value: this session's unsaved one, else the stored one, else the key's default.
    public func value<Value>(for key: DefaultKey<Value>) async throws -> Value {
        if let pending = defaultChanges[key.name] {
            return try pending.map { try CairnStore.decodeDefault($0, key) } ?? key.defaultValue
        }
        return try await store.value(for: key)
    }
}

extension CairnStore {
    /// The stored value of a default, or its default value when none is stored.
    /// - Throws: ``CairnStoreError/Code/typeMismatch`` when it was stored as another type.
    public func value<Value>(for key: DefaultKey<Value>) async throws -> Value {
        guard let stored = try await client.columnFamily(metaFamily).get("default:\(key.name)") else { return key.defaultValue }
        return try CairnStore.decodeDefault(stored, key)
    }

    static func decodeDefault<Value>(_ stored: [UInt8], _ key: DefaultKey<Value>) throws -> Value {
        guard stored.first == Value.defaultTag, let value = Value(storedDefault: Array(stored.dropFirst())) else {
            throw CairnStoreError(.typeMismatch, "default '\(key.name)' is not stored as \(Value.self)")
        }
        return value
    }
}
