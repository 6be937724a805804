import CairnClient
import RESP

/// One condition of a ``Query`` on a field of `T`: `\.artist == "x"`, `\.year >= 1990`.
/// The field must be covered by a declared ``Index``.
public struct Condition<T: StoredObject>: @unchecked Sendable {  // an immutable key path and bytes
    enum Kind {
        case equal([UInt8])
        case lower([UInt8], inclusive: Bool)
        case upper([UInt8], inclusive: Bool)
    }

    let keyPath: AnyKeyPath
    let kind: Kind
}

public func == <T: StoredObject, V: IndexValue>(lhs: KeyPath<T, V>, rhs: V) -> Condition<T> {
    Condition(keyPath: lhs, kind: .equal(rhs.keyBytes))
}

public func < <T: StoredObject, V: IndexValue>(lhs: KeyPath<T, V>, rhs: V) -> Condition<T> {
    Condition(keyPath: lhs, kind: .upper(rhs.keyBytes, inclusive: false))
}

public func <= <T: StoredObject, V: IndexValue>(lhs: KeyPath<T, V>, rhs: V) -> Condition<T> {
    Condition(keyPath: lhs, kind: .upper(rhs.keyBytes, inclusive: true))
}

public func > <T: StoredObject, V: IndexValue>(lhs: KeyPath<T, V>, rhs: V) -> Condition<T> {
    Condition(keyPath: lhs, kind: .lower(rhs.keyBytes, inclusive: false))
}

public func >= <T: StoredObject, V: IndexValue>(lhs: KeyPath<T, V>, rhs: V) -> Condition<T> {
    Condition(keyPath: lhs, kind: .lower(rhs.keyBytes, inclusive: true))
}

/// A query over the declared indexes of `T`: equality on some fields, at most one range,
/// an order, a limit.
///
/// ```swift
/// let songs = try await session.fetch(
///     Song.where(\.artist == "Bowie").where(\.year, in: 1970..<1980).descending().limit(10))
/// ```
///
/// The store picks the declared index whose leading fields are the equality fields (in any
/// order) followed by the range or order field; without one the query throws
/// ``CairnStoreError/Code/noIndex``. Results come in that field's order (then by the index's
/// remaining fields, then by id); with no condition and no order, all objects by id.
public struct Query<T: StoredObject>: @unchecked Sendable {  // conditions hold immutable key paths
    var conditions: [Condition<T>] = []
    var limitCount: Int?
    var isDescending = false
    var orderField: AnyKeyPath?

    /// Every object of `T`, by id.
    public init() {}

    /// Adds a condition.
    public func `where`(_ condition: Condition<T>) -> Query {
        var q = self
        q.conditions.append(condition)
        return q
    }

    /// Adds `lower <= field < upper`.
    public func `where`<V: IndexValue>(_ field: KeyPath<T, V>, in range: Range<V>) -> Query {
        self.where(field >= range.lowerBound).where(field < range.upperBound)
    }

    /// Adds `lower <= field <= upper`.
    public func `where`<V: IndexValue>(_ field: KeyPath<T, V>, in range: ClosedRange<V>) -> Query {
        self.where(field >= range.lowerBound).where(field <= range.upperBound)
    }

    /// Orders by `field` (the index's order for it; ``descending()`` reverses it).
    public func sorted<V: IndexValue>(by field: KeyPath<T, V>) -> Query {
        var q = self
        q.orderField = field
        return q
    }

    /// At most `n` results.
    public func limit(_ n: Int) -> Query {
        var q = self
        q.limitCount = max(0, n)
        return q
    }

    /// Largest first.
    public func descending() -> Query {
        var q = self
        q.isDescending = true
        return q
    }

    /// Smallest first (the default).
    public func ascending() -> Query {
        var q = self
        q.isDescending = false
        return q
    }
}

extension StoredObject {
    /// A query with one condition: `Song.where(\.artist == "x")`.
    public static func `where`(_ condition: Condition<Self>) -> Query<Self> { Query().where(condition) }

    /// A query for `field` in `range`: `Song.where(\.year, in: 1990..<2000)`.
    public static func `where`<V: IndexValue>(_ field: KeyPath<Self, V>, in range: Range<V>) -> Query<Self> {
        Query().where(field, in: range)
    }

    /// A query for `field` in `range`.
    public static func `where`<V: IndexValue>(_ field: KeyPath<Self, V>, in range: ClosedRange<V>) -> Query<Self> {
        Query().where(field, in: range)
    }

    /// Every object ordered by `field`.
    public static func sorted<V: IndexValue>(by field: KeyPath<Self, V>) -> Query<Self> { Query().sorted(by: field) }
}

/// A query resolved against the declared indexes: which family to scan, between which keys,
/// and how many elements precede the id in each key.
struct QueryPlan {
    var family: String
    var range: KeyRange?
    var idOffset: Int
    var reverse: Bool
    var limit: Int?
    /// Scanning the objects themselves (no condition): keys are ids.
    var scansObjects: Bool

