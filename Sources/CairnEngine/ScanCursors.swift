import Synchronization

/// Maps SCAN's numeric cursors to the key to resume after.
///
/// Keys are ordered, so a scan resumes exactly where it stopped; clients (redis-py parses the
/// cursor with `int()`) need a number, so the engine hands out numbers and remembers the key.
/// The table is shared by all connections (pooled clients continue a scan on another
/// connection) and bounded: the oldest cursors are forgotten first, and a forgotten cursor
/// gets `ERR invalid cursor`.
final class ScanCursors: Sendable {
    private struct State {
        var next: UInt64 = 1
        var keys: [UInt64: (family: String, key: [UInt8])] = [:]
        var order: [UInt64] = []
        var head = 0
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 16384) { self.capacity = capacity }

    /// Remembers where a scan stopped and returns the cursor for it.
    func save(family: String, after key: [UInt8]) -> UInt64 {
        state.withLock { s in
            let id = s.next
            s.next += 1
            s.keys[id] = (family, key)
            s.order.append(id)
            if s.order.count - s.head > capacity {
                s.keys.removeValue(forKey: s.order[s.head])
                s.head += 1
                if s.head > capacity {
                    s.order.removeFirst(s.head)
                    s.head = 0
                }
            }
            return id
        }
    }

    func resume(_ cursor: UInt64, family: String) -> [UInt8]? {
        state.withLock { s in
            guard let entry = s.keys[cursor], entry.family == family else { return nil }
            return entry.key
        }
    }

    /// Forgets every cursor (after a restore the keys they stand for may be gone).
    func clear() { state.withLock { $0 = State() } }
}
