import RESP
import Rocks

/// Column families and MERGE: Cairn's own commands (no Redis equivalent).
///
/// `CF.CREATE name [MERGE add|append|max|min] [COMPRESSION no|snappy|zlib|lz4|zstd] [BLOOM bits] [BLOCKSIZE bytes]`,
/// `CF.DROP name`, `CF.LIST`, `CF.USE name`, `CF.INFO name`, `MERGE key operand`.
/// A family's merge operator and table options are recorded in the `cairn.meta` family
/// (`FamilySettings`), so they survive restarts and reach replicas.
enum FamilyCommands {
    static let all: [Command] = [
        Command("cf.create", handler: create),
        Command("cf.drop") { call, out throws(CommandError) in
            let name = call.text(1)
            guard name != "default" else { throw CommandError("ERR", "the default column family cannot be dropped") }
            guard let family = call.engine.family(named: name) else { throw noSuchFamily(name) }
            let engine = call.engine
            // Every stripe: the family's keys are gone, so every WATCH of one of them fires.
            try engine.locks.withAll { () throws(CommandError) in
                try engine.storage("CF.DROP") { try engine.familyChanges.withLock { _ in
                    try engine.database.dropFamily(family.handle)
                    // Its collections' members: one range tombstone (compaction reclaims them).
                    let range = MemberKeys.familyRange(name)
                    try engine.database.deleteRange(from: range.lower, to: range.upper, in: family.members, options: engine.writeOptions)
                    if let meta = engine.database.family(named: Engine.metaFamilyName) {
                        try engine.database.delete(FamilySettings.key(name), in: meta, options: WriteOptions(sync: true))
                    }
                } }
            }
            engine.unregisterFamily(name)
            if call.session.family === family { call.session.family = engine.defaultFamily }
            out.simpleString("OK")
        }.reachingEverything(write: true),
        Command("cf.list") { call, out throws(CommandError) in
            let names = call.engine.allFamilies.map(\.name)
            out.arrayHeader(names.count)
            for n in names { out.bulk(n) }
        },
        Command("cf.use") {
            call, out throws(CommandError) in
            let name = call.text(1)
            guard let family = call.engine.family(named: name) else { throw noSuchFamily(name) }
            call.session.family = family
            out.simpleString("OK")
        },
        Command("cf.info") { call, out throws(CommandError) in
            let name = call.count == 2 ? call.text(1) : call.family.name
            guard let family = call.engine.family(named: name) else { throw noSuchFamily(name) }
            let db = call.engine.database
            // The table options the family was opened with: its own, else the database's.
            let base = Engine.databaseOptions(call.engine.configuration)
            let compression = family.settings.compression ?? base.compression
            let fields: [(String, String)] = [
                ("name", family.name),
                ("merge", family.mergeOperator ?? ""),
                ("compression", compression == .none ? "no" : compression.rawValue),
                ("bloom_bits", Bytes.humanDouble(family.settings.bloomBitsPerKey ?? base.bloomBitsPerKey)),
                ("block_size", String(family.settings.blockSize ?? base.blockSize)),
                ("estimate_keys", String(db.integerProperty("rocksdb.estimate-num-keys", in: family.handle) ?? 0)),
                ("sst_bytes", String(db.integerProperty("rocksdb.total-sst-files-size", in: family.handle) ?? 0)),
                ("memtable_bytes", String(db.integerProperty("rocksdb.cur-size-all-mem-tables", in: family.handle) ?? 0)),
            ]
            out.mapHeader(fields.count)
            for (k, v) in fields {
                out.bulk(k)
                out.bulk(v)
            }
        },
        Command("merge") { call, out throws(CommandError) in
            guard let opName = call.family.mergeOperator, let kind = MergeKind(name: opName) else {
                throw CommandError("ERR", "column family '\(call.family.name)' has no merge operator; create one with CF.CREATE name MERGE add|append|max|min")
            }
            if kind == .add && Bytes.int64(call[2]) == nil { throw .notInteger }
            let operand = kind.operand(call[2])
            if let tx = call.session.transaction {
                // Later reads in the same EXEC see the merged value through the overlay.
                let current = try call.read(call[1])
                let merged = operand.withUnsafeBytes { raw in
                    kind.apply(current?.payload, UnsafeRawBufferPointer(rebasing: raw[1...]))
                }
                tx.merge(call[1], operand, result: ValueFormat.encode(merged, expiresAt: current?.expiresAt), in: call.family)
                tx.changed(stripe: call.engine.locks.stripe(for: call[1], in: call.family))
            } else {
                let handle = call.family.handle
                let options = call.engine.writeOptions
                // The key's lock orders the merge with EXECs that WATCH the key (no read here).
                try call.locked(call[1]) { () throws(CommandError) in
                    try call.engine.storage("MERGE") { try call.database.merge(call[1], operand, in: handle, options: options) }
                    call.engine.locks.changed(call[1], in: call.family)
                }
            }
            out.simpleString("OK")
        },
    ]

    static func noSuchFamily(_ name: String) -> CommandError {
        CommandError("ERR", "no such column family '\(name)'")
    }

    static func create(_ call: Call, _ out: inout RESPWriter) throws(CommandError) {
        let name = call.text(1)
        guard !name.isEmpty, !Engine.hiddenFamilyNames.contains(name), name.utf8.count <= 255, !name.contains(where: { $0 == " " || $0 == "\n" }) else {
            throw CommandError("ERR", "invalid column family name '\(name)'")
        }
        var settings = FamilySettings()
        var i = 2
        while i + 1 < call.count {
            let value = call.text(i + 1)
            if call[i].isKeyword("MERGE") {
                guard let k = MergeKind(name: value) else { throw CommandError("ERR", "unknown merge operator '\(value)'; use add, append, max or min") }
                settings.merge = k.name
            } else if call[i].isKeyword("COMPRESSION") {
                guard let c = Compression(rawValue: value == "no" ? "none" : value.lowercased()) else {
                    throw CommandError("ERR", "unknown compression '\(value)'; use no, snappy, zlib, lz4 or zstd")
                }
                settings.compression = c
            } else if call[i].isKeyword("BLOOM") {
                guard let bits = Double(value), bits >= 0, bits <= 64 else { throw CommandError("ERR", "BLOOM takes bits per key from 0 to 64") }
                settings.bloomBitsPerKey = bits
            } else if call[i].isKeyword("BLOCKSIZE") {
                guard let size = ConfigOption.parseMemory(value), size >= 1024, size <= 64 << 20 else {
                    throw CommandError("ERR", "BLOCKSIZE takes bytes from 1kb to 64mb")
                }
                settings.blockSize = size
            } else {
                throw .syntax
            }
            i += 2
        }
        guard i == call.count else { throw .syntax }
        let engine = call.engine
        guard engine.family(named: name) == nil else { throw CommandError("ERR", "column family '\(name)' already exists") }
        let options = settings.applied(to: Engine.familyOptions(name, stats: engine.stats))
        let handle = try engine.storage("CF.CREATE") { () throws -> ColumnFamily in try engine.familyChanges.withLock { _ in
            let handle = try engine.database.createFamily(named: name, options: options)
            // Recorded so a restart opens the family with the same options, and a replica
            // creates it with them (FamilyEvents).
            if let meta = engine.database.family(named: Engine.metaFamilyName) {
                try engine.database.put(FamilySettings.key(name), settings.encoded, in: meta, options: WriteOptions(sync: true))
            }
            return handle
        } }
        engine.registerFamily(Family(name: name, handle: handle, settings: settings, members: engine.defaultFamily.members))
        out.simpleString("OK")
    }
}
