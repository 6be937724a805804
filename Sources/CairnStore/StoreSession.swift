import CairnClient
import Foundation

/// A unit of work over a ``CairnStore``: reads objects (one instance per stored object for
/// class types), collects inserts, updates and deletes, root and default changes, and
/// commits them all with ``save()`` in one MULTI/EXEC.
///
/// ```swift
/// let session = store.session()
/// var playlist = try await session.fetch(Playlist.self, id: "p1")!
/// let song = Song(id: "s9", title: "Ashes to Ashes", artist: "Bowie", year: 1980)
/// playlist.songs.append(song)
/// session.insert(song)
/// session.update(playlist)
/// session.set(.lastOpened, Date().timeIntervalSince1970)
/// try await session.save()
/// ```
///
/// A session is not `Sendable`: use it from one task. Class instances read through it are
/// tracked, so changing one and calling ``save()`` writes it without an explicit ``update(_:)``.
public final class StoreSession {
    /// The store this session reads and writes.
    public let store: CairnStore

    /// A stored object's identity: type name and encoded id. The hash is computed once: a save
    /// looks the same keys up in several tables.
    struct ObjectKey: Hashable {
        let type: String
        let key: [UInt8]
        private let hash: Int

        init(type: String, key: [UInt8]) {
            self.type = type
            self.key = key
            var hasher = Hasher()
            hasher.combine(type)
            hasher.combine(key)
            hash = hasher.finalize()
        }

        static func == (a: ObjectKey, b: ObjectKey) -> Bool { a.hash == b.hash && a.key == b.key && a.type == b.type }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    /// What the session has seen of a stored object.
    struct Seen {
        /// The revision read, or nil when the object was read as missing.
        var revision: UInt64?
        /// The encoding read (class types only, for finding changed instances on save).
        var encoded: [UInt8]?
        /// The one instance of a class type.
        var instance: AnyObject?
    }

    enum ChangeKind {
        /// Must not exist yet.
        case insert
        /// Must still be at the revision this session read (when it read it).
        case update
        case delete
    }

    struct Change {
        var type: any StoredObject.Type
        var kind: ChangeKind
        /// The object to write (nil for a delete).
        var object: (any StoredObject)?
    }

    var seen: [ObjectKey: Seen] = [:]
    var changes: [ObjectKey: Change] = [:]
    var changeOrder: [ObjectKey] = []
    /// Named roots to write (nil value: remove) in the next save.
    var rootChanges: [String: [UInt8]?] = [:]
    /// Defaults to write (nil value: remove) in the next save.
    var defaultChanges: [String: [UInt8]?] = [:]

    init(store: CairnStore) {
        self.store = store
    }

    /// True when ``save()`` has something to write besides changed class instances.
    public var hasChanges: Bool { !changes.isEmpty || !rootChanges.isEmpty || !defaultChanges.isEmpty }

    // MARK: Changes

    /// Inserts a new object on the next save.
    /// - Note: ``save()`` throws ``CairnStoreError/Code/conflict`` if an object with this id
    ///   exists by then.
    public func insert<T: StoredObject>(_ object: T) {
        record(ObjectKey(type: T.typeName, key: object.id.keyBytes), Change(type: T.self, kind: .insert, object: object))
        track(object)
    }

    /// Writes `object` on the next save, creating it if it does not exist. When this session read
    /// the object, the save checks that nobody changed it since (a conflict otherwise).
    public func update<T: StoredObject>(_ object: T) {
        let key = ObjectKey(type: T.typeName, key: object.id.keyBytes)
        let kind: ChangeKind = changes[key]?.kind == .insert ? .insert : .update
        record(key, Change(type: T.self, kind: kind, object: object))
        track(object)
    }

    /// Deletes `object` on the next save, with its index and text entries; its relationships'
    /// delete rules run (cascade), and references to it in other objects are removed.
    public func delete<T: StoredObject>(_ object: T) {
        delete(T.self, id: object.id)
    }

    /// Deletes the object of `type` with `id` on the next save (nothing if it does not exist).
    public func delete<T: StoredObject>(_ type: T.Type, id: T.ID) {
        record(ObjectKey(type: T.typeName, key: id.keyBytes), Change(type: T.self, kind: .delete, object: nil))
    }

