public import Foundation
import Testing

/// The real `cairnd` binary, started on a free port with a fresh data directory.
///
/// The binary comes from `CAIRND` or the package's debug build folder; tests that need it
/// build it first (`swift build` runs before `swift test` in scripts/test). Shared by the server
/// and client test targets.
public final class CairndProcess {
    public let directory: URL
    public let process = Process()
    public private(set) var port = 0
    public let stderr = Pipe()

    public static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["CAIRND"] { return URL(fileURLWithPath: path) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/cairnd")
    }

    /// Starts cairnd on `port` (0: a free one) with data in `directory` (default: a new temporary one).
    /// `binary` is for the harness's own tests (a stand-in that ignores SIGTERM).
    public init(arguments: [String] = [], directory: URL? = nil, port requestedPort: Int = 0, binary: URL = CairndProcess.binary) throws {
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("cairnd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        let portFile = self.directory.appendingPathComponent("port")
        try? FileManager.default.removeItem(at: portFile)
        process.executableURL = binary
        process.arguments = ["--port", String(requestedPort), "--dir", self.directory.appendingPathComponent("data").path,
                             "--port-file", portFile.path, "--log-level", "warning"] + arguments
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
               let p = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                port = p
                return
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        process.terminate()
        throw Failure(message: "cairnd did not start: \(String(decoding: stderr.fileHandleForReading.availableData, as: UTF8.self))")
    }

    /// A free loopback port below the kernel's ephemeral range, for tests that stop a server and
    /// start it again on the same port: a port the kernel hands out itself (`--port 0`) can be
    /// taken meanwhile by another test's server or as some connection's source port.
    public static func freePortOutsideEphemeralRange() throws -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) } ?? []
        let firstEphemeral = range.first ?? 32768
        for _ in 0..<200 {
            let port = Int.random(in: 10_000..<max(10_001, firstEphemeral))
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let bound = withLoopbackAddress(port: port) { bind(fd, $0, $1) }
            close(fd)
            if bound == 0 { return port }
        }
        throw Failure(message: "no free port below \(firstEphemeral)")
    }

    public struct Failure: Error {
        public var message: String
        public init(message: String) { self.message = message }
    }

    /// Sends SIGTERM and waits; returns the exit status and how long the exit took.
    ///
    /// A server still running `deadline` seconds after SIGTERM gets SIGKILL and the test fails
    /// saying so: a server that missed or ignored the signal is a finding, not a hung suite.
    @discardableResult
    public func terminate(deadline: Double = 30) -> (status: Int32, seconds: Double) {
        let start = Date()
        process.terminate()
        while process.isRunning && Date().timeIntervalSince(start) < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            Issue.record("cairnd (pid \(process.processIdentifier), port \(port)) was still running \(deadline) s after SIGTERM; killed")
        }
        process.waitUntilExit()
        return (process.terminationStatus, Date().timeIntervalSince(start))
    }

    /// Sends SIGSTOP and returns once every thread of the server is stopped: `kill` returns
    /// before the signal reaches each thread, and a worker still running answers requests.
    /// A server not stopped `deadline` seconds later fails the test saying so.
    public func stop(deadline: Double = 10) {
        let pid = process.processIdentifier
        kill(pid, SIGSTOP)
        let start = Date()
        while !Self.allThreadsStopped(pid) {
            guard Date().timeIntervalSince(start) < deadline else {
                Issue.record("cairnd (pid \(pid), port \(port)) had threads still running \(deadline) s after SIGSTOP")
                return
            }
            usleep(1_000)
        }
    }

    /// Sends SIGCONT to a server stopped with ``stop(deadline:)``.
    public func resume() { kill(process.processIdentifier, SIGCONT) }

    /// Whether /proc shows every thread of `pid` in state T (stopped).
    static func allThreadsStopped(_ pid: Int32) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return !tasks.isEmpty && tasks.allSatisfy { task in
            // The state follows the command name, which is in parentheses and may hold spaces.
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)) ?? ""
            guard let close = stat.lastIndex(of: ")") else { return false }
            return stat[close...].dropFirst().trimmingPrefix(" ").first == "T"
        }
    }

    deinit {
        if process.isRunning { terminate() }
    }
}

/// Calls `body` with 127.0.0.1:`port` as a socket address and its length.
public func withLoopbackAddress(port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// A blocking TCP connection for protocol-level tests.
public final class RawClient {
    public let fd: Int32

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let rc = withLoopbackAddress(port: port) { [fd] in connect(fd, $0, $1) }
        guard rc == 0 else { throw CairndProcess.Failure(message: "connect failed") }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until `count` bytes arrived or the peer closed; nil on timeout with nothing read.
    public func receive(exactly count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while out.count < count {
            let n = recv(fd, &buffer, min(buffer.count, count - out.count), 0)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    /// Reads whatever arrives until the peer closes or `timeout` passes.
    public func receiveUntilClosed() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }
}
