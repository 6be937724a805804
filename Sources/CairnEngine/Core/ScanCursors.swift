import Synchronization

/// Maps SCAN's numeric cursors to the key to resume after.
///
/// Keys are ordered, so a scan resumes exactly where it stopped; clients (redis-py parses the
/// cursor with `int()`) need a number, so the engine hands out numbers and remembers the key.
/// Any connection may resume any cursor (pooled clients continue a scan on another
/// connection), but each belongs to the client that made it, for eviction: a client holds at
/// most `perClient` cursors, and a new one beyond that forgets that client's oldest; when the
/// table holds `capacity` cursors, the oldest cursor of the client holding the most goes. So a
/// client scanning in a loop evicts its own cursors, never a client holding fewer. A forgotten
/// cursor gets `ERR invalid cursor`.
final class ScanCursors: Sendable {
    private struct Entry {
        var family: String
        var key: [UInt8]
    }

    private struct State {
        var next: UInt64 = 1
        var entries: [UInt64: Entry] = [:]
        /// Each client's cursors, oldest first.
        var byOwner: [Int64: [UInt64]] = [:]

        mutating func evictOldest(of owner: Int64) {
            guard var ids = byOwner[owner], !ids.isEmpty else { return }
            entries.removeValue(forKey: ids.removeFirst())
            byOwner[owner] = ids.isEmpty ? nil : ids
        }
    }

    private let state = Mutex(State())
    /// Cursors remembered server-wide.
    let capacity: Int
    /// Cursors one client may hold.
    let perClient: Int

    init(capacity: Int = 16384, perClient: Int = 1024) {
        self.capacity = capacity
        self.perClient = min(perClient, capacity)
    }

    /// Remembers where a scan of client `owner` stopped and returns the cursor for it.
    func save(family: String, after key: [UInt8], owner: Int64) -> UInt64 {
        state.withLock { s in
            if s.byOwner[owner, default: []].count >= perClient {
                s.evictOldest(of: owner)
            }
            if s.entries.count >= capacity, let biggest = s.byOwner.max(by: { $0.value.count < $1.value.count })?.key {
                s.evictOldest(of: biggest)
            }
            let id = s.next
            s.next += 1
            s.entries[id] = Entry(family: family, key: key)
            s.byOwner[owner, default: []].append(id)
            return id
        }
    }

    func resume(_ cursor: UInt64, family: String) -> [UInt8]? {
        state.withLock { s in
            guard let entry = s.entries[cursor], entry.family == family else { return nil }
            return entry.key
        }
    }

    /// Forgets every cursor (after a restore the keys they stand for may be gone).
    func clear() {
        state.withLock { s in
            s.entries = [:]
            s.byOwner = [:]
        }
    }
}
