import CRocksDB

/// Writes applied together by `Database.write(_:)`: all or none, across column families.
///
/// Single-owner (`~Copyable`): the C batch is destroyed in `deinit`. It keeps the families it
/// names alive, and the database checks none was dropped before writing.
public struct WriteBatch: ~Copyable {
    let raw: OpaquePointer
    private(set) var families: [ColumnFamily] = []
    /// The family named last (compared without retaining it).
    private var lastFamily: ObjectIdentifier? = nil

    public init() { raw = rocksdb_writebatch_create() }

    /// A batch from RocksDB's serialized form (`data`), which names families by id; nil when
    /// the bytes are not a batch.
    public init?(serialized bytes: [UInt8]) {
        guard let raw = bytes.withChars({ p, n in rocksdb_writebatch_create_from(p, n) }) else { return nil }
        self.raw = raw
    }

    deinit { rocksdb_writebatch_destroy(raw) }

    /// Notes the family so `Database.write` can check it; false when its C handle must not be
    /// touched (dropped or, after the database closed, destroyed): the write then fails there.
    private mutating func remember(_ family: ColumnFamily?) -> Bool {
        guard let family else { return true }
        // A batch of many entries names one or two families: the last one, almost always.
        let id = ObjectIdentifier(family)
        if id != lastFamily {
            if !families.contains(where: { $0 === family }) { families.append(family) }
            lastFamily = id
        }
        return !family.isDropped
    }

    public mutating func put(_ key: [UInt8], _ value: [UInt8], in family: ColumnFamily? = nil) {
        guard remember(family) else { return }
        key.withChars { k, kl in
            value.withChars { v, vl in
                if let family { rocksdb_writebatch_put_cf(raw, family.raw, k, kl, v, vl) } else { rocksdb_writebatch_put(raw, k, kl, v, vl) }
            }
        }
    }

    /// `put` from buffers the caller holds (a cursor's key and value), copied into the batch.
    public mutating func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in family: ColumnFamily? = nil) {
        guard remember(family) else { return }
        let k = key.baseAddress?.assumingMemoryBound(to: CChar.self), v = value.baseAddress?.assumingMemoryBound(to: CChar.self)
        if let family { rocksdb_writebatch_put_cf(raw, family.raw, k, key.count, v, value.count) } else { rocksdb_writebatch_put(raw, k, key.count, v, value.count) }
    }

    public mutating func delete(_ key: [UInt8], in family: ColumnFamily? = nil) {
        guard remember(family) else { return }
        key.withChars { k, kl in
            if let family { rocksdb_writebatch_delete_cf(raw, family.raw, k, kl) } else { rocksdb_writebatch_delete(raw, k, kl) }
        }
    }

    public mutating func merge(_ key: [UInt8], _ operand: [UInt8], in family: ColumnFamily? = nil) {
        guard remember(family) else { return }
        key.withChars { k, kl in
            operand.withChars { v, vl in
                if let family { rocksdb_writebatch_merge_cf(raw, family.raw, k, kl, v, vl) } else { rocksdb_writebatch_merge(raw, k, kl, v, vl) }
            }
        }
    }

    /// Deletes `[from, to)`.
    public mutating func deleteRange(from: [UInt8], to: [UInt8], in family: ColumnFamily? = nil) {
        guard remember(family) else { return }
        from.withChars { b, bl in
            to.withChars { e, el in
                if let family { rocksdb_writebatch_delete_range_cf(raw, family.raw, b, bl, e, el) } else { rocksdb_writebatch_delete_range(raw, b, bl, e, el) }
            }
        }
    }

    /// Appends `blob` to the batch's WAL record only: not in the memtable or any table file,
    /// no sequence number, not counted (RocksDB's `PutLogData`). Readers of the WAL (a
    /// replication feed) see it in order with the batch's other records.
    public mutating func putLogData(_ blob: [UInt8]) {
        blob.withChars { b, bl in rocksdb_writebatch_put_log_data(raw, b, bl) }
    }

    public mutating func clear() {
        rocksdb_writebatch_clear(raw)
        families = []
        lastFamily = nil
    }

    /// Number of operations.
    public var count: Int { Int(rocksdb_writebatch_count(raw)) }

    /// Nothing was added, not even an entry for a dropped family (which is not in `count` but
    /// must still fail the write).
    public var isEmpty: Bool { count == 0 && families.isEmpty }

    /// The batch's serialized bytes (RocksDB's WriteBatch format), e.g. for shipping.
    public var data: [UInt8] {
        var size = 0
        let p = rocksdb_writebatch_data(raw, &size)
        return Array(UnsafeRawBufferPointer(start: p, count: size))
    }
}
