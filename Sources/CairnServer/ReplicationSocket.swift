import RESP
#if canImport(Glibc)
import Glibc
#endif

/// Blocking socket I/O for the replication links, which each run on a thread of their own
/// (a slow peer holds only its link, never a worker).
struct ReplicationSocket {
    let fd: Int32
    /// Handshake bytes not yet taken as lines.
    private var buffer: [UInt8] = []
    private var framing = false
    private var parser = RequestParser(limits: RESPLimits())
    private var scratch = [UInt8](repeating: 0, count: 256 * 1024)

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(fd: Int32) { self.fd = fd }

    /// Connects to `host:port` within `timeoutSeconds`; a blocking socket.
    static func connect(host: String, port: Int, timeoutSeconds: Int) throws(Failure) -> ReplicationSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>? = nil
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let info = result else { throw Failure(description: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))") }
        defer { freeaddrinfo(result) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else {
                let e = errno
                Glibc.close(fd)
                throw Failure(description: "connecting to \(host):\(port): \(String(cString: strerror(e)))")
            }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard poll(&p, 1, Int32(timeoutSeconds * 1000)) == 1,
                  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else {
                Glibc.close(fd)
                throw Failure(description: "connecting to \(host):\(port): \(error != 0 ? String(cString: strerror(error)) : "timed out")")
            }
        }
        let s = ReplicationSocket(fd: fd)
        s.makeBlocking(receiveTimeoutMilliseconds: 1000, sendTimeoutSeconds: timeoutSeconds)
        Socket.configureClient(fd, keepalive: 60)
        return s
    }

    /// Blocking, with a receive timeout (so the owner can check whether to stop) and a send
    /// timeout (a peer that stops reading does not hold the link forever).
    func makeBlocking(receiveTimeoutMilliseconds: Int, sendTimeoutSeconds: Int) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        var r = timeval(tv_sec: receiveTimeoutMilliseconds / 1000, tv_usec: (receiveTimeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &r, socklen_t(MemoryLayout<timeval>.size))
        var s = timeval(tv_sec: sendTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &s, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { Glibc.close(fd) }

    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8]) throws(Failure) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n } else if n < 0 && errno == EINTR { continue } else {
                throw Failure(description: n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? "the peer stopped reading (send timed out)" : "send: \(String(cString: strerror(errno)))")
            }
        }
    }

    func send(_ text: String) throws(Failure) { try send(Array(text.utf8)) }

    /// Reads what arrives within the receive timeout (`wait: false`: only what is already
    /// there): into the line buffer during the handshake, into the frame parser after
    /// `startFrames`. False when nothing came.
    private mutating func fill(wait: Bool = true) throws(Failure) -> Bool {
        let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, wait ? 0 : Int32(MSG_DONTWAIT)) }
        if n > 0 {
            if framing {
                scratch.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            } else {
                buffer += scratch[0..<n]
            }
            return true
        }
        if n == 0 { throw Failure(description: "the peer closed the connection") }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return false }
        throw Failure(description: "recv: \(String(cString: strerror(errno)))")
    }

    /// One `\r\n`-terminated line (a handshake reply), waiting up to `timeoutSeconds`.
    mutating func readLine(timeoutSeconds: Int) throws(Failure) -> String {
        var waited = 0
        while true {
            if let line = takeLine() { return line }
            if !(try fill()) {
                waited += 1
                if waited >= timeoutSeconds { throw Failure(description: "no reply within \(timeoutSeconds) s") }
            }
        }
    }

    private mutating func takeLine() -> String? {
        guard let end = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = buffer[..<end].last == UInt8(ascii: "\r") ? Array(buffer[..<(end - 1)]) : Array(buffer[..<end])
        buffer.removeFirst(end + 1)
        return String(decoding: line, as: UTF8.self)
    }

    /// The handshake is over: what follows are frames.
    mutating func startFrames() {
        framing = true
        parser.append(buffer)
        buffer = []
    }

    /// The next frame: one already buffered, else what arrives within the receive timeout
    /// (nil when nothing complete came). `wait: false` never blocks.
    mutating func nextFrame(wait: Bool = true) throws(Failure) -> [[UInt8]]? {
        do {
            if let frame = try parser.next() { return frame }
            guard try fill(wait: wait) else { return nil }
            return try parser.next()
        } catch let error as RESPProtocolError {
            throw Failure(description: "bad frame: \(error.message)")
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure(description: "\(error)")
        }
    }

    /// Whether a complete frame is already buffered (without reading the socket).
    var bufferedBytes: Int { parser.bufferedByteCount }
}
