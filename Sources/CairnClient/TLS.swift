#if TLS
    // What a TLS configuration is made of (`TLSConfiguration`, `NIOSSLCertificate`,
    // `NIOSSLPrivateKey`, trust roots, `CertificateVerification`) comes with `import CairnClient`:
    // an application that enables the TLS trait does not add swift-nio-ssl to its manifest.
    @_exported public import NIOSSL
    import NIOCore
    import NIOPosix

    extension CairnClientConfiguration {
        /// The TLS context and the server name to verify, or nil without TLS.
        func tlsSetup() throws(CairnClientError) -> (context: NIOSSLContext, serverName: String?)? {
            guard let tls else { return nil }
            do {
                // NIOSSL verifies a host name, never an IP address given as one.
                let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
                return (try NIOSSLContext(configuration: tls), tlsServerName ?? (isAddress ? nil : host))
            } catch {
                throw CairnClientError(.tls, message: "TLS setup failed: \(error)")
            }
        }
    }

    /// The pipeline's TLS handler, first in line: it encrypts what the RESP handler writes.
    func addTLSHandler(_ setup: (context: NIOSSLContext, serverName: String?), to pipeline: ChannelPipeline.SynchronousOperations)
        throws
    {
        try pipeline.addHandler(NIOSSLClientHandler(context: setup.context, serverHostname: setup.serverName))
    }

    /// A failure of TLS itself as a ``CairnClientError/Code/tls`` error that says why (the
    /// certificate is not trusted or names another host, the handshake failed), or nil for
    /// anything else. Connecting again does not help these, so the pool gives up at once
    /// instead of reconnecting until a deadline passes. A connection that ended mid-handshake or
    /// without TLS's close message (a server restart) is a `.connection` failure, retried.
    func tlsFailure(_ error: any Error) -> CairnClientError? {
        switch error {
        case let e as NIOSSLError:
            switch e {
            case .handshakeFailed(.sslError(let stack))
            where stack.allSatisfy({ $0 == .eofDuringHandshake || $0 == .eofDuringAdditionalCertficiateChainValidation }):
                return nil
            case .handshakeFailed(let underlying):
                return CairnClientError(.tls, message: "TLS handshake failed: \(boringSSLReasons(underlying))")
            case .noCertificateToValidate, .unableToValidateCertificate, .cannotMatchULabel, .cannotFindPeerIP:
                return CairnClientError(.tls, message: "TLS handshake failed: \(e)")
            default:
                return nil
            }
        case let e as NIOSSLExtraError:
            // failedToValidateHostname: the certificate does not name the host (tlsServerName).
            return CairnClientError(.tls, message: "TLS handshake failed: \(e)")
        default:
            return nil
        }
    }

    /// BoringSSL's reasons (`CERTIFICATE_VERIFY_FAILED`, `WRONG_VERSION_NUMBER`...) without the
    /// enum cases, codes and source lines NIOSSL's description wraps them in.
    private func boringSSLReasons(_ error: BoringSSLError) -> String {
        guard case .sslError(let stack) = error else { return "\(error)" }
        let text = stack.map(boringSSLReason).joined(separator: ", ")
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return text + " (the server's certificate is not signed by a root in tls.trustRoots)"
        }
        return text
    }

    /// The reason of one entry of BoringSSL's error stack: its description reads
    /// "Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at
    /// <file>:<line>"; NIOSSL's own entries read "Error:  EOF during handshake".
    private func boringSSLReason(_ entry: BoringSSLInternalError) -> String {
        let parts = "\(entry)".split(separator: ":", omittingEmptySubsequences: false)
        if let i = parts.firstIndex(where: { $0 == "OPENSSL_internal" }), i + 1 < parts.count {
            let reason = parts[i + 1]
            return String(reason.split(separator: " ", maxSplits: 1).first ?? reason)
        }
        return parts.dropFirst().joined(separator: ":").trimmingCharacters(of: " ")
    }

    extension String {
        fileprivate func trimmingCharacters(of character: Character) -> String {
            String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
        }
    }
#else
    /// Without the TLS trait there is no TLS layer to fail.
    func tlsFailure(_ error: any Error) -> CairnClientError? { nil }
#endif
