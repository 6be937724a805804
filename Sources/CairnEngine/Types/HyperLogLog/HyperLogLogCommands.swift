import RESP

/// The HyperLogLog family: https://redis.io/docs/latest/commands/?group=hyperloglog
///
/// A HyperLogLog is a plain string value in Redis's own layout (`HyperLogLog`), read and
/// written through the string paths (`Call.read`, `Call.write`), so GET, SET, DUMP/RESTORE,
/// APPEND and expiry treat it as the string it is, and the bytes after each command equal
/// redis-server's. A key's expiry is kept across changes.
///
/// PFCOUNT of one key stores the count it computed in the value's header, as Redis does, except
/// where Cairn may not write: through a snapshot (SNAPSHOT.USE), on a replica (which applies only
/// its primary's batches) and in disk-full mode. It then answers the same count without caching it.
enum HyperLogLogCommands {
    static let all: [Command] = [
        Command("pfadd", handler: add)
        .grouped { _, _ in .batched },
        Command("pfcount", handler: count),
        Command("pfmerge", handler: merge)
        .grouped { _, _ in .batched },
        Command("pfdebug", handler: debug),
    ]

    /// PFADD key [element ...]: 1 when a register changed or the key was created, else 0.
    /// https://redis.io/docs/latest/commands/pfadd/
    static func add(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let key = call[1]
        let maxBytes = call.hllSparseMaxBytes
        let changed = try call.locked(key) { () throws(CommandError) -> Bool in
            let old = try call.read(key)
            var hll: HyperLogLog
            var changed = false
            if let old {
                guard let existing = HyperLogLog(old.payload) else { throw HyperLogLog.notHyperLogLog }
                hll = existing
            } else {
                hll = HyperLogLog()
                changed = true
            }
            for element in call.argv[2...] {
                switch hll.add(element, sparseMaxBytes: maxBytes) {
                case .unchanged: break
                case .changed: changed = true
                case .corrupted:
                    // Redis changes the value in place: the registers set before the corrupt
                    // opcode was found stay set.
                    if let old, hll.bytes != old.payload { try call.write(key, hll.bytes, expiresAt: old.expiresAt) }
                    throw HyperLogLog.corrupted
                }
            }
            guard changed else { return false }
            hll.invalidateCache()
            try call.write(key, hll.bytes, expiresAt: old?.expiresAt)
            call.notify(.string, "pfadd", key)
            return true
        }
        out.integer(changed ? 1 : 0)
    }

    /// PFCOUNT key [key ...]: the estimated cardinality of one HyperLogLog, or of the union of
    /// several (a missing key is an empty one).
    /// https://redis.io/docs/latest/commands/pfcount/
    static func count(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        if call.count > 2 {
            var registers = [UInt8](repeating: 0, count: HyperLogLog.registerCount)
            for key in call.argv[1...] {
                try call.withPayload(key) { (payload, _) throws(CommandError) in
                    guard let payload else { return }
                    guard HyperLogLog.isValid(payload) else { throw HyperLogLog.notHyperLogLog }
                    guard HyperLogLog.merge(payload, into: &registers) else { throw HyperLogLog.corrupted }
                }
            }
            var histogram = [Int](repeating: 0, count: 64)
            for r in registers { histogram[Int(r)] += 1 }
            out.integer(Int64(bitPattern: HyperLogLogEstimator.cardinality(histogram)))
            return
        }
        let key = call[1]
        let engine = call.engine
        let mayStore = call.session.readSnapshot == nil && !engine.replication.isReplica && !engine.diskGuard.refusesWrites
        // Usually the cached count, read without a lock; a stale one is counted here when it
        // cannot be stored, else again under the key's lock, then stored.
        let counted = try call.withPayload(key) { (payload, _) throws(CommandError) -> UInt64? in
            guard let payload else { return 0 }
            guard HyperLogLog.isValid(payload) else { throw HyperLogLog.notHyperLogLog }
            if let card = HyperLogLog.cachedCardinality(of: payload) { return card }
            return mayStore ? nil : try estimate(payload).get()
        }
        if let counted {
            out.integer(Int64(bitPattern: counted))
        } else {
            out.integer(Int64(bitPattern: try call.locked(key) { () throws(CommandError) -> UInt64 in try countAndCache(call, key) }))
        }
    }