    private func record(_ key: ObjectKey, _ change: Change) {
        if changes.updateValue(change, forKey: key) == nil { changeOrder.append(key) }
    }

    /// Puts a class instance inserted or updated through the session into the identity map.
    private func track<T: StoredObject>(_ object: T) {
        guard T.self is AnyClass else { return }
        let key = ObjectKey(type: T.typeName, key: object.id.keyBytes)
        seen[key, default: Seen()].instance = object as AnyObject
    }

    /// Forgets every unsaved change (class instances keep their in-memory state).
    public func discardChanges() {
        changes = [:]
        changeOrder = []
        rootChanges = [:]
        defaultChanges = [:]
    }

    // MARK: Reading

    /// The object of `type` with `id`, or nil. For class types, the same instance every time
    /// within this session.
    public func fetch<T: StoredObject>(_ type: T.Type, id: T.ID) async throws -> T? {
        try await fetch(type, ids: [id])[0]
    }

    /// The objects with `ids`, in order, nil where none exists. Read with MGET, 1,000 at a time.
    public func fetch<T: StoredObject>(_ type: T.Type, ids: [T.ID]) async throws -> [T?] {
        let model = try await store.model(type)
        return try await fetch(type, model: model, keys: ids.map(\.keyBytes))
    }

    func fetch<T: StoredObject>(_ type: T.Type, model: Model, keys: [[UInt8]]) async throws -> [T?] {
        var result = [T?](repeating: nil, count: keys.count)
        var missing: [Int] = []
        for (i, key) in keys.enumerated() {
            if let instance = seen[ObjectKey(type: model.typeName, key: key)]?.instance {
                result[i] = (instance as! T)
            } else {
                missing.append(i)
            }
        }
        let family = store.client.columnFamily(model.objectFamily)
        for chunk in missing.chunked(1000) {
            let bodies = try await family.mget(chunk.map { keys[$0] as any RESPArgument })
            for (i, body) in zip(chunk, bodies) {
                if let body {
                    result[i] = try materialize(T.self, model: model, key: keys[i], body: body)
                } else {
                    seen[ObjectKey(type: model.typeName, key: keys[i]), default: Seen()].revision = nil
                }
            }
        }
        return result
    }

    /// Decodes a stored body into an object, through the identity map for classes.
    func materialize<T: StoredObject>(_ type: T.Type, model: Model, key: [UInt8], body: [UInt8]) throws -> T {
        let objectKey = ObjectKey(type: model.typeName, key: key)
        if let instance = seen[objectKey]?.instance { return instance as! T }
        let (typed, header, encoded) = try store.codec.decode(T.self, body, model: model, objectKey: key)
        if seen[objectKey] == nil {
            seen[objectKey] = Seen(revision: header.revision, encoded: model.isClass ? Array(encoded) : nil, instance: nil)
        }
        if model.isClass { seen[objectKey]!.instance = typed as AnyObject }
        return typed
    }

    /// Every object of `type` in id order, read `batchSize` at a time with `RANGE` as the loop
    /// asks for them.
    public func all<T: StoredObject>(_ type: T.Type, batchSize: Int = 1000) -> ObjectSequence<T> {
        ObjectSequence(store: store, session: self, batchSize: batchSize)
    }

    /// The number of stored objects of `type`.
    public func count<T: StoredObject>(_ type: T.Type) async throws -> Int {
        try await store.count(type)
    }

    /// The object a reference points at, or nil (no reference, or the object is gone).
    public func object<T: StoredObject>(_ reference: Reference<T>) async throws -> T? {
        guard let id = reference.id else { return nil }
        return try await fetch(T.self, id: id)
    }

    /// The objects of a to-many relationship, in its order, read in batches with MGET. Ids
    /// whose object no longer exists are skipped.
    public func objects<T: StoredObject>(_ relationship: ToMany<T>) async throws -> [T] {
        try await fetch(T.self, ids: relationship.ids).compactMap { $0 }
    }

