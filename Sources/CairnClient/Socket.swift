#if canImport(Glibc)
import Glibc

/// A blocking POSIX TCP connect for tools that stream raw bytes past the pool
/// (``CairnClientConfiguration/openSocket()``). The client's own connections run on SwiftNIO.
enum Socket {
    /// Opens a TCP connection to `host:port`, trying each resolved address, waiting at most
    /// `timeout` seconds for each; then sets blocking mode, `TCP_NODELAY` and send/receive timeouts.
    static func connect(host: String, port: Int, timeout: Double, ioTimeout: Double) throws(CairnClientError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw CairnClientError(.connection, message: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = CairnClientError(.connection, message: "no address for \(host)")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            do {
                return try connect(info.pointee, timeout: timeout, ioTimeout: ioTimeout, name: "\(host):\(port)")
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    private static func connect(_ info: addrinfo, timeout: Double, ioTimeout: Double, name: String) throws(CairnClientError) -> Int32 {
        let fd = socket(info.ai_family, info.ai_socktype, info.ai_protocol)
        guard fd >= 0 else { throw failure("socket", name) }
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else {
                let error = failure("connect to", name)
                Glibc.close(fd)
                throw error
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&pfd, 1, Int32(timeout * 1000))
            if ready == 0 {
                Glibc.close(fd)
                throw CairnClientError(.timeout, message: "connecting to \(name) took longer than \(timeout) s")
            }
            var soError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
            if ready < 0 || soError != 0 {
                if soError != 0 { errno = soError }
                let error = failure("connect to", name)
                Glibc.close(fd)
                throw error
            }
        }
        if isConnectedToItself(fd) {
            Glibc.close(fd)
            throw CairnClientError(.connection, message: "connect to \(name) failed: nothing listens there (the socket connected to itself)")
        }
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: Int(ioTimeout), tv_usec: Int((ioTimeout - ioTimeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// True when TCP's simultaneous open joined the socket to itself: with nothing listening on a
    /// local port in the ephemeral range, the kernel can pick that very port as the source. The
    /// socket would then echo every request back and keep the server from binding its port.
    static func isConnectedToItself(_ fd: Int32) -> Bool {
        var local = sockaddr_storage(), peer = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size), peerLength = localLength
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
        }
        let peered = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) }
        }
        guard named == 0, peered == 0, localLength == peerLength else { return false }
        return withUnsafeBytes(of: &local) { l in
            withUnsafeBytes(of: &peer) { p in l.prefix(Int(localLength)).elementsEqual(p.prefix(Int(peerLength))) }
        }
    }

    private static func failure(_ what: String, _ name: String) -> CairnClientError {
        CairnClientError(.connection, message: "\(what) \(name) failed: \(String(cString: strerror(errno)))")
    }
}
#endif
