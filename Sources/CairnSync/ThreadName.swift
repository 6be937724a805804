#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` with the calling thread named `name` (at most 15 bytes, Linux's limit), then
/// gives the thread its old name back: a replication link holds a Dispatch thread for as long
/// as it lives, and the name lets `top -H` and `/proc/PID/task/*/stat` (scripts/bench-replication)
/// show what that thread costs (the server's background threads and the engine's writer thread
/// are named the same way). Through `/proc/thread-self/comm`: Glibc's module does not export
/// `pthread_setname_np` to Swift.
public func withThreadName<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
    let old = threadName()
    setThreadName(name)
    defer { if let old { setThreadName(old) } }
    return try body()
}

private func threadName() -> String? {
    let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 32)
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return nil }
    return String(decoding: buffer[0..<n], as: UTF8.self).trimmingSuffix("\n")
}

private func setThreadName(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
