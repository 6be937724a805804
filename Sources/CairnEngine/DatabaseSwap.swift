import Rocks

extension Engine {
    /// Replaces the read-only database opened on a full disk with one open for writing, once
    /// space has returned. True when it switched; on failure (logged) the read-only database
    /// stays, or is opened again, and the caller retries later.
    ///
    /// Runs while no command runs (the server pauses every worker and the WAL queue); `sessions`
    /// are every connected client's. Their snapshots and iterators read the old database, so
    /// they are closed (their next use gets a clear error), SCAN cursors are forgotten and
    /// WATCHed transactions abort, as after an online restore.
    func reopenForWriting(sessions: [Session]) -> Bool {
        for s in sessions { closeHandlesForRestore(s) }
        locks.withAll {}
        scanCursors.clear()
        do {
            try database.close()
        } catch {
            logger.error("closing the read-only database failed: \(error); staying read-only")
            return false
        }
        var switched = true
        let opened: (Database, [String: Family], Family)
        do {
            opened = try Engine.openDatabase(configuration, stats: stats)
        } catch {
            logger.error("opening the database for writing failed: \(error); staying read-only")
            switched = false
            do {
                opened = try Engine.openDatabase(configuration, stats: stats, readOnly: true)
            } catch {
                logger.critical("reopening the database read-only failed too: \(error); every command will fail until restart")
                return false
            }
        }
        let (db, families, defaultFamily) = opened
        database = db
        self.families.withLock { $0 = families }
        self.defaultFamily = defaultFamily
        for s in sessions {
            let family = self.family(named: s.family.name) ?? defaultFamily
            s.family = family
            s.record.state.withLock { $0.family = family.name }
        }
        if switched { logger.notice("space returned on the data disk: the database is open for writing again") }
        return switched
    }
}
