import Rocks
#if canImport(Glibc)
import Glibc
#endif

/// A full sync: the primary makes a RocksDB checkpoint (table files hard-linked, so it is quick
/// and small on disk) and streams its files; the replica stages them beside its data with the
/// restore journal (`RestoreJournal.stage`) and swaps them in with every client paused. Until
/// the swap the replica serves its old data; a crash or a broken link before it leaves the old
/// data as it was (startup drops the staged files), and one during it is finished at startup.
extension Replication {
    /// A checkpoint made for one replica, removed once streamed.
    public struct SyncCheckpoint: Sendable {
        public let directory: String
        public let files: [File]
        public var totalBytes: Int { files.reduce(0) { $0 + $1.size } }

        public struct File: Sendable {
            public let name: String
            public let size: Int
        }
    }

    static let checkpointPrefix = "replication-checkpoint-"

    public func makeSyncCheckpoint(_ engine: Engine) throws(CommandError) -> SyncCheckpoint {
        let n = state.withLock { s -> Int in
            s.checkpointCounter += 1
            return s.checkpointCounter
        }
        let directory = engine.configuration.dir + "/" + Replication.checkpointPrefix + String(n)
        removeTree(directory)
        // Under the feed lock: the database is not swapped or closed meanwhile. Under
        // `familyChanges`: a CF.CREATE or CF.DROP is in it whole (the family and the record of
        // its options in `cairn.meta`, two writes), else the replica could get a family without
        // its record and open it with default options.
        try feedLock.withLock { (_: inout [ObjectIdentifier: WALFeed]) throws(CommandError) in
            guard !isStopped else { throw CommandError("ERR", "the server is stopping") }
            try engine.storage("checkpoint for a replica") {
                try engine.familyChanges.withLock { _ in try engine.database.checkpoint(to: directory) }
            }
        }
        var files: [SyncCheckpoint.File] = []
        do {
            for name in try listFiles(directory).sorted() {
                var st = stat()
                guard stat(directory + "/" + name, &st) == 0 else { continue }
                files.append(.init(name: name, size: Int(st.st_size)))
            }
        } catch {
            removeTree(directory)
            throw CommandError("ERR", "listing the checkpoint for a replica failed: \(error)")
        }
        return SyncCheckpoint(directory: directory, files: files)
    }

    public func remove(_ checkpoint: SyncCheckpoint) { removeTree(checkpoint.directory) }

    /// At start: checkpoints a crash left behind.
    static func removeLeftoverCheckpoints(in dir: String) {
        for name in (try? listEntryNames(dir)) ?? [] where name.hasPrefix(checkpointPrefix) {
            removeTree(dir + "/" + name)
        }
    }

    public struct SyncFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// On a replica: stages the primary's copy, which `receive` writes into the directory it is
    /// given (`totalBytes` of it), and swaps it in, unless the link's `generation` ended
    /// meanwhile (then the copy is dropped). Returns the copy's latest sequence number.
    public func receiveFullSync(_ engine: Engine, primaryID: String, totalBytes: Int, generation: Int, receive: (String) throws -> Void) throws(SyncFailure) -> UInt64 {
        let dir = engine.configuration.dir
        let ended = SyncFailure(description: "the replication target changed (the copy was dropped; the data is unchanged)")
        guard self.generation == generation else { throw ended }
        let needed = UInt64(totalBytes) + UInt64(totalBytes) / 50 + (8 << 20)
        if let free = freeBytes(dir), free < needed {
            throw SyncFailure(description: "not enough free space on the data disk for the primary's copy: it needs about \(needed >> 20) MB and \(free >> 20) MB is free")
        }
        do {
            try RestoreJournal.stage(.init(phase: .copying, backupID: 0, backupDirectory: RestoreJournal.replicationSource), into: dir, fill: receive)
        } catch {
            throw SyncFailure(description: "receiving the primary's copy failed (the data is unchanged): \(error)")
        }
        var failure: SyncFailure? = nil
        let body = { (sessions: [Session]) in
            // The generation is checked and the copy swapped in under `linkGate`: a REPLICAOF
            // that ended this link either came first (nothing is swapped) or waits for the swap.
            self.linkGate.withLock { _ in
                guard self.generation == generation else {
                    RestoreJournal.abandon(dir)
                    failure = ended
                    return
                }
                do throws(CommandError) {
                    try engine.reopen(swappingIn: "the primary's copy", sessions: sessions)
                } catch {
                    failure = SyncFailure(description: "switching in the primary's copy failed: \(error.message)")
                    return
                }
                self.state.withLock { s in
                    s.id = primaryID
                    s.secondID = Replication.noID
                    s.secondOffset = 0
                }
            }
        }
        if let hooks = engine.hooks { hooks.withClientsPaused(body) } else { body([]) }
        if let failure { throw failure }
        save(dir: dir, cleanAt: nil)
        return engine.database.latestSequenceNumber
    }
}
