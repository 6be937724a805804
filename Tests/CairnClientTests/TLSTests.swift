// Only with the package's TLS trait (`swift test --traits TLS`, as scripts/test runs it): NIOSSL's
// types come from CairnClient's re-export, as in an application that enables the trait.
#if TLS
import CairnClient
import CairnTestSupport
import Foundation
import Testing

/// TLS through NIOSSL against `redis-server --tls-port` (Debian's redis is built with TLS),
/// with a self-signed certificate for `localhost` made by `openssl` here (no IP entry: NIOSSL
/// accepts a certificate whose IP entry matches the peer whatever name it was asked to check).
@Suite(.serialized, .enabled(if: RedisProcess.binary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "redis-server or openssl is missing"))
struct TLSTests {
    /// A TLS-only redis-server with a fresh self-signed certificate; stopped by ``stop()``.
    final class TLSRedis {
        let directory: URL
        let port: Int
        let process = Process()
        var certificate: String { directory.appendingPathComponent("cert.pem").path }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.currentDirectoryURL = directory
            openssl.arguments = [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
            ]
            openssl.standardOutput = FileHandle.nullDevice
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            guard openssl.terminationStatus == 0 else { throw CairndProcess.Failure(message: "openssl failed") }
            port = try RedisProcess.freePort()
            process.executableURL = RedisProcess.binary
            process.currentDirectoryURL = directory
            process.arguments = [
                "--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--tls-cert-file", "cert.pem",
                "--tls-key-file", "key.pem", "--tls-ca-cert-file", "cert.pem", "--tls-auth-clients", "no", "--save", "",
                "--appendonly", "no",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if (try? RawClient(port: port)) != nil { return }
                usleep(20_000)
            }
            stop()
            throw CairndProcess.Failure(message: "redis-server with TLS did not start on port \(port)")
        }

        func configuration(trusting: Bool = true) throws -> CairnClientConfiguration {
            var config = CairnClientConfiguration(port: port)
            var tls = TLSConfiguration.makeClientConfiguration()
            if trusting { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate)) }
            config.tls = tls
            config.tlsServerName = "localhost"
            config.reconnectDeadline = .milliseconds(200)
            // TLS handshakes are slow on a busy machine (the whole test run shares two cores).
            config.requestDeadline = .seconds(20)
            return config
        }

        func stop() {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func commandsRunOverTLS() async throws {
        let redis = try TLSRedis()
        defer { redis.stop() }
        let client = CairnClient(configuration: try redis.configuration())
        defer { client.close() }
        #expect(try await client.set("secret", "sauce"))
        #expect(try await client.getString("secret") == "sauce")
        // Many requests pipelined over the encrypted connections.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { _ = try await client.incr("count") } }
            try await group.waitForAll()
        }
        #expect(try await client.getString("count") == "200")
        // The server sees a TLS connection: its port is the TLS port and plain TCP is off.
        #expect(try await client.configGet("tls-port")["tls-port"] == String(redis.port))
    }

    /// A certificate the client does not trust, or one for another name, fails the request
    /// with `.tls` and the reason, at once: the pool does not reconnect for the reconnect
    /// deadline and the request does not wait for its own (issue #41: it took the whole
    /// deadline and said `timeout: no connection within the request deadline`).
    @Test func anUntrustedCertificateFailsAtOnceWithTheReason() async throws {
        let redis = try TLSRedis()
        defer { redis.stop() }
        var untrustingConfig = try redis.configuration(trusting: false)
        // The defaults, which a retried handshake would have spent in full.
        untrustingConfig.reconnectDeadline = .seconds(10)
        untrustingConfig.requestDeadline = .seconds(30)
        let untrusting = CairnClient(configuration: untrustingConfig)
        defer { untrusting.close() }
        var start = ContinuousClock.now
        let refused = await #expect(throws: CairnClientError.self) { try await untrusting.ping() }
        var elapsed = ContinuousClock.now - start
        #expect(refused?.code == .tls, "\(String(describing: refused))")
        #expect(refused?.message.contains("CERTIFICATE_VERIFY_FAILED") == true, "\(String(describing: refused))")
        #expect(elapsed < .seconds(1), "\(elapsed)")

        var wrongName = try redis.configuration()
        wrongName.tlsServerName = "example.org"
        wrongName.reconnectDeadline = .seconds(10)
        let misnamed = CairnClient(configuration: wrongName)
        defer { misnamed.close() }
        start = ContinuousClock.now
        let misnamedError = await #expect(throws: CairnClientError.self) { try await misnamed.ping() }
        elapsed = ContinuousClock.now - start
        #expect(misnamedError?.code == .tls, "\(String(describing: misnamedError))")
        #expect(misnamedError?.message.contains("example.org") == true, "\(String(describing: misnamedError))")
        #expect(elapsed < .seconds(1), "\(elapsed)")

        // A subscription's connection fails the same way.
        start = ContinuousClock.now
        let subscribeError = await #expect(throws: CairnClientError.self) { _ = try await untrusting.subscribe(to: ["news"]) }
        #expect(subscribeError?.code == .tls, "\(String(describing: subscribeError))")
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test func plainTCPToATLSPortIsRefused() async throws {
        let redis = try TLSRedis()
        defer { redis.stop() }
        var plainConfig = CairnClientConfiguration(port: redis.port)
        plainConfig.reconnectDeadline = .milliseconds(200)
        plainConfig.requestDeadline = .seconds(3)
        let plain = CairnClient(configuration: plainConfig)
        defer { plain.close() }
        await #expect(throws: CairnClientError.self) { try await plain.ping() }
    }
}
#endif
