import Foundation
import Rocks

/// A directory under /tmp removed when the value goes away.
final class TemporaryDirectory {
    let path: String

    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("rocks-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func sub(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

func b(_ s: String) -> [UInt8] { Array(s.utf8) }
func s(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

/// Small options so tests open fast.
func testOptions() -> DatabaseOptions {
    var o = DatabaseOptions()
    o.blockCacheBytes = 4 << 20
    o.writeBufferBytes = 1 << 20
    return o
}
