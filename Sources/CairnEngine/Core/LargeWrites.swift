import Rocks
import Synchronization

/// A big write (a 500,000-key MSET or DEL, a huge EXEC) committed in pieces, so that no other
/// client's write waits for it.
///
/// RocksDB commits writes in order, one write group after another, and a group's writers wait
/// until its batches are in the memtable: a 500,000-entry batch, about half a second of
/// memtable inserts, held up every writer of every key behind it. Such a write has already
/// claimed its keys (`KeyLocks`), so no other writer of them runs meanwhile, and a reader of
/// them waits for the claim too (`Engine.route` queues it behind the write on the long queue,
/// `Engine.run` waits). What remains is that pieces are seen one at a time by a crash, a
/// backup, a checkpoint or a replica; the *journal* covers that:
///
/// 1. the whole batch, serialized, is put under `pending-write:<sequence><n>` in `cairn.meta`,
///    one value (a copy, not a memtable insert per entry), under a key of its own;
/// 2. the batch's records go in pieces of `pieceEntries`, each its own write, so other
///    writers' groups run between them;
/// 3. the last piece deletes the journal entry, in the same write.
///
/// A start (or promotion, or a restore) that finds a journal entry writes its batch again
/// with the entry's deletion, as one write (`finishPendingWrites`): the pieces are puts,
/// deletes and merges of the claimed keys, which nothing else wrote meanwhile, so writing them
/// again leaves exactly the whole batch applied. A crash before the journal entry was written
/// leaves nothing of the write. Either way the write is all or nothing.
///
/// A replica applies the pieces as the primary wrote them, so its readers can see such a
/// write half done until the last piece arrives; it leaves the journal to its primary (a
/// replica's data must keep the primary's sequence numbers), and finishes it if promoted.
extension Engine {
    /// Writes with at least this many entries go in pieces, when committed under a claim.
    static let piecewiseEntries = 8192
    /// Entries per piece: a few milliseconds of memtable inserts.
    static let pieceEntries = 2048
    static let pendingWritePrefix = Array("pending-write:".utf8)

    /// Writes `batch`: in pieces behind a journal entry when it is big and its keys are
    /// claimed (the calling thread commits under a claim), else as one write. (A new
    /// collection's members go ahead without a journal: `NewCollection`.) A thread of low
    /// priority writes through `NormalPriorityThread`, so no small write waits in its group for it.
    func writeClaimed(_ batch: borrowing WriteBatch, options: WriteOptions) throws {
        // A claim is held by a long command only (LongWork.swift): the common write pays nothing more.
        guard locks.holdsClaim else {
            try database.write(batch, options: options)
            return
        }
        guard batch.count >= Engine.piecewiseEntries, let meta = database.family(named: Engine.metaFamilyName) else {
            try NormalPriorityThread.shared.run { try database.write(batch, options: options) }
            return
        }
        let data = batch.data
        guard let pieces = LargeWrite.pieces(of: data, entries: Engine.pieceEntries), pieces.count > 1 else {
            try NormalPriorityThread.shared.run { try database.write(batch, options: options) }
            return
        }
        // Unique even for two big writes (of different keys) that start at the same sequence.
        let key = Engine.pendingWritePrefix
            + BigEndian.bytes(database.latestSequenceNumber)
            + BigEndian.bytes(LargeWrite.journalEntries.add(1, ordering: .relaxed).newValue)
        var journal = WriteBatch()
        journal.put(key, data, in: meta)
        // Only the last write waits for a sync (when asked): it syncs the earlier ones too.
        let unsynced = WriteOptions(sync: false, noSlowdown: options.noSlowdown)
        try NormalPriorityThread.shared.run { try database.write(journal, options: unsynced) }
        do {
            for piece in pieces.dropLast() { try NormalPriorityThread.shared.run { try database.write(serializedBatch: piece, options: unsynced) } }
            guard var last = WriteBatch(serialized: pieces[pieces.count - 1]) else {
                throw StorageError(code: .invalidArgument, message: "a piece of a big write is not a write batch")
            }
            last.delete(key, in: meta)
            try NormalPriorityThread.shared.run { try database.write(last, options: options) }
        } catch {
            logger.error("a big write failed after its first piece (\(error)); its journal entry stays, and the next start completes it")
            throw error
        }
        stats.piecewiseWrites.increment()
    }

    /// Completes big writes a crash (or a backup, checkpoint or full sync taken meanwhile)
    /// interrupted: each journal entry's batch is written again together with the entry's
    /// deletion. On a primary only: a replica's data follows its primary's sequence numbers,
    /// and its primary sends the rest of the pieces. Returns how many were completed. Called
    /// while no command runs (at start, when a swapped-in database is installed), or under
    /// every key lock (a promotion). New collections a crash left half written are dropped
    /// (`dropInterruptedNewCollections`).
    @discardableResult
    func finishPendingWrites() -> Int {
        guard !replication.isReplica, !diskGuard.isReadOnly,
              let meta = database.family(named: Engine.metaFamilyName)
        else { return 0 }
        do {
            try dropInterruptedNewCollections()
            let pending = try database.entries(withPrefix: Engine.pendingWritePrefix, in: meta)
            guard !pending.isEmpty else { return 0 }
            do {
                for entry in pending {
                    guard var batch = WriteBatch(serialized: entry.value) else {
                        logger.error("an interrupted big write's journal entry is not a write batch: dropped")
                        var drop = WriteBatch()
                        drop.delete(entry.key, in: meta)
                        try database.write(drop, options: WriteOptions(sync: true))
                        continue
                    }
                    let entries = batch.count
                    batch.delete(entry.key, in: meta)
                    try database.write(batch, options: WriteOptions(sync: true))
                    logger.notice("completed a big write of \(entries) entries that was interrupted")
                }
            }
            return pending.count
        } catch {
            logger.error("completing an interrupted big write failed: \(error); it is tried again at the next start")
            return 0
        }
    }
}

/// Cuts RocksDB's serialized batch into batches of whole records.
enum LargeWrite {
    /// Journal entries written by this process: part of each entry's key.
    static let journalEntries = Atomic<UInt64>(0)

    /// The records of `data` in batches of at most `entries` each (a batch's header: 8 bytes of
    /// sequence, left 0, and a 4-byte little-endian count); nil when the batch cannot be read
    /// to its end.
    static func pieces(of data: [UInt8], entries: Int) -> [[UInt8]]? {
        var reader = BatchReader(data)
        var pieces: [[UInt8]] = []
        var start = 12
        var count = 0
        func cut(at end: Int) {
            var piece = [UInt8](repeating: 0, count: 8)
            piece.reserveCapacity(12 + end - start)
            withUnsafeBytes(of: UInt32(count).littleEndian) { piece.append(contentsOf: $0) }
            piece.append(contentsOf: data[start..<end])
            pieces.append(piece)
            start = end
            count = 0
        }
        while let record = reader.next() {
            if record.kind != .logData { count += 1 }
            if count == entries { cut(at: reader.offset) }
        }
        guard reader.readAll else { return nil }
        if start < data.count { cut(at: data.count) }
        return pieces
    }
}
