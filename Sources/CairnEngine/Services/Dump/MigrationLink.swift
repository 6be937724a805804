#if canImport(Glibc)
import Glibc
#endif
import RESP

/// MIGRATE's connection to the target server: one blocking TCP socket, opened per MIGRATE and
/// closed after it, every connect, send and receive bounded by the command's timeout
/// (SO_SNDTIMEO / SO_RCVTIMEO, and a poll for the connect). MIGRATE runs on the long-command
/// queue (`Command.Flags.long`), so the wait never holds a connection's worker; it is the one
/// place the engine opens a socket, kept here because it is a client of another server, not
/// part of serving this one. Redis caches these connections for 10 seconds; Cairn does not.
final class MigrationLink {
    /// `connect`: no answer within the timeout (or no such host); a refused connection shows
    /// as `write`, as it does in Redis (its connect returns at once, the first write fails).
    enum Failure: Error {
        case connect, write, read
    }

    private let fd: Int32
    private var parser = ValueParser()

    init(host: String, port: Int, timeoutMilliseconds: Int) throws(Failure) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>? = nil
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else { throw .connect }
        defer { freeaddrinfo(result) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .connect }
        // Connect without blocking, wait at most the timeout, then go back to blocking I/O.
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else { close(fd); throw .write }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&p, 1, Int32(clamping: timeoutMilliseconds)) == 1 else { close(fd); throw .connect }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else { close(fd); throw .write }
        }
        _ = fcntl(fd, F_SETFL, flags)
        var tv = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sends requests (already RESP-encoded), all at once: a pipeline.
    func send(_ bytes: [UInt8]) throws(Failure) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .write }
            sent += n
        }
    }

    /// The next reply.
    func reply() throws(Failure) -> RESPValue {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            do {
                if let value = try parser.next() { return value }
            } catch {
                throw .read
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .read }
            parser.append(Array(chunk[..<n]))
        }
    }
}
