public import Foundation

/// A throwaway `redis-server` on a free port with persistence off, for compatibility tests.
/// `nil` from ``start()`` when redis-server is not installed.
public final class RedisProcess {
    public let process = Process()
    public let port: Int

    /// The redis-server binary on PATH, if any.
    public static var binary: URL? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let url = URL(fileURLWithPath: String(dir)).appendingPathComponent("redis-server")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    /// Starts redis-server, or returns nil when it is not installed.
    public static func start() throws -> RedisProcess? {
        guard let binary else { return nil }
        return try RedisProcess(binary: binary)
    }

    private init(binary: URL) throws {
        port = try RedisProcess.freePort()
        process.executableURL = binary
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? RawClient(port: port)) != nil { return }
            usleep(20_000)
        }
        process.terminate()
        throw CairndProcess.Failure(message: "redis-server did not start on port \(port)")
    }

    /// A port nobody listens on right now: bind to port 0, read it, close.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw CairndProcess.Failure(message: "no free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Stops the server and waits for it: `SHUTDOWN NOSAVE`, then SIGKILL if it is still up a
    /// moment later. (SIGTERM is not enough: a child of the test runner inherits a signal mask
    /// that blocks it, and redis-server installs a plain handler.)
    public func terminate() {
        guard process.isRunning else { return }
        if let client = try? RawClient(port: port) { client.send("SHUTDOWN NOSAVE\r\n") }
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { terminate() }
}
