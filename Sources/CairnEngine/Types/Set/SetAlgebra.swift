/// SINTER, SUNION, SDIFF and their STORE and CARD forms, on sets read from the store. Every key
/// is checked for its type first (WRONGTYPE even when an earlier key is missing, as Redis);
/// a missing key is an empty set. Results come in byte order.
///
/// A set's members are stored in byte order (`MemberKeys`), so the operations merge the sets'
/// sorted streams side by side (`MemberStream`): no hashing and no member held in memory but the
/// one under each stream's head. An intersection of a small set with big ones looks the small
/// one's members up in the others instead, in batches (one MultiGet each).
enum SetAlgebra {
    enum Operation { case inter, union, diff }

    /// The metadata of each key (nil when missing), WRONGTYPE if one holds another type.
    static func sets(_ call: Call, _ keys: [[UInt8]]) throws(CommandError) -> [CollectionMetadata?] {
        try keys.map { (k: [UInt8]) throws(CommandError) -> CollectionMetadata? in try call.collection(k, .set) }
    }

    /// Calls `body` with each member of the result, in byte order, until it returns false. The
    /// buffer is valid during the call only.
    static func visit(
        _ operation: Operation, _ call: Call, _ keys: [[UInt8]],
        _ body: (UnsafeRawBufferPointer) throws(CommandError) -> Bool
    ) throws(CommandError) {
        let metas = try sets(call, keys)
        switch operation {
        case .inter:
            guard metas.allSatisfy({ $0 != nil }) else { return }
            let order = keys.indices.sorted { metas[$0]!.size < metas[$1]!.size }
            // A few members against big sets: look them up rather than walk the big ones.
            if order.count > 1 && metas[order[0]]!.size * 32 < metas[order[1]]!.size {
                return try lookUp(call, keys, metas, order: order, body)
            }
            var streams: [MemberStream] = []
            defer { for s in streams { s.close() } }
            for i in order { streams.append(try MemberStream(call, metas[i]!, of: keys[i])) }
            try intersect(streams, body)
            for s in streams { try s.check(call) }
        case .union:
            var streams: [MemberStream] = []
            defer { for s in streams { s.close() } }
            for (key, meta) in zip(keys, metas) {
                if let meta { streams.append(try MemberStream(call, meta, of: key)) }
            }
            try merge(streams, body)
            for s in streams { try s.check(call) }
        case .diff:
            guard metas[0] != nil else { return }
            var streams: [MemberStream] = []
            defer { for s in streams { s.close() } }
            for (key, meta) in zip(keys, metas) {
                if let meta { streams.append(try MemberStream(call, meta, of: key)) }
            }
            try subtract(streams, body)
            for s in streams { try s.check(call) }
        }
    }

    /// How many members the result has, up to `limit` when it is above 0 (SINTERCARD).
    static func count(_ operation: Operation, _ call: Call, _ keys: [[UInt8]], limit: Int = 0) throws(CommandError) -> Int {
        var n = 0
        try visit(operation, call, keys) { _ in
            n += 1
            return limit == 0 || n < limit
        }
        return n
    }

    /// Each stream moves up to the greatest head; when all heads agree, that is a member.
    private static func intersect(_ s: [MemberStream], _ body: (UnsafeRawBufferPointer) throws(CommandError) -> Bool) throws(CommandError) {
        guard s.allSatisfy(\.valid) else { return }
        while true {
            var greatest = 0
            for k in s.indices.dropFirst() where s[k].compareHead(to: s[greatest]) > 0 { greatest = k }
            var agree = true
            for k in s.indices where k != greatest {
                while s[k].valid && s[k].compareHead(to: s[greatest]) < 0 { s[k].advance() }
                guard s[k].valid else { return }
                if s[k].compareHead(to: s[greatest]) != 0 { agree = false }
            }
            guard agree else { continue }
            guard try s[0].withHead(body) else { return }
            for stream in s {
                stream.advance()
                guard stream.valid else { return }
            }
        }
    }

    /// Every head once, smallest first.
    private static func merge(_ s: [MemberStream], _ body: (UnsafeRawBufferPointer) throws(CommandError) -> Bool) throws(CommandError) {
        while true {
            var least: MemberStream? = nil
            for stream in s where stream.valid {
                if least == nil || stream.compareHead(to: least!) < 0 { least = stream }
            }
            guard let least else { return }
            guard try least.withHead(body) else { return }
            for stream in s where stream !== least && stream.valid && stream.compareHead(to: least) == 0 { stream.advance() }
            least.advance()
        }
    }

    /// The first stream's members that no other stream has.
    private static func subtract(_ s: [MemberStream], _ body: (UnsafeRawBufferPointer) throws(CommandError) -> Bool) throws(CommandError) {
        let first = s[0]
        while first.valid {
            var found = false
            for other in s.dropFirst() {
                while other.valid && other.compareHead(to: first) < 0 { other.advance() }
                if other.valid && other.compareHead(to: first) == 0 { found = true }
            }
            if !found { guard try first.withHead(body) else { return } }
            first.advance()
        }
    }

    /// The smallest set's members, looked up in the others 512 at a time.
    private static func lookUp(
        _ call: Call, _ keys: [[UInt8]], _ metas: [CollectionMetadata?], order: [Int],
        _ body: (UnsafeRawBufferPointer) throws(CommandError) -> Bool
    ) throws(CommandError) {
        var batch: [[UInt8]] = []
        var goOn = true
        func flush() throws(CommandError) {
            var candidates = batch
            batch.removeAll(keepingCapacity: true)
            for i in order.dropFirst() where !candidates.isEmpty {
                let found = try call.members(metas[i]!, of: keys[i], .member, candidates)
                candidates = zip(candidates, found).compactMap { $1 == nil ? nil : $0 }
            }
            for c in candidates where goOn {
                var result: Result<Bool, CommandError> = .success(true)
                c.withUnsafeBytes { m in result = Result { () throws(CommandError) -> Bool in try body(m) } }
                goOn = try result.get()
            }
        }
        let smallest = order[0]
        try call.scanMembers(metas[smallest]!, of: keys[smallest], .member) { (sub, _) throws(CommandError) -> Bool in
            batch.append(sub)
            if batch.count == 512 { try flush() }
            return goOn
        }
        if goOn { try flush() }
    }
}
