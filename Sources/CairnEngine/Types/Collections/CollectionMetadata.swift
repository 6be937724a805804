import Synchronization

/// The value stored under a hash, set, sorted set, list or stream key, after the value header
/// (whose type nibble says which): the collection's version and size, for a list the positions
/// of its first element and one past its last, for a stream its ID counters.
///
/// ```
/// version  8 bytes big-endian   (members are keyed under it: see MemberKeys)
/// size     8 bytes big-endian   (members, fields or elements)
/// head     8 bytes big-endian   (lists only: the position of the first element)
/// tail     8 bytes big-endian   (lists only: one past the last)
/// stream   40 bytes             (streams only: StreamCounters)
/// home     optional: 0x01, then the key the members are stored under, when RENAME moved the
///          collection away from it (see `home`)
/// ```
/// A new collection gets a new version, so a deleted, expired or overwritten one's members
/// are unreachable at once, however many there are; the members family's compaction filter
/// (`MembersCompactionFilter`) drops them later.
struct CollectionMetadata: Equatable {
    var type: KeyType
    var version: UInt64
    var size: UInt64
    var head: UInt64 = 0
    var tail: UInt64 = 0
    var expiresAt: Int64? = nil
    /// The key whose name the members are stored under (`MemberKeys`), when it is not this
    /// one: RENAME moves only the metadata, so it is O(1) as in Redis, and the members stay
    /// where they are (a `moved` record in `cairn.meta` tells the compaction filter where the
    /// collection went: `CollectionMoves`). Nil: under this key.
    var home: [UInt8]? = nil
    /// A stream's last ID, highest deleted ID and count of entries ever added.
    var stream = StreamCounters()

    /// Set to delete the key with this change (`removeKey`).
    private var removed = false

    /// Whether the key holds nothing any more: a collection emptied of its members is deleted,
    /// as in Redis, except a stream, which lives on empty until it is deleted (`removeKey`).
    var isGone: Bool { removed || size == 0 && type != .stream }

    /// Makes committing this metadata delete the key, whatever its type.
    mutating func removeKey() {
        size = 0
        removed = true
    }

    /// The prefix of every member entry of this collection, stored at `key` in `family`.
    func memberPrefix(family: String, key: [UInt8]) -> [UInt8] {
        MemberKeys.prefix(family: family, key: home ?? key, version: version)
    }

    /// Where a new list's first element goes: the middle of the position space, so pushes at
    /// either end have room.
    static let listStart: UInt64 = 1 << 63

    init(type: KeyType, version: UInt64, size: UInt64 = 0, expiresAt: Int64? = nil) {
        self.type = type
        self.version = version
        self.size = size
        self.expiresAt = expiresAt
        if type == .list {
            head = Self.listStart
            tail = Self.listStart
        }
    }

    /// Decodes a stored value's payload; nil when it is not a collection's metadata.
    init?(type: KeyType, payload: some Collection<UInt8>, expiresAt: Int64?) {
        guard type != .string else { return nil }
        let bytes = Array(payload)
        let needed = type == .list ? 32 : type == .stream ? 16 + StreamCounters.encodedSize : 16
        guard bytes.count >= needed else { return nil }
        self.type = type
        self.version = BigEndian.read(UInt64.self, bytes[0...])
        self.size = BigEndian.read(UInt64.self, bytes[8...])
        if type == .list {
            head = BigEndian.read(UInt64.self, bytes[16...])
            tail = BigEndian.read(UInt64.self, bytes[24...])
        }
        if type == .stream { stream = StreamCounters(bytes[16...]) }
        if bytes.count > needed && bytes[needed] == Self.homeMarker { home = Array(bytes[(needed + 1)...]) }
        self.expiresAt = expiresAt
    }

    static let homeMarker: UInt8 = 1

    /// The payload part (after the value header).
    var payload: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        BigEndian.append(version, to: &out)
        BigEndian.append(size, to: &out)
        if type == .list {
            BigEndian.append(head, to: &out)
            BigEndian.append(tail, to: &out)
        }
        if type == .stream { stream.append(to: &out) }
        if let home {
            out.append(Self.homeMarker)
            out += home
        }
        return out
    }

    /// The whole stored value: header and payload.
    var stored: [UInt8] {
        var out: [UInt8] = []
        ValueFormat.appendHeader(to: &out, type: type.rawValue, expiresAt: expiresAt)
        out += payload
        return out
    }
}

/// Hands out collection versions: increasing within a run, and above every earlier run's as
/// long as the clock does not go back (they start from the time in microseconds), so a
/// collection created again under a deleted one's key never sees the old members.
final class VersionClock: Sendable {
    private let last = Atomic<UInt64>(0)

    func next() -> UInt64 {
        let now = UInt64(max(0, Clock.microseconds()))
        var current = last.load(ordering: .relaxed)
        while true {
            let candidate = max(current + 1, now)
            let (exchanged, original) = last.compareExchange(expected: current, desired: candidate, ordering: .relaxed)
            if exchanged { return candidate }
            current = original
        }
    }
}
