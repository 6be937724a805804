/// A stream's consumer groups, stored under the stream's version beside its entries, so
/// deleting the stream drops them with it:
///
/// ```
/// .group     sub-key: group name                        value: last delivered ID (16),
///                                                              entries read (8, -1: unknown)
/// .pending   sub-key: group length (4), group, entry ID  value: delivery time (8),
///                                                              delivery count (8), consumer
/// .consumer  sub-key: group length (4), group, consumer  value: seen time (8)
/// ```
/// A group's pending entries list is one ordered range; a consumer's is that range filtered
/// by owner (Redis keeps a second index per consumer; XPENDING with a consumer and
/// XREADGROUP's history read cost the group's list here).
struct StreamGroup {
    var name: [UInt8]
    var lastID: StreamID
    /// Redis's `entries_read`: -1 when it cannot be known.
    var entriesRead: Int64

    var value: [UInt8] {
        var out = lastID.bytes
        BigEndian.append(UInt64(bitPattern: entriesRead), to: &out)
        return out
    }

    init(name: [UInt8], lastID: StreamID, entriesRead: Int64) {
        self.name = name
        self.lastID = lastID
        self.entriesRead = entriesRead
    }

    init(name: [UInt8], value: [UInt8]) {
        self.name = name
        lastID = StreamID(bytes: value[0..<16])
        entriesRead = Int64(bitPattern: BigEndian.read(UInt64.self, value[16...]))
    }

    /// The sub-key prefix of this group's pending entries and consumers.
    static func scope(_ group: [UInt8]) -> [UInt8] {
        BigEndian.bytes(UInt32(truncatingIfNeeded: group.count)) + group
    }
}

/// One entry of a group's pending entries list.
struct PendingEntry {
    var id: StreamID
    var deliveryTime: Int64
    var deliveryCount: UInt64
    var consumer: [UInt8]

    var value: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + consumer.count)
        BigEndian.append(UInt64(bitPattern: deliveryTime), to: &out)
        BigEndian.append(deliveryCount, to: &out)
        return out + consumer
    }

    init(id: StreamID, deliveryTime: Int64, deliveryCount: UInt64, consumer: [UInt8]) {
        self.id = id
        self.deliveryTime = deliveryTime
        self.deliveryCount = deliveryCount
        self.consumer = consumer
    }

    init(id: StreamID, value: [UInt8]) {
        self.id = id
        deliveryTime = Int64(bitPattern: BigEndian.read(UInt64.self, value[0...]))
        deliveryCount = BigEndian.read(UInt64.self, value[8...])
        consumer = Array(value[16...])
    }
}

/// Group, pending-entry and consumer records of the stream a `CollectionChange` stages.
extension Call {
    func group(_ change: CollectionChange, _ name: [UInt8]) throws(CommandError) -> StreamGroup? {
        try member(change, .group, name).map { StreamGroup(name: name, value: $0) }
    }

    func group(_ meta: CollectionMetadata, of key: [UInt8], _ name: [UInt8]) throws(CommandError) -> StreamGroup? {
        try member(meta, of: key, .group, name).map { StreamGroup(name: name, value: $0) }
    }

    func groups(_ meta: CollectionMetadata, of key: [UInt8]) throws(CommandError) -> [StreamGroup] {
        var out: [StreamGroup] = []
        try scanMembers(meta, of: key, .group) { sub, value in
            out.append(StreamGroup(name: sub, value: value))
            return true
        }
        return out
    }

    /// The group's pending entries with IDs in `from...to`, in ID order, while `body` returns true.
    func scanPending(_ meta: CollectionMetadata, of key: [UInt8], group: [UInt8], from: StreamID = .zero, to: StreamID = .max,
                     _ body: (PendingEntry) throws(CommandError) -> Bool) throws(CommandError) {
        guard from <= to else { return }
        let scope = StreamGroup.scope(group)
        try scanMembers(meta, of: key, .pending, from: scope + from.bytes, to: to.next.map { scope + $0.bytes } ?? Call.prefixEnd(scope)) {
            sub, value throws(CommandError) -> Bool in
            try body(PendingEntry(id: StreamID(bytes: sub[scope.count...]), value: value))
        }
    }

    func pending(_ change: CollectionChange, group: [UInt8], _ id: StreamID) throws(CommandError) -> PendingEntry? {
        try member(change, .pending, StreamGroup.scope(group) + id.bytes).map { PendingEntry(id: id, value: $0) }
    }

    /// The group's consumers in name order, with their seen times.
    func consumers(_ meta: CollectionMetadata, of key: [UInt8], group: [UInt8]) throws(CommandError) -> [(name: [UInt8], seen: Int64)] {
        let scope = StreamGroup.scope(group)
        var out: [(name: [UInt8], seen: Int64)] = []
        try scanMembers(meta, of: key, .consumer, from: scope, to: Call.prefixEnd(scope)) { sub, value in
            out.append((Array(sub[scope.count...]), Int64(bitPattern: BigEndian.read(UInt64.self, value))))
            return true
        }
        return out
    }

    func consumerExists(_ change: CollectionChange, group: [UInt8], _ name: [UInt8]) throws(CommandError) -> Bool {
        try member(change, .consumer, StreamGroup.scope(group) + name) != nil
    }
}

extension CollectionChange {
    mutating func putGroup(_ g: StreamGroup) {
        put(.group, g.name, g.value)
    }

    mutating func putPending(group: [UInt8], _ p: PendingEntry) {
        put(.pending, StreamGroup.scope(group) + p.id.bytes, p.value)
    }

    mutating func deletePending(group: [UInt8], _ id: StreamID) {
        delete(.pending, StreamGroup.scope(group) + id.bytes)
    }

    /// Records `consumer` as seen at `time` (creating it).
    mutating func putConsumer(group: [UInt8], _ consumer: [UInt8], seen time: Int64) {
        put(.consumer, StreamGroup.scope(group) + consumer, BigEndian.bytes(UInt64(bitPattern: time)))
    }

    mutating func deleteConsumer(group: [UInt8], _ consumer: [UInt8]) {
        delete(.consumer, StreamGroup.scope(group) + consumer)
    }
}
