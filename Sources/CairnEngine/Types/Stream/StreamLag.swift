/// How far a consumer group has read, counted from the first entry ever added, as Redis 7.0
/// computes it (`streamEstimateDistanceFromFirstEverEntry`, `streamRangeHasTombstones`): exact
/// while nothing was deleted ahead of the group, unknown (-1) otherwise.
struct StreamLag {
    static let unknown: Int64 = -1

    let counters: StreamCounters
    let length: UInt64
    /// The first live entry's ID (0-0 when empty).
    let firstID: StreamID

    /// Whether an XDEL tombstone may lie in `start...end`.
    func hasTombstones(from start: StreamID = .zero, to end: StreamID = .max) -> Bool {
        if length == 0 || counters.maxDeletedID == .zero { return false }
        if firstID > counters.maxDeletedID { return false }
        return start <= counters.maxDeletedID && counters.maxDeletedID <= end
    }

    /// The read counter of `id`, or `unknown`.
    func entriesRead(at id: StreamID) -> Int64 {
        let added = Int64(bitPattern: counters.entriesAdded)
        if added == 0 { return 0 }
        if length == 0 && id <= counters.lastID { return added }
        if id == counters.lastID { return added }
        if id > counters.lastID { return Self.unknown }
        if counters.maxDeletedID == .zero || counters.maxDeletedID < firstID {
            if id < firstID { return added - Int64(length) }
            if id == firstID { return added - Int64(length) + 1 }
        }
        return Self.unknown
    }

    /// The group's new read counter after it was served `id`.
    func advanced(_ group: StreamGroup, to id: StreamID) -> Int64 {
        if group.entriesRead != Self.unknown && !hasTombstones(from: id) { return group.entriesRead + 1 }
        if counters.entriesAdded > 0 { return entriesRead(at: id) }
        return group.entriesRead
    }

    /// The group's lag (XINFO), nil when it cannot be known.
    func lag(of group: StreamGroup) -> Int64? {
        let added = Int64(bitPattern: counters.entriesAdded)
        if added == 0 { return 0 }
        if group.entriesRead != Self.unknown && !hasTombstones(from: group.lastID) { return added - group.entriesRead }
        let read = entriesRead(at: group.lastID)
        return read == Self.unknown ? nil : added - read
    }
}

extension Call {
    func lag(_ meta: CollectionMetadata, of key: [UInt8]) throws(CommandError) -> StreamLag {
        StreamLag(counters: meta.stream, length: meta.size, firstID: try edgeID(meta, of: key) ?? .zero)
    }
}
