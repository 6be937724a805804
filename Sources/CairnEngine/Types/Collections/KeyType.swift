/// What a key holds: the type nibble of its value header (`ValueFormat`). A string's value is
/// its bytes; a collection's value is its metadata (`CollectionMetadata`), and its members are
/// entries of the members family (`MemberKeys`).
public enum KeyType: UInt8, Sendable, CaseIterable {
    case string = 0
    case hash = 1
    case set = 2
    case zset = 3
    case list = 4
    case stream = 5

    /// The name TYPE answers and SCAN TYPE takes.
    public var name: String {
        switch self {
        case .string: "string"
        case .hash: "hash"
        case .set: "set"
        case .zset: "zset"
        case .list: "list"
        case .stream: "stream"
        }
    }

    /// The name OBJECT ENCODING answers: Redis's name for the representation closest to
    /// Cairn's (one RocksDB entry per member, in key order), whatever the size.
    public var encoding: String {
        switch self {
        case .string: "raw"
        case .hash: "hashtable"
        case .set: "hashtable"
        case .zset: "skiplist"
        case .list: "quicklist"
        case .stream: "stream"
        }
    }

    /// The type named `name` (any case), as SCAN TYPE gives it.
    init?(name: [UInt8]) {
        guard let t = KeyType.allCases.first(where: { Bytes.text(name).lowercased() == $0.name }) else { return nil }
        self = t
    }
}
