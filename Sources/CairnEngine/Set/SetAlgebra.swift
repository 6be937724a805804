/// SINTER, SUNION, SDIFF and their STORE and CARD forms, on sets read from the store. Every key
/// is checked for its type first (WRONGTYPE even when an earlier key is missing, as Redis);
/// a missing key is an empty set. Results come back in byte order.
enum SetAlgebra {
    /// The metadata of each key (nil when missing), WRONGTYPE if one holds another type.
    static func sets(_ call: Call, _ keys: [[UInt8]]) throws(CommandError) -> [CollectionMetadata?] {
        try keys.map { (k: [UInt8]) throws(CommandError) -> CollectionMetadata? in try call.collection(k, .set) }
    }

    /// The members in every set; with `limit` > 0, stops after that many (SINTERCARD).
    /// Scans the smallest set and looks its members up in the others.
    static func inter(_ call: Call, _ keys: [[UInt8]], limit: Int = 0) throws(CommandError) -> [[UInt8]] {
        let metas = try sets(call, keys)
        guard metas.allSatisfy({ $0 != nil }) else { return [] }
        let order = keys.indices.sorted { metas[$0]!.size < metas[$1]!.size }
        let smallest = order[0]
        var result: [[UInt8]] = []
        var batch: [[UInt8]] = []
        func flush() throws(CommandError) {
            var candidates = batch
            batch.removeAll(keepingCapacity: true)
            for i in order.dropFirst() where !candidates.isEmpty {
                let found = try call.members(metas[i]!, of: keys[i], .member, candidates)
                candidates = zip(candidates, found).compactMap { $1 == nil ? nil : $0 }
            }
            result += candidates
        }
        try call.scanMembers(metas[smallest]!, of: keys[smallest], .member) { (sub, _) throws(CommandError) -> Bool in
            batch.append(sub)
            if batch.count == 512 {
                try flush()
                if limit > 0 && result.count >= limit { return false }
            }
            return true
        }
        try flush()
        if limit > 0 && result.count > limit { result.removeLast(result.count - limit) }
        return result
    }

    /// The members in any of the sets.
    static func union(_ call: Call, _ keys: [[UInt8]]) throws(CommandError) -> [[UInt8]] {
        let metas = try sets(call, keys)
        var members = Set<[UInt8]>()
        for (k, meta) in zip(keys, metas) {
            guard let meta else { continue }
            try call.scanMembers(meta, of: k, .member) { sub, _ in
                members.insert(sub)
                return true
            }
        }
        return members.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The members of the first set in none of the others.
    static func diff(_ call: Call, _ keys: [[UInt8]]) throws(CommandError) -> [[UInt8]] {
        let metas = try sets(call, keys)
        guard let first = metas[0] else { return [] }
        var result: [[UInt8]] = []
        var batch: [[UInt8]] = []
        func flush() throws(CommandError) {
            var candidates = batch
            batch.removeAll(keepingCapacity: true)
            for i in keys.indices.dropFirst() where !candidates.isEmpty {
                guard let meta = metas[i] else { continue }
                let found = try call.members(meta, of: keys[i], .member, candidates)
                candidates = zip(candidates, found).compactMap { $1 == nil ? $0 : nil }
            }
            result += candidates
        }
        try call.scanMembers(first, of: keys[0], .member) { (sub, _) throws(CommandError) -> Bool in
            batch.append(sub)
            if batch.count == 512 { try flush() }
            return true
        }
        try flush()
        return result
    }
}