    /// The count of `key`'s HyperLogLog, stored in its header when it was stale.
    private static func countAndCache(_ call: Call, _ key: [UInt8]) throws(CommandError) -> UInt64 {
        guard let old = try call.read(key) else { return 0 }
        guard var hll = HyperLogLog(old.payload) else { throw HyperLogLog.notHyperLogLog }
        if let card = hll.bytes.withUnsafeBytes(HyperLogLog.cachedCardinality) { return card }
        let card = try hll.bytes.withUnsafeBytes(estimate).get()
        hll.cache(cardinality: card)
        try call.write(key, hll.bytes, expiresAt: old.expiresAt)
        return card
    }

    /// The estimated count of a HyperLogLog value whose cached count is stale; INVALIDOBJ when
    /// its sparse registers are corrupt.
    private static func estimate(_ value: UnsafeRawBufferPointer) -> Result<UInt64, CommandError> {
        guard let histogram = HyperLogLog.histogram(of: value) else { return .failure(HyperLogLog.corrupted) }
        return .success(HyperLogLogEstimator.cardinality(histogram))
    }

    /// PFMERGE destkey [sourcekey ...]: the union of the sources and of `destkey` itself into
    /// `destkey`. Dense when any input is dense; otherwise sparse, promoted as PFADD would.
    /// https://redis.io/docs/latest/commands/pfmerge/
    static func merge(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let keys = Array(call.argv[1...])
        let destination = call[1]
        let maxBytes = call.hllSparseMaxBytes
        try call.locked(keys) { () throws(CommandError) in
            var registers = [UInt8](repeating: 0, count: HyperLogLog.registerCount)
            var dense = false
            for key in keys {
                try call.withPayload(key) { (payload, _) throws(CommandError) in
                    guard let payload else { return }
                    guard HyperLogLog.isValid(payload) else { throw HyperLogLog.notHyperLogLog }
                    if HyperLogLog.encoding(of: payload) == .dense { dense = true }
                    guard HyperLogLog.merge(payload, into: &registers) else { throw HyperLogLog.corrupted }
                }
            }
            let old = try call.read(destination)
            var hll = HyperLogLog()
            if let old {
                guard let existing = HyperLogLog(old.payload) else { throw HyperLogLog.notHyperLogLog }
                hll = existing
            }
            if dense && !hll.makeDense() { throw HyperLogLog.corrupted }
            for (i, r) in registers.enumerated() where r > 0 {
                _ = hll.raise(i, to: r, sparseMaxBytes: maxBytes)
            }
            hll.invalidateCache()
            try call.write(destination, hll.bytes, expiresAt: old?.expiresAt)
            // Redis 7.0 names PFMERGE's event `pfadd`.
            call.notify(.string, "pfadd", destination)
        }
        out.simpleString("OK")
    }

    /// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key: Redis's internal view of a HyperLogLog.
    /// GETREG and TODENSE convert a sparse value to dense and store it.
    static func debug(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let key = call[2]
        let subcommand = call[1]
        try call.locked(key) { () throws(CommandError) in
            guard let old = try call.read(key) else { throw CommandError("ERR", "The specified key does not exist") }
            guard var hll = HyperLogLog(old.payload) else { throw HyperLogLog.notHyperLogLog }
            func storeDense() throws(CommandError) -> Bool {
                guard hll.encoding == .sparse else { return false }
                guard hll.makeDense() else { throw HyperLogLog.corrupted }
                try call.write(key, hll.bytes, expiresAt: old.expiresAt)
                return true
            }
            if subcommand.isKeyword("GETREG") {
                _ = try storeDense()
                out.arrayHeader(HyperLogLog.registerCount)
                hll.bytes.withUnsafeBytes { raw in
                    for i in 0..<HyperLogLog.registerCount { out.integer(Int64(DenseRegisters.get(raw, i))) }
                }
            } else if subcommand.isKeyword("DECODE") {
                guard hll.encoding == .sparse else { throw CommandError("ERR", "HLL encoding is not sparse") }
                out.bulk(SparseRegisters.decode(hll.bytes))
            } else if subcommand.isKeyword("ENCODING") {
                out.simpleString(hll.encoding == .dense ? "dense" : "sparse")
            } else if subcommand.isKeyword("TODENSE") {
                out.integer(try storeDense() ? 1 : 0)
            } else {
                throw CommandError("ERR", "Unknown PFDEBUG subcommand '\(Bytes.text(subcommand))'")
            }
        }
    }
}

extension Call {
    /// The largest sparse HyperLogLog, header included, before it turns dense
    /// (`hll-sparse-max-bytes`).
    var hllSparseMaxBytes: Int { engine.configuration.hllSparseMaxBytes }
}