    /// The objects at positions `range` of a to-many relationship (lazy paging through a long list).
    public func objects<T: StoredObject>(_ relationship: ToMany<T>, in range: Range<Int>) async throws -> [T] {
        let clamped = range.clamped(to: 0..<relationship.ids.count)
        return try await fetch(T.self, ids: Array(relationship.ids[clamped])).compactMap { $0 }
    }
}

/// The objects of one type in id order, fetched a batch at a time with `RANGE`; the next batch
/// is requested while the current one is decoded. See ``StoreSession/all(_:batchSize:)`` and
/// ``CairnStore/all(_:batchSize:)``.
public struct ObjectSequence<T: StoredObject>: AsyncSequence {
    public typealias Element = T
    let store: CairnStore
    /// Objects go through this session's identity map when there is one.
    let session: StoreSession?
    let batchSize: Int

    init(store: CairnStore, session: StoreSession?, batchSize: Int) {
        precondition(batchSize > 0, "batchSize must be at least 1")
        self.store = store
        self.session = session
        self.batchSize = batchSize
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(store: store, session: session, batchSize: batchSize)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let store: CairnStore
        let session: StoreSession?
        let batchSize: Int
        var low: RangeBound = .unbounded
        var page = Page(entries: [], objects: [])
        var index = 0
        var exhausted = false
        var model: Model?
        var prefetch: Task<Page, any Error>?

        init(store: CairnStore, session: StoreSession?, batchSize: Int) {
            self.store = store
            self.session = session
            self.batchSize = batchSize
        }

        /// One page: the raw entries, and (outside a session) the objects decoded from them.
        /// `@unchecked Sendable`: the objects are made by the task that loads the page and handed
        /// over once, to the iterator.
        struct Page: @unchecked Sendable {
            var entries: [KeyValue]
            var objects: [T]
        }

        public mutating func next() async throws -> T? {
            if index == page.entries.count {
                guard !exhausted else { return nil }
                if model == nil { model = try await store.model(T.self) }
                let family = store.client.columnFamily(model!.objectFamily)
                let size = batchSize
                let decoding: (Model, BodyCodec)? = session == nil ? (model!, store.codec) : nil
                if let prefetch {
                    page = try await prefetch.value
                    self.prefetch = nil
                } else {
                    page = try await Iterator.load(family, from: low, size, decoding: decoding)
                }
                index = 0
                if page.entries.count == size, let last = page.entries.last {
                    // Fetch (and decode) the next page while this one is consumed.
                    let next = RangeBound.exclusive(last.key)
                    low = next
                    prefetch = Task { try await Iterator.load(family, from: next, size, decoding: decoding) }
                } else {
                    exhausted = true
                    if page.entries.isEmpty { return nil }
                }
            }
            defer { index += 1 }
            if let session {
                let entry = page.entries[index]
                return try session.materialize(T.self, model: model!, key: entry.key, body: entry.value)
            }
            return page.objects[index]
        }

        /// Reads a page; with `decoding`, decodes it too, split over the machine's cores.
        @concurrent
        static func load(_ family: ColumnFamily, from low: RangeBound, _ size: Int, decoding: (Model, BodyCodec)?) async throws -> Page {
            let entries = try await family.range(low, .unbounded, limit: size)
            guard let (model, codec) = decoding, !entries.isEmpty else { return Page(entries: entries, objects: []) }
            let parts = Swift.max(1, Swift.min(ProcessInfo.processInfo.activeProcessorCount, entries.count / 64))
            let chunks = entries.chunked((entries.count + parts - 1) / parts)
            let decoded = try await withThrowingTaskGroup(of: (Int, Page).self) { group in
                for (i, chunk) in chunks.enumerated() {
                    group.addTask {
                        (i, Page(entries: [], objects: try chunk.map { try codec.decode(T.self, $0.value, model: model, objectKey: $0.key).0 }))
                    }
                }
                var parts = [[T]](repeating: [], count: chunks.count)
                for try await (i, part) in group { parts[i] = part.objects }
                return parts
            }
            return Page(entries: entries, objects: decoded.flatMap { $0 })
        }
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
