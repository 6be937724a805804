import Rocks
#if canImport(Glibc)
import Glibc
#endif

// Small POSIX file helpers for the config file, backups and the restore journal.

/// Creates a directory and its parents if missing.
func makeDirectory(_ path: String) throws {
    var built = path.hasPrefix("/") ? "/" : ""
    for part in path.split(separator: "/") {
        built += part + "/"
        if mkdir(built, 0o755) != 0 && errno != EEXIST {
            throw StorageError(code: .ioError, message: "cannot create directory \(built): \(String(cString: strerror(errno)))")
        }
    }
}

/// Writes a file atomically (temporary file, fsync, rename).
func writeFileAtomically(_ path: String, _ text: String) -> Bool {
    let tmp = path + ".tmp"
    guard let f = fopen(tmp, "w") else { return false }
    let bytes = Array(text.utf8)
    let ok = fwrite(bytes, 1, bytes.count, f) == bytes.count && fflush(f) == 0 && fsync(fileno(f)) == 0
    fclose(f)
    return ok && rename(tmp, path) == 0
}

/// The whole file, or nil when it cannot be read.
func readFile(_ path: String) -> [UInt8]? { readWholeFile(path) }

/// Syncs a directory, so renames and unlinks in it survive a crash.
func syncDirectory(_ path: String) -> Bool {
    let fd = open(path, O_RDONLY | O_DIRECTORY)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return fsync(fd) == 0
}

/// Syncs a file's contents to disk.
func syncFile(_ path: String) -> Bool {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return fsync(fd) == 0
}

/// Bytes an unprivileged writer may still use on the file system holding `path`.
func freeBytes(_ path: String) -> UInt64? {
    var st = statvfs()
    guard statvfs(path, &st) == 0 else { return nil }
    return UInt64(st.f_bavail) * UInt64(st.f_frsize)
}

/// Names of the regular files directly in `directory` (not its subdirectories).
func listFiles(_ directory: String) throws -> [String] {
    try listEntries(directory).filter { !$0.isDirectory }.map(\.name)
}

/// Names of everything directly in `directory`.
func listEntryNames(_ directory: String) throws -> [String] {
    try listEntries(directory).map(\.name)
}

private func listEntries(_ directory: String) throws -> [(name: String, isDirectory: Bool)] {
    guard let dir = opendir(directory) else {
        throw StorageError(code: .ioError, message: "cannot list \(directory): \(String(cString: strerror(errno)))")
    }
    defer { closedir(dir) }
    var out: [(String, Bool)] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name == "." || name == ".." { continue }
        var st = stat()
        guard lstat(directory + "/" + name, &st) == 0 else { continue }
        out.append((name, st.st_mode & S_IFMT == S_IFDIR))
    }
    return out
}

/// Deletes `path` and everything under it; a missing path is fine.
func removeTree(_ path: String) {
    if let entries = try? listEntries(path) {
        for e in entries {
            if e.isDirectory { removeTree(path + "/" + e.name) } else { unlink(path + "/" + e.name) }
        }
        rmdir(path)
    } else {
        unlink(path)
    }
}
