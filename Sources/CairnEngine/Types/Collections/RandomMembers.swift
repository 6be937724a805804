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
            guard !all.isEmpty else { return [] }
            try checkRepeated(count, sample: all, call: call)
            return (0..<count).map { _ in all.randomElement()! }
        }
        if !distinct {
            // Each probe is a seek: find a sample's size first, so a count far past what a
            // reply can hold fails before the work.
            let sample = try pick(call, meta, of: key, count: min(count, 16), distinct: true)
            try checkRepeated(count, sample: sample, call: call)
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

    /// `key [count [WITHSCORES|WITHVALUES]]` of ZRANDMEMBER and HRANDFIELD, checked in Redis's
    /// order: the count, then the words after it, then (with values) a count whose reply of
    /// pairs would overflow. nil count: none given.
    static func arguments(_ call: Call, with word: StaticString) throws(CommandError) -> (count: Int64?, withValues: Bool) {
        guard call.count >= 3 else { return (nil, false) }
        let count = try call.randomCount(2)
        guard call.count == 3 || (call.count == 4 && call[3].isKeyword(word)) else { throw .syntax }
        let withValues = call.count == 4
        if withValues && count.magnitude > UInt64(Int64.max / 2) { throw CommandError("ERR", "value is out of range") }
        return (count, withValues)
    }

    /// Refuses a negative count (members may repeat, so any count is possible) whose reply,
    /// at the sample's average size, would pass `proto-max-bulk-len`: Redis would build it,
    /// and such a count (HRANDFIELD key -4611686018427387000) took the process's whole memory.
    static func checkRepeated(_ count: Int, sample: [(sub: [UInt8], value: [UInt8])], call: Call) throws(CommandError) {
        guard !sample.isEmpty else { return }
        // Bytes per pick: the member and value with their RESP headers, and the pick itself
        // while the reply is built.
        let perPick = sample.reduce(0) { $0 + $1.sub.count + $1.value.count } / sample.count + 64
        let limit = call.engine.configuration.protoMaxBulkLen
        guard count <= limit / perPick else {
            throw CommandError(
                "ERR", "count is too large: \(count) random members would make a reply of more than proto-max-bulk-len (\(limit) bytes); ask for fewer")
        }
    }
}
