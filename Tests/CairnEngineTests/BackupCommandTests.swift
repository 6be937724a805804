import CairnEngine
import RESP
import Testing

/// Backups and restore in-process: no server, so deferred replies run inline and the restore
/// sees only the calling session.
@Suite struct BackupCommandTests {
    @Test func restoreReplacesTheDataAndRepointsTheSession() throws {
        let h = try EngineHarness()
        #expect(h.run("CF.CREATE", "side") == .ok)
        #expect(h.run("CF.USE", "side") == .ok)
        h.run("SET", "a", "1")
        #expect(h.run("BACKUP.CREATE") == .integer(1))
        h.run("SET", "b", "2")
        let snapshot = h.run("SNAPSHOT.CREATE")
        guard case .integer(let snap) = snapshot else { Issue.record("no snapshot id"); return }
        #expect(h.run("BACKUP.RESTORE", "1") == .ok)
        // Still in "side", now the reopened family: the data is as of backup 1.
        #expect(h.run("GET", "a") == .bulk("1"))
        #expect(h.run("GET", "b") == .null)
        #expect(h.run("SNAPSHOT.USE", String(snap)) == .error("ERR snapshot \(snap) was closed by BACKUP.RESTORE (the database was replaced); open a new one"))
        #expect(h.run("SET", "c", "3") == .ok)
        #expect(h.run("CF.USE", "default") == .ok)
        #expect(h.run("DBSIZE") == .integer(0))
    }

    /// A session whose family the backup lacks is not moved to `default` behind its back: its
    /// data commands fail, saying what to do, until CF.USE.
    @Test func restoreLeavesASessionWhoseFamilyIsGoneWithoutAFamily() throws {
        let h = try EngineHarness()
        h.run("SET", "k", "v")
        #expect(h.run("BACKUP.CREATE") == .integer(1))
        #expect(h.run("CF.CREATE", "later") == .ok)
        #expect(h.run("CF.USE", "later") == .ok)
        #expect(h.run("BACKUP.RESTORE", "LATEST") == .ok)
        let refused = RESPValue.error("ERR the database or this connection's column family is closed (a restore replaced it, or the server is stopping); CF.USE picks a family")
        #expect(h.run("GET", "k") == refused)
        #expect(h.run("SET", "k", "other") == refused)
        #expect(h.run("CF.LIST") == .array([.bulk("default")]))
        #expect(h.run("CF.USE", "default") == .ok)
        #expect(h.run("GET", "k") == .bulk("v"))
    }

    @Test func errorsAreClear() throws {
        let h = try EngineHarness()
        #expect(h.run("BACKUP.RESTORE", "LATEST") == .error("ERR there are no backups to restore"))
        #expect(h.run("BACKUP.VERIFY", "7") == .error("ERR no such backup 7; BACKUP.LIST shows them"))
        #expect(h.run("BACKUP.PURGE", "-1") == .error("ERR keep must be 0 or more"))
        #expect(h.run("BGSAVE", "NOW") == .error("ERR syntax error"))
        h.run("MULTI")
        #expect(h.run("BACKUP.RESTORE", "1") == .error("ERR Command not allowed inside a transaction"))
        #expect(h.run("EXEC") == .error("EXECABORT Transaction discarded because of previous errors."))
    }
}
