#if canImport(Glibc)
import Glibc
#endif

/// A backup's meta file (`meta/<id>`) is a few header lines, then one line per file:
/// `<path> crc32 <decimal checksum>`.
extension BackupEngine {
    /// Re-reads every file of backup `id` and checks its CRC32C against the meta file's (the
    /// C API's verify checks sizes only). Throws `.corruption` naming the first file that differs.
    public func verifyChecksums(_ id: UInt32) throws {
        let backupDirectory = directory
        let metaPath = "\(backupDirectory)/meta/\(id)"
        guard let meta = readWholeFile(metaPath) else { throw StorageError(code: .ioError, message: "cannot read \(metaPath)") }
        let text = String(decoding: meta, as: UTF8.self)
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 3, words[1] == "crc32", let expected = UInt32(words[2]) else { continue }
            let path = "\(backupDirectory)/\(words[0])"
            guard let bytes = readWholeFile(path) else { throw StorageError(code: .ioError, message: "cannot read \(path)") }
            let actual = CRC32C.checksum(bytes)
            guard actual == expected else {
                throw StorageError(code: .corruption, message: "\(path): checksum \(actual), expected \(expected)")
            }
        }
    }
}

/// CRC-32C (Castagnoli), as RocksDB's backup engine records it. Table-driven, no hardware path:
/// it runs only when verifying backups.
enum CRC32C {
    static let table: [UInt32] = (0..<256).map { i in
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        return c
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        bytes.withUnsafeBufferPointer { buffer in
            for b in buffer { crc = table[Int((crc ^ UInt32(b)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

/// The whole file, or nil when it cannot be read (shared with CairnEngine's file helpers).
package func readWholeFile(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = fread(&chunk, 1, chunk.count, f)
        if n > 0 { out.append(contentsOf: chunk[0..<n]) }
        if n < chunk.count { break }
    }
    return ferror(f) == 0 ? out : nil
}
