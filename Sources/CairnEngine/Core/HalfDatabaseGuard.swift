import Rocks
#if canImport(Glibc)
import Glibc
#endif

extension Engine {
    /// RocksDB creates a new, empty database where it finds no `CURRENT` file. A directory
    /// holding other database files but no `CURRENT` lost it (a damaged disk, files removed by
    /// hand, an interrupted restore of an earlier version): opening it would serve nothing as if the data had never been, so refuse instead.
    static func refuseHalfADatabase(_ dir: String) throws {
        var st = stat()
        guard stat(dir + "/CURRENT", &st) != 0 else { return }
        // Files that hold data: tables, blobs and non-empty WALs (a crash while RocksDB first
        // created the directory can leave IDENTITY or an empty WAL, which hold nothing).
        let leftovers = ((try? listFiles(dir)) ?? []).filter { name in
            guard RestoreJournal.isRocksDBFile(name) else { return false }
            if name.hasSuffix(".sst") || name.hasSuffix(".blob") { return true }
            return name.hasSuffix(".log") && stat(dir + "/" + name, &st) == 0 && st.st_size > 0
        }
        guard leftovers.isEmpty else {
            throw StorageError(
                code: .corruption,
                message: "\(dir) holds database files (\(leftovers.sorted().prefix(3).joined(separator: ", "))...) but no CURRENT file, so it is not a whole database; "
                    + "restore a backup with `cairnd restore`, or move the files away to start empty")
        }
    }
}