    init<T: StoredObject>(_ query: Query<T>, model: Model) throws {
        reverse = query.isDescending
        limit = query.limitCount
        var equal: [AnyKeyPath: [UInt8]] = [:]
        var lower: (bytes: [UInt8], inclusive: Bool)?
        var upper: (bytes: [UInt8], inclusive: Bool)?
        var rangeField: AnyKeyPath?
        var empty = false
        for condition in query.conditions {
            switch condition.kind {
            case .equal(let bytes):
                if let existing = equal[condition.keyPath], existing != bytes { empty = true }
                equal[condition.keyPath] = bytes
                continue
            case .lower(let bytes, let inclusive):
                // Keep the tighter bound: the larger, exclusive before inclusive on a tie.
                if let l = lower, !(l.bytes.lexicographicallyPrecedes(bytes) || (l.bytes == bytes && !inclusive)) {
                } else {
                    lower = (bytes, inclusive)
                }
            case .upper(let bytes, let inclusive):
                if let u = upper, !(bytes.lexicographicallyPrecedes(u.bytes) || (u.bytes == bytes && !inclusive)) {
                } else {
                    upper = (bytes, inclusive)
                }
            }
            if let rangeField, rangeField != condition.keyPath {
                throw CairnStoreError(.noIndex, "\(model.typeName): a query may have a range on one field only")
            }
            rangeField = condition.keyPath
        }
        if let orderField = query.orderField, let rangeField, orderField != rangeField {
            throw CairnStoreError(.noIndex, "\(model.typeName): the order field must be the range field")
        }
        let next = rangeField ?? query.orderField
        if equal.isEmpty && next == nil {
            family = model.objectFamily
            range = KeyRange(low: [], high: nil)
            idOffset = 0
            scansObjects = true
            return
        }
        let candidates = model.indexes.filter { index in
            let n = equal.count
            guard index.keyPaths.count >= n + (next == nil ? 0 : 1) else { return false }
            guard Set(index.keyPaths.prefix(n)) == Set(equal.keys) else { return false }
            return next.map { index.keyPaths[n] == $0 } ?? true
        }
        guard let index = candidates.min(by: { $0.keyPaths.count < $1.keyPaths.count }) else {
            throw CairnStoreError(
                .noIndex, "\(model.typeName): no declared index starts with the equality fields followed by the range or order field")
        }
        family = model.indexFamily
        scansObjects = false
        idOffset = 1 + index.keyPaths.count
        var prefix = index.name.keyBytes
        for keyPath in index.keyPaths.prefix(equal.count) { prefix += equal[keyPath]! }
        if empty {
            range = nil
            return
        }
        let low: [UInt8] =
            switch lower {
            case nil: prefix
            case let (bytes, inclusive)?: inclusive ? prefix + bytes : KeyCodec.successor(ofPrefix: prefix + bytes)!
            }
        let high: [UInt8]? =
            switch upper {
            case nil: KeyCodec.successor(ofPrefix: prefix)
            case let (bytes, inclusive)?: inclusive ? KeyCodec.successor(ofPrefix: prefix + bytes) : prefix + bytes
            }
        if let high, !low.lexicographicallyPrecedes(high) {
            range = nil
        } else {
            range = KeyRange(low: low, high: high)
        }
    }

    /// The encoded ids of the results, in order, scanning `RANGE ... KEYSONLY` a page at a time.
    func ids(_ client: CairnClient) async throws -> [[UInt8]] {
        guard var range else { return [] }
        let family = client.columnFamily(self.family)
        var out: [[UInt8]] = []
        while true {
            let remaining = limit.map { $0 - out.count } ?? Int.max
            guard remaining > 0 else { break }
            let page = min(remaining, 5000)
            let keys = try await family.send(range.arguments(reverse: reverse, limit: page, keysOnly: true)).byteArrays()
            for key in keys {
                if scansObjects {
                    out.append(key)
                } else if let id = KeyCodec.tail(key, skipping: idOffset) {
                    out.append(id)
                }
            }
            guard keys.count == page, let last = keys.last else { break }
            if reverse { range.high = last } else { range.low = last + [0] }
        }
        return out
    }
}

extension RESPValue {
    /// An array of bulk strings as bytes.
    func byteArrays() throws -> [[UInt8]] {
        guard case .array(let items) = self else { throw CairnStoreError(.saveFailed, "expected an array, got \(self)") }
        return items.compactMap(\.bytes)
    }
}

extension StoreSession {
    /// The objects matching `query`, in its order.
    /// - Throws: ``CairnStoreError/Code/noIndex`` when no declared index answers it.
    public func fetch<T: StoredObject>(_ query: Query<T>) async throws -> [T] {
        let model = try await store.model(T.self)
        let ids = try await QueryPlan(query, model: model).ids(store.client)
        return try await fetch(T.self, model: model, keys: ids).compactMap { $0 }
    }

    /// The number of objects matching `query` (read from the index; no object is fetched).
    public func count<T: StoredObject>(_ query: Query<T>) async throws -> Int {
        let model = try await store.model(T.self)
        return try await QueryPlan(query, model: model).ids(store.client).count
    }
}
