/// The merge operator of a column family (`CF.CREATE name MERGE op`).
public enum MergeOperator: String, Sendable, Hashable {
    /// Decimal 64-bit integers added, the text INCR keeps.
    case add
    /// Operands concatenated in arrival order.
    case append
    /// The larger (numerically when both are numbers, otherwise by bytes).
    case max
    /// The smaller.
    case min
}

/// Table options for `CF.CREATE`; nil leaves the server's default.
public struct ColumnFamilyOptions: Sendable, Hashable {
    /// `MERGE add|append|max|min`.
    public var merge: MergeOperator?
    /// `COMPRESSION no|snappy|zlib|lz4|zstd`.
    public var compression: String?
    /// `BLOOM bits` per key.
    public var bloomBitsPerKey: Int?
    /// `BLOCKSIZE bytes`.
    public var blockSize: Int?

    public init(merge: MergeOperator? = nil, compression: String? = nil, bloomBitsPerKey: Int? = nil, blockSize: Int? = nil) {
        self.merge = merge
        self.compression = compression
        self.bloomBitsPerKey = bloomBitsPerKey
        self.blockSize = blockSize
    }

    var arguments: [any RESPArgument] {
        var argv: [any RESPArgument] = []
        if let merge { argv += ["MERGE", merge.rawValue] }
        if let compression { argv += ["COMPRESSION", compression] }
        if let bloomBitsPerKey { argv += ["BLOOM", bloomBitsPerKey] }
        if let blockSize { argv += ["BLOCKSIZE", blockSize] }
        return argv
    }
}

/// What `CF.INFO` reports about a column family.
public struct ColumnFamilyInfo: Sendable, Hashable {
    public var name: String
    /// The merge operator's name, nil when the family has none.
    public var mergeOperator: String?
    /// RocksDB's estimate of the number of keys.
    public var estimatedKeys: Int
    public var sstBytes: Int
    public var memtableBytes: Int
    /// Every field as the server sent it.
    public var fields: [String: String]
}

// Column families (docs/commands.md, "Column families"). Cairn only.
extension CairnClient {
    /// A handle whose commands run in column family `name`, on any pooled connection (the
    /// connection is switched with `CF.USE` first when it is in another family). No request is
    /// made here; a missing family fails the first command with `.server`.
    public func columnFamily(_ name: String) -> ColumnFamily {
        ColumnFamily(name: name, route: Route(pool: route.pool, family: name, pinned: nil))
    }

    /// `CF.CREATE name [MERGE op] [COMPRESSION c] [BLOOM bits] [BLOCKSIZE bytes]`, returning its handle.
    @discardableResult
    public func createColumnFamily(_ name: String, options: ColumnFamilyOptions = .init()) async throws -> ColumnFamily {
        try await send(["CF.CREATE", name] + options.arguments).expectOK()
        return columnFamily(name)
    }

    /// `CF.DROP name`: drops the family and all its keys.
    public func dropColumnFamily(_ name: String) async throws {
        try await call("CF.DROP", name).expectOK()
    }

    /// `CF.LIST`: the names of all column families.
    public func columnFamilies() async throws -> [String] {
        try await call("CF.LIST").expectArray().map { item throws(CairnClientError) in try item.expectString() }
    }

    /// `CF.INFO name`.
    public func columnFamilyInfo(_ name: String) async throws -> ColumnFamilyInfo {
        try await ColumnFamilyInfo(name, via: self)
    }
}

extension ColumnFamilyInfo {
    init(_ name: String, via sender: some CommandSender) async throws {
        let pairs = try await sender.call("CF.INFO", name).expectTextPairs()
        let fields = Dictionary(pairs, uniquingKeysWith: { a, _ in a })
        self.init(
            name: fields["name"] ?? name,
            mergeOperator: fields["merge"].flatMap { $0.isEmpty ? nil : $0 },
            estimatedKeys: Int(fields["estimate_keys"] ?? "") ?? 0,
            sstBytes: Int(fields["sst_bytes"] ?? "") ?? 0,
            memtableBytes: Int(fields["memtable_bytes"] ?? "") ?? 0,
            fields: fields
        )
    }
}

