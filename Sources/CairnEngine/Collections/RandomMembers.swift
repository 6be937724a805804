/// Random members for HRANDFIELD, SRANDMEMBER, SPOP and ZRANDMEMBER.
///
/// Members are stored in key order, not in a table of slots, so picking uniformly would mean
/// reading them all. A small collection (up to `readAllLimit` members) is read whole and
/// sampled uniformly; a larger one is probed at random points of its key space, which favours
/// members that follow a wide gap (documented in docs/commands.md).
enum RandomMembers {
    static let readAllLimit: UInt64 = 4096

    /// `count` members: distinct ones (at most the collection's size) when `distinct`, else
    /// exactly `count`, possibly repeated.
    static func pick(_ call: Call, _ meta: CollectionMetadata, of key: [UInt8], count: Int, distinct: Bool) throws(CommandError) -> [(sub: [UInt8], value: [UInt8])] {
        guard count > 0, meta.size > 0 else { return [] }
        if meta.size <= readAllLimit || (distinct && UInt64(count) >= meta.size / 2) {
            var all: [(sub: [UInt8], value: [UInt8])] = []
            try call.scanMembers(meta, of: key, .member) { sub, value in
                all.append((sub, value))
                return true
            }
            if distinct {
                all.shuffle()
                return Array(all.prefix(count))
            }
            return (0..<count).map { _ in all.randomElement()! }
        }
        var picked: [(sub: [UInt8], value: [UInt8])] = []
        var seen = Set<[UInt8]>()
        var attempts = 0
        while picked.count < count && attempts < count * 8 + 64 {
            attempts += 1
            var probe = [UInt8](repeating: 0, count: 8)
            for i in probe.indices { probe[i] = UInt8.random(in: 0...255) }
            var found: (sub: [UInt8], value: [UInt8])? = nil
            try call.scanMembers(meta, of: key, .member, from: probe) { sub, value in found = (sub, value); return false }
            if found == nil {
                try call.scanMembers(meta, of: key, .member) { sub, value in found = (sub, value); return false }
            }
            guard let found else { break }
            if distinct && !seen.insert(found.sub).inserted { continue }
            picked.append(found)
        }
        return picked
    }
}
