import Rocks

/// One collection's members in byte order, pulled one at a time, for the set and sorted-set
/// operations that merge several side by side (SetAlgebra, SortedSetAlgebra): a RocksDB cursor
/// over its member entries, or (inside a transaction, whose staged writes lay over the stored
/// ones) the members read through the overlay. `head` is the current member and, when asked for,
/// `headValue` its value (a sorted set's score), kept in reused buffers.
final class MemberStream {
    private let cursor: Cursor?
    private let prefixLength: Int
    private let withValues: Bool
    private let staged: [(sub: [UInt8], value: [UInt8])]
    private var index = 0
    private(set) var head: [UInt8] = []
    private(set) var headValue: [UInt8] = []
    private(set) var valid = false

    init(_ call: Call, _ meta: CollectionMetadata, of key: [UInt8], values: Bool = false) throws(CommandError) {
        withValues = values
        if call.session.transaction != nil {
            var members: [(sub: [UInt8], value: [UInt8])] = []
            try call.scanMembers(meta, of: key, .member) { sub, value in
                members.append((sub, values ? value : []))
                return true
            }
            staged = members
            cursor = nil
            prefixLength = 0
            load()
            return
        }
        let prefix = meta.memberPrefix(family: call.family.name, key: key) + [MemberKeys.Tag.member.rawValue]
        var options = call.readOptions
        options.lowerBound = prefix
        options.upperBound = Call.prefixEnd(prefix)
        options.fillCache = false
        let members = call.members
        let database = call.database
        cursor = try call.engine.storage("member scan") { try database.makeCursor(in: members, options: options) }
        prefixLength = prefix.count
        staged = []
        cursor!.seek(prefix)
        load()
    }

    private func load() {
        guard let cursor else {
            valid = index < staged.count
            if valid { (head, headValue) = staged[index] }
            return
        }
        valid = cursor.isValid
        guard valid else { return }
        let skip = prefixLength
        cursor.withKey { k in
            head.removeAll(keepingCapacity: true)
            head.append(contentsOf: UnsafeRawBufferPointer(rebasing: k[skip...]))
        }
        if withValues {
            cursor.withValue { v in
                headValue.removeAll(keepingCapacity: true)
                headValue.append(contentsOf: v)
            }
        }
    }

    func advance() {
        if let cursor { cursor.next() } else { index += 1 }
        load()
    }

    /// Negative, zero or positive as this head sorts before, with or after `other`'s.
    func compareHead(to other: MemberStream) -> Int { Bytes.compare(head, other.head) }

    func withHead<R>(_ body: (UnsafeRawBufferPointer) throws(CommandError) -> R) throws(CommandError) -> R {
        var result: Result<R, CommandError>!
        head.withUnsafeBytes { h in result = Result { () throws(CommandError) -> R in try body(h) } }
        return try result.get()
    }

    /// Throws the cursor's error, if it stopped on one.
    func check(_ call: Call) throws(CommandError) {
        guard let cursor else { return }
        try call.engine.storage("member scan") { try cursor.check() }
    }

    func close() { cursor?.close() }
}
