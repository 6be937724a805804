#if canImport(Glibc)
import Glibc
#endif

/// Thin, checked wrappers over the socket calls the server makes.
enum Socket {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var code: Int32
        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    /// A non-blocking listening socket bound to `host:port` (port 0 picks one).
    /// Returns the descriptor and the port actually bound.
    static func listen(host: String, port: Int, backlog: Int32 = 511) throws(Failure) -> (fd: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST
        var result: UnsafeMutablePointer<addrinfo>? = nil
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let info = result else {
            throw Failure(call: "cannot resolve bind address '\(host)' (\(String(cString: gai_strerror(rc))))", code: 0)
        }
        defer { freeaddrinfo(result) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(call: "socket", code: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let e = errno
            close(fd)
            throw Failure(call: "bind \(host):\(port)", code: e)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let e = errno
            close(fd)
            throw Failure(call: "listen", code: e)
        }
        return (fd, localAddress(fd).port)
    }

    /// Address and port of a socket's local or peer end, as `ip:port` text and the port.
    static func localAddress(_ fd: Int32) -> (text: String, port: Int) { address(fd, peer: false) }
    static func peerAddress(_ fd: Int32) -> (text: String, port: Int) { address(fd, peer: true) }

    private static func address(_ fd: Int32, peer: Bool) -> (text: String, port: Int) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)
            }
        }
        guard rc == 0 else { return ("?:0", 0) }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        _ = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        let h = String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let p = Int(String(decoding: service.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)) ?? 0
        return (storage.ss_family == sa_family_t(AF_INET6) ? "[\(h)]:\(p)" : "\(h):\(p)", p)
    }

    /// Options every client socket gets: no Nagle delay (replies go out at once), keepalive.
    static func configureClient(_ fd: Int32, keepalive: Int) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if keepalive > 0 {
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
            var idle = Int32(keepalive)
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &idle, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}
