#if canImport(Glibc)
extension CairnClientConfiguration {
    /// A connected TCP socket to ``host``:``port`` with this configuration's connect timeout and,
    /// as send/receive timeout, ``requestDeadline``; for tools that stream raw bytes past the pool
    /// (cairn-cli `--pipe`). Nothing is sent on it, not even `AUTH`; the caller owns the
    /// descriptor and closes it.
    ///
    /// - Throws: ``CairnClientError`` with code `.connection` or `.timeout`.
    public func openSocket() throws(CairnClientError) -> Int32 {
        try Socket.connect(host: host, port: port, timeout: connectTimeout.seconds, ioTimeout: requestDeadline.seconds)
    }
}
#endif

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}
