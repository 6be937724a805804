import CairnClient

extension StoreSession {
    /// The objects of `type` whose declared text fields contain every term of `text`, by id.
    ///
    /// Terms are tokenized like the indexed text (lowercased runs of letters and digits); a
    /// term ending in `*` matches every indexed term that starts with it: `"rock* love"`.
    /// Each term is one range scan of the inverted index (`NS.text.TYPE`, keys
    /// `term + id`); the id sets are intersected, then the objects fetched with MGET.
    public func search<T: StoredObject>(_ type: T.Type, _ text: String, limit: Int? = nil) async throws -> [T] {
        let model = try await store.model(type)
        var ids = try await searchKeys(model: model, text: text)
        if let limit, ids.count > limit { ids = Array(ids.prefix(limit)) }
        return try await fetch(T.self, model: model, keys: ids).compactMap { $0 }
    }

    /// The number of objects of `type` matching `text` (no object is fetched).
    public func searchCount<T: StoredObject>(_ type: T.Type, _ text: String) async throws -> Int {
        try await searchKeys(model: try await store.model(type), text: text).count
    }

    /// The encoded ids matching every term, in id order.
    func searchKeys(model: Model, text: String) async throws -> [[UInt8]] {
        let query = TextQuery(text)
        guard model.hasTextFields, !query.terms.isEmpty else { return [] }
        let family = store.client.columnFamily(model.textFamily)
        var result: Set<[UInt8]>?
        for term in query.terms {
            let prefix = term.isPrefix ? KeyCodec.stringPrefix(term.text) : term.text.keyBytes
            var range = KeyRange(prefix: prefix)
            var found = Set<[UInt8]>()
            while true {
                let page = 10_000
                let keys = try await family.send(range.arguments(limit: page, keysOnly: true)).byteArrays()
                for key in keys {
                    guard let id = KeyCodec.tail(key, skipping: 1) else { continue }
                    // Only ids already matched by earlier terms can survive the intersection.
                    if result == nil || result!.contains(id) { found.insert(id) }
                }
                guard keys.count == page, let last = keys.last else { break }
                range.low = last + [0]
            }
            result = result.map { $0.intersection(found) } ?? found
            if result!.isEmpty { return [] }
        }
        return (result ?? []).sorted { $0.lexicographicallyPrecedes($1) }
    }
}
