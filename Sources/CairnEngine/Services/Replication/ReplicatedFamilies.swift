import Rocks

extension Engine {
    /// A replica creates the family its primary created (before the batch recording it), with
    /// the merge operator and table options recorded in that batch. An existing family is
    /// kept: the batch may be applied again after a crash.
    func createReplicatedFamily(_ name: String, settings: FamilySettings) throws {
        try familyChanges.withLock { _ in
            guard database.family(named: name) == nil else { return }
            let handle = try database.createFamily(named: name, options: settings.applied(to: Engine.familyOptions(name, stats: stats)))
            registerFamily(Family(name: name, handle: handle, settings: settings, members: defaultFamily.members))
            logger.notice("created column family '\(name)' as the primary did")
        }
    }

    /// A replica drops the family its primary dropped (after the batch recording it). Sessions
    /// using it get errors until CF.USE, as on the primary.
    func dropReplicatedFamily(_ name: String) throws {
        try familyChanges.withLock { _ in
            guard name != "default", let handle = database.family(named: name) else { return }
            try locks.withAll { () throws in try database.dropFamily(handle) }
            unregisterFamily(name)
            logger.notice("dropped column family '\(name)' as the primary did")
        }
    }
}
