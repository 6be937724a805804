import Rocks

extension Engine {
    /// Before the database is closed to be swapped (a restore, a reopen for writing), with every
    /// client paused: closes the sessions' snapshots and iterators (their next use gets a clear
    /// error), moves every key-lock version so WATCHed transactions abort, forgets SCAN cursors
    /// and the keyspace count (releasing its snapshot: the new database is counted afresh).
    func detachForSwap(_ sessions: [Session]) {
        for s in sessions { closeHandlesForRestore(s) }
        keyspaceCount.forget()
        locks.withAll {}
        scanCursors.clear()
    }

    /// Serves `opened` from now on and points each session at its family of the same name. A
    /// session whose family the new database lacks keeps its closed handle, so its commands fail
    /// until CF.USE rather than land in another family.
    func install(_ opened: (Database, [String: Family], Family), sessions: [Session]) {
        let (db, families, defaultFamily) = opened
        database = db
        walKept.store(Replication.keepsWAL(dir: configuration.dir, configuration: configuration), ordering: .relaxed)
        self.families.withLock { $0 = families }
        self.defaultFamily = defaultFamily
        for s in sessions {
            if let family = self.family(named: s.family.name) { s.family = family }
        }
        appendLengths.forgetAll()
        valueCache.removeAll()
        // A backup or checkpoint taken while a big write went in pieces holds its journal.
        finishPendingWrites()
    }

    /// Closes the database and opens it again for writing: the read-only database opened on a
    /// full disk once space has returned, or a database RocksDB stopped after a failed table
    /// file write and did not recover by itself (`why` goes to the log). True when it switched;
    /// on failure (logged) the database is opened read-only, and the caller retries later.
    ///
    /// Runs while no command runs (the server pauses every worker and the WAL queue); `sessions`
    /// are every connected client's. Their snapshots and iterators read the old database, so
    /// they are closed (their next use gets a clear error), SCAN cursors are forgotten and
    /// WATCHed transactions abort, as after an online restore.
    func reopenForWriting(sessions: [Session], why: String) -> Bool {
        replication.excludingReplication { reopenForWritingAlone(sessions: sessions, why: why) }
    }

    private func reopenForWritingAlone(sessions: [Session], why: String) -> Bool {
        detachForSwap(sessions)
        do {
            try database.close()
        } catch {
            logger.error("closing the database to reopen it failed: \(error)")
            return false
        }
        guard let (opened, writable) = openWritableOrReadOnly() else { return false }
        install(opened, sessions: sessions)
        if writable { logger.notice("\(why): the database was reopened for writing") }
        return writable
    }

    /// Opens the closed database for writing or, when that fails (a full disk: opening writes a
    /// new manifest and log), read-only until the disk guard sees space again. Nil (logged) when
    /// it cannot be opened at all. `writable` tells which.
    func openWritableOrReadOnly() -> (opened: (Database, [String: Family], Family), writable: Bool)? {
        do {
            return (try Engine.openDatabase(configuration, stats: stats), true)
        } catch {
            logger.error("opening the database for writing failed: \(error); opening it read-only")
        }
        do {
            let opened = try Engine.openDatabase(configuration, stats: stats, readOnly: true)
            diskGuard.openedReadOnly()
            return (opened, false)
        } catch {
            logger.critical("opening the database read-only failed too: \(error); every command will fail until restart")
            return nil
        }
    }
}
