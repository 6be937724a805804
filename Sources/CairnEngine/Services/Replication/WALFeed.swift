public import RESP
import Rocks

/// A primary's reader of its own WAL for one replica: the write batches from `next` on, as
/// `BATCH` frames, read as they are written. When `next` falls inside a batch (one a replica
/// wrote joined from its primary's, read now that it is a primary or has replicas of its own),
/// the first frame is the rest of that batch from `next` on.
///
/// The iterator is kept between reads: RocksDB's reads on in its WAL file, and only when the
/// writes moved to a newer file is a new one made (finding the position again means reading
/// that file from its start). Reads run under `Replication.feedLock`, which a database swap
/// (a restore, a replica's full sync) takes to end every feed first: a WAL iterator must not
/// outlive its database.
///
/// `@unchecked Sendable`: used by its replica's one thread; `stale` is written under
/// `feedLock`, which every read holds.
public final class WALFeed: @unchecked Sendable {
    let engine: Engine
    /// The first sequence number not yet sent.
    public private(set) var next: UInt64
    private var iterator: WALIterator?
    /// The database was swapped: this history ended for the replica.
    private var stale = false

    /// Under `feedLock`, before the database closes: frees the iterator, ends the feed.
    func end() {
        stale = true
        iterator = nil
    }

    public struct Ended: Error, CustomStringConvertible {
        public let description: String
    }

    public init(engine: Engine, from next: UInt64) {
        self.engine = engine
        self.next = next
        engine.replication.feedLock.withLock { $0[ObjectIdentifier(self)] = self }
    }

    public func close() {
        engine.replication.feedLock.withLock {
            $0.removeValue(forKey: ObjectIdentifier(self))
            iterator = nil
        }
    }

    /// Appends the batches written since the last read (up to about `maxBytes`) to `out`;
    /// returns how many. Throws `Ended` when the replica cannot continue from here (the WAL no
    /// longer holds `next`, or the database was replaced): it must reconnect and resynchronise.
    public func read(into out: inout RESPWriter, maxBytes: Int) throws(Ended) -> Int {
        let result: Result<Int, Ended> = engine.replication.feedLock.withLock { _ in
            if stale { return .failure(Ended(description: "the database was replaced")) }
            let database = engine.database
            var sent = 0
            do {
                if iterator == nil {
                    guard database.latestSequenceNumber >= next else { return .success(0) }
                    iterator = try database.updates(since: next)
                }
                while out.bytes.count < maxBytes, let entry = try iterator?.next() {
                    if entry.count == 0 || entry.sequence + UInt64(entry.count) <= next { continue }
                    if entry.sequence == next {
                        ReplicationFrame.batch(sequence: entry.sequence, data: entry.data, into: &out)
                    } else if entry.sequence < next, let rest = SerializedBatch.suffix(of: entry.data, startingAt: entry.sequence, from: next) {
                        // A batch this server wrote joined from its primary's (BatchApplier):
                        // the follower has its first operations.
                        engine.logger.notice("continuing from sequence \(next), inside the batch at sequence \(entry.sequence) (\(entry.count) operations)")
                        ReplicationFrame.batch(sequence: next, data: rest, into: &out)
                    } else {
                        iterator = nil
                        return .failure(Ended(description: "the WAL has no batch starting at sequence \(next) (found \(entry.sequence))"))
                    }
                    next = entry.sequence + UInt64(entry.count)
                    sent += 1
                }
                return .success(sent)
            } catch let error as StorageError where error.code == .tryAgain {
                // The writes went on in a newer WAL file: a new iterator next time.
                iterator = nil
                return .success(sent)
            } catch {
                iterator = nil
                if sent > 0 { return .success(sent) }
                return .failure(Ended(description: "reading the WAL from sequence \(next) failed: \(error)"))
            }
        }
        return try result.get()
    }
}

extension Replication {
    /// Whether the WAL still holds every batch from `sequence` on (a partial sync can start there).
    func walReaches(back sequence: UInt64, in database: Database) -> Bool {
        let latest = database.latestSequenceNumber
        if sequence == latest + 1 { return true }
        guard sequence <= latest else { return false }
        guard let iterator = try? database.updates(since: sequence) else { return false }
        // The first batch with operations that is not wholly before `sequence` must start there,
        // or hold it (a joined batch, BatchApplier) and be readable up to it.
        while let entry = try? iterator.next() {
            if entry.count == 0 || entry.sequence + UInt64(entry.count) <= sequence { continue }
            return entry.sequence == sequence
                || SerializedBatch.suffix(of: entry.data, startingAt: entry.sequence, from: sequence) != nil
        }
        return false
    }
}
