extension CairnClientConfiguration {
    /// A connected TCP socket to ``host``:``port`` with this configuration's connect timeout and,
    /// as send/receive timeout, ``commandTimeout``; for tools that stream raw bytes past the pool
    /// (cairn-cli `--pipe`). Nothing is sent on it, not even `AUTH`; the caller owns the
    /// descriptor and closes it.
    ///
    /// - Throws: ``CairnClientError`` with code `.connection` or `.timeout`.
    public func openSocket() throws(CairnClientError) -> Int32 {
        try Socket.connect(host: host, port: port, timeout: connectTimeout, ioTimeout: commandTimeout)
    }
}
