/// Redis keeps a stream's entries in listpack nodes of at most `stream-node-max-entries` (100)
/// entries, and approximate trimming (`MAXLEN ~`, `MINID ~`) removes whole nodes only, so how
/// many entries it removes depends on where the nodes begin. Cairn stores one RocksDB entry per
/// stream entry, and records in each the node Redis would have put it in, so `~` trims what
/// Redis trims. Redis also closes a node at 4 KB of listpack (`stream-node-max-bytes`); Cairn
/// counts entries only, so with large entries its nodes are longer than Redis's.
enum StreamNodes {
    static let maxEntries: UInt32 = 100

    /// The node a new entry goes into, recorded in `counters`: the last one while it has room
    /// and a live entry (Redis frees a node whose entries are all deleted).
    static func place(_ counters: inout StreamCounters, streamEmpty: Bool) -> UInt64 {
        if streamEmpty || counters.lastNodeLive == 0 || counters.lastNodeEntries >= maxEntries {
            counters.lastNode += 1
            counters.lastNodeEntries = 0
            counters.lastNodeLive = 0
        }
        counters.lastNodeEntries += 1
        counters.lastNodeLive += 1
        return counters.lastNode
    }

    /// Records that a live entry of `node` was deleted.
    static func removed(_ counters: inout StreamCounters, from node: UInt64) {
        if node == counters.lastNode && counters.lastNodeLive > 0 { counters.lastNodeLive -= 1 }
    }
}
