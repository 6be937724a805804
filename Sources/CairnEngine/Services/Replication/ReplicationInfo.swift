/// INFO's `replication` section and the sync counters of `stats`, with Redis's field names
/// (Sentinel and redis-py read them). Offsets are sequence numbers (Replication.swift).
extension Replication {
    func statsLines() -> [(String, String)] {
        let s = state.withLock { $0 }
        return [("sync_full", String(s.syncFull)), ("sync_partial_ok", String(s.syncPartialOK)), ("sync_partial_err", String(s.syncPartialErr))]
    }

    func infoLines(_ engine: Engine) -> [(String, String)] {
        let s = state.withLock { $0 }
        let config = engine.configuration
        let offset = String(engine.database.latestSequenceNumber)
        let now = Clock.milliseconds()
        var lines: [(String, String)] = []
        switch s.role {
        case .primary:
            lines.append(("role", "master"))
        case .replica(let host, let port):
            lines += [
                ("role", "slave"),
                ("master_host", host),
                ("master_port", String(port)),
                ("master_link_status", s.linkUp ? "up" : "down"),
                ("master_last_io_seconds_ago", s.linkUp ? String((now - s.lastIO) / 1000) : "-1"),
                ("master_sync_in_progress", s.syncInProgress ? "1" : "0"),
                ("slave_read_repl_offset", offset),
                ("slave_repl_offset", offset),
            ]
            if s.syncInProgress {
                lines += [("master_sync_total_bytes", "-1"), ("master_sync_read_bytes", String(s.syncBytesReceived))]
            }
            if !s.linkUp {
                lines.append(("master_link_down_since_seconds", s.linkDownSince == 0 ? "-1" : String((now - s.linkDownSince) / 1000)))
            }
            if !s.lastSyncFailure.isEmpty { lines.append(("master_last_sync_error", s.lastSyncFailure)) }
            lines += [
                ("slave_priority", String(config.replicaPriority)),
                ("slave_read_only", config.replicaReadOnly ? "1" : "0"),
                ("replica_announced", "1"),
            ]
        }
        let replicas = s.replicas.values.sorted { $0.clientID < $1.clientID }
        lines.append(("connected_slaves", String(replicas.count)))
        for (i, r) in replicas.enumerated() {
            let lag = r.lastAck == 0 ? -1 : (now - r.lastAck) / 1000
            lines.append(("slave\(i)", "ip=\(r.address),port=\(r.listeningPort),state=\(r.state),offset=\(r.acked),lag=\(lag)"))
        }
        lines += [
            ("master_failover_state", s.failoverState),
            ("master_replid", s.id),
            ("master_replid2", s.secondID),
            ("master_repl_offset", offset),
            ("second_repl_offset", s.secondID == Replication.noID ? "-1" : String(s.secondOffset + 1)),
            ("repl_backlog_active", "1"),
            ("repl_backlog_size", String(config.replBacklogSize)),
            ("repl_backlog_ttl", String(config.replBacklogTTL)),
        ]
        return lines
    }
}
