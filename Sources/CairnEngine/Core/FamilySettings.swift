import Rocks

/// What CF.CREATE chose for a family: its merge operator and its own table options (nil: the
/// database's, from the configuration). Recorded as the value of `family:NAME` in the
/// `cairn.meta` family, so a restart opens the family with them again and a replica (which
/// reads that key in the replicated batch) creates it with them.
///
/// Encoding: a family with no table options of its own keeps the first form, the merge
/// operator's name alone (empty for none), which is all databases written before table options
/// were recorded hold, and all an older replica understands. Otherwise the value is
/// space-separated `name=value` fields: `merge=add compression=zstd bloom=5.0 blocksize=4096`.
/// A merge operator's name never contains `=`, so the two forms cannot be confused. Unknown
/// fields are skipped (a newer primary's options).
struct FamilySettings: Equatable, Sendable {
    /// `add`, `append`, `max`, `min`, or nil.
    var merge: String?
    var compression: Compression?
    var bloomBitsPerKey: Double?
    var blockSize: Int?

    var hasTableOptions: Bool { compression != nil || bloomBitsPerKey != nil || blockSize != nil }

    /// The value stored under `family:NAME`.
    var encoded: [UInt8] {
        guard hasTableOptions else { return Array((merge ?? "").utf8) }
        var fields: [String] = []
        if let merge { fields.append("merge=\(merge)") }
        if let compression { fields.append("compression=\(compression.rawValue)") }
        if let bloomBitsPerKey { fields.append("bloom=\(bloomBitsPerKey)") }
        if let blockSize { fields.append("blocksize=\(blockSize)") }
        return Array(fields.joined(separator: " ").utf8)
    }

    init(merge: String? = nil, compression: Compression? = nil, bloomBitsPerKey: Double? = nil, blockSize: Int? = nil) {
        self.merge = merge
        self.compression = compression
        self.bloomBitsPerKey = bloomBitsPerKey
        self.blockSize = blockSize
    }

    /// Reads either form of a recorded value.
    init(decoding value: some Collection<UInt8>) {
        let text = String(decoding: value, as: UTF8.self)
        guard text.contains("=") else {
            self.init(merge: text.isEmpty ? nil : text)
            return
        }
        self.init()
        for field in text.split(separator: " ") {
            guard let eq = field.firstIndex(of: "=") else { continue }
            let name = field[..<eq], v = String(field[field.index(after: eq)...])
            switch name {
            case "merge": merge = v.isEmpty ? nil : v
            case "compression": compression = Compression(rawValue: v)
            case "bloom": bloomBitsPerKey = Double(v)
            case "blocksize": blockSize = Int(v)
            default: break
            }
        }
    }

    /// `base` (a family's options from `Engine.familyOptions`) with these table options.
    func applied(to base: ColumnFamilyOptions) -> ColumnFamilyOptions {
        var o = base
        if let compression { o.compression = compression }
        if let bloomBitsPerKey { o.bloomBitsPerKey = bloomBitsPerKey }
        if let blockSize { o.blockSize = blockSize }
        return o
    }

    /// The key recording family `name` in the meta family.
    static func key(_ name: String) -> [UInt8] { Array("family:\(name)".utf8) }
}

extension Engine {
    /// Opens the database in `dir` with each family's recorded table options.
    ///
    /// RocksDB takes a family's table options only when it opens (or creates) the family, and
    /// Cairn records them inside the database, so they are known only once it is open. When a
    /// family has options of its own, the database is closed and opened again with them. The
    /// first open's recovery already flushed what the WAL held into table files, so the second
    /// replays nothing (those few files keep the default options until compaction rewrites
    /// them). A read-only open writes no table file, so its families' options do not matter.
    static func openWithRecordedOptions(
        dir: String, options: DatabaseOptions, familyOptions: @escaping @Sendable (String) -> ColumnFamilyOptions
    ) throws -> Database {
        let db = try Database.open(at: dir, options: options, familyOptions: familyOptions)
        guard !options.readOnly, let meta = db.family(named: metaFamilyName) else { return db }
        var recorded: [String: FamilySettings] = [:]
        do {
            for family in db.families where family.name != "default" && !hiddenFamilyNames.contains(family.name) {
                guard let value = try db.get(FamilySettings.key(family.name), in: meta) else { continue }
                let settings = FamilySettings(decoding: value)
                if settings.hasTableOptions { recorded[family.name] = settings }
            }
        } catch {
            try? db.close()
            throw error
        }
        guard !recorded.isEmpty else { return db }
        try db.close()
        return try Database.open(at: dir, options: options) { [recorded] name in
            recorded[name]?.applied(to: familyOptions(name)) ?? familyOptions(name)
        }
    }
}
