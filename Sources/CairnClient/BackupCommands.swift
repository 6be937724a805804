import RESP

/// One backup, as `BACKUP.LIST` reports it.
public struct BackupEntry: Sendable, Hashable {
    /// The id to pass to ``KeyValueWriter/backupVerify(_:)`` and ``KeyValueWriter/backupRestore(_:)``.
    public var id: Int64
    /// Unix seconds when the backup was taken, when reported.
    public var timestamp: Int64?
    /// Size in bytes, when reported.
    public var size: Int64?
    /// Number of files, when reported.
    public var fileCount: Int64?
    /// Every field as the server sent it (named fields for a map reply, `0`, `1`... for an array).
    public var fields: [String: String]

    /// Reads one entry: a map (a flat `name value` array in RESP2) with `id`, `time`, `size`,
    /// `files`, as cairnd sends it; also `timestamp`/`number_files`, or a positional array
    /// `[id, timestamp, size, files]`.
    init(_ value: RESPValue) throws(CairnClientError) {
        var fields: [String: String] = [:]
        let items = value.array ?? []
        if case .map = value, let pairs = try? value.expectTextPairs() {
            fields = Dictionary(pairs, uniquingKeysWith: { a, _ in a })
        } else if items.count >= 2, items.count % 2 == 0, items[0].string.map({ Int64($0) == nil }) ?? false {
            fields = Dictionary(try value.expectTextPairs(), uniquingKeysWith: { a, _ in a })
        } else if let n = value.int {
            fields = ["id": String(n)]
        } else {
            let names = ["id", "timestamp", "size", "files"]
            for (i, item) in items.enumerated() {
                fields[i < names.count ? names[i] : String(i)] = item.text
            }
        }
        guard let id = fields["id"].flatMap({ Int64($0) }) else { throw .unexpected(value, expected: "a backup entry with an id") }
        self.id = id
        timestamp = (fields["time"] ?? fields["timestamp"]).flatMap { Int64($0) }
        size = fields["size"].flatMap { Int64($0) }
        fileCount = (fields["files"] ?? fields["number_files"]).flatMap { Int64($0) }
        self.fields = fields
    }
}

// Backups (DESIGN.md §3, "backups"). BACKUP.* and CHECKPOINT are Cairn's; BGSAVE and LASTSAVE
// answer as Redis users expect.
extension KeyValueWriter {
    /// `BACKUP.VERIFY id [QUICK]`: checks the backup's files are present with their recorded
    /// sizes and, unless `quick`, checksums.
    /// - Throws: `.server` when the backup is missing or damaged.
    public func backupVerify(_ id: Int64, quick: Bool = false) async throws {
        try await (quick ? call("BACKUP.VERIFY", id, "QUICK") : call("BACKUP.VERIFY", id)).expectOK()
    }
}
