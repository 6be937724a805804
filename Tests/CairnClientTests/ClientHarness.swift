import CairnClient
import CairnTestSupport
import Foundation

/// Starts a fresh cairnd, hands a client for it to `body`, then closes both.
func withCairnd(
    arguments: [String] = [], configure: (inout CairnClientConfiguration) -> Void = { _ in },
    _ body: (CairnClient, CairndProcess) async throws -> Void
) async throws {
    let server = try CairndProcess(arguments: arguments)
    var config = CairnClientConfiguration(port: server.port)
    configure(&config)
    let client = CairnClient(configuration: config)
    defer {
        client.close()
        server.terminate()
    }
    try await body(client, server)
}

/// The value of a field of `INFO rocksdb`, read on a connection of its own.
func rocksdbInfo(_ client: CairnClient, _ field: String) async throws -> Int? {
    try await client.info("rocksdb").integer(field, in: "rocksdb")
}

/// Polls `condition` every 20 ms for up to `seconds`; true once it holds.
func eventually(seconds: Double = 3, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

extension Array where Element == UInt8 {
    var text: String { String(decoding: self, as: UTF8.self) }
}

struct TimedOut: Error {}

/// `body`'s result, or `TimedOut` after `seconds` (a hang becomes a failure, not a stuck suite).
/// Returns at the deadline even when `body` ignores cancellation (awaiting another task's
/// value does): a task group would wait for it at its end, so `body` runs in a task of its own,
/// cancelled and left behind when time is up.
func withTimeout<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = Locked<Result<T, any Error>?>(nil)
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        @Sendable func finish(_ result: Result<T, any Error>) {
            let first = outcome.withLock { current -> Bool in
                guard current == nil else { return false }
                current = result
                return true
            }
            if first { continuation.resume(with: result) }
        }
        let work = Task {
            do { finish(.success(try await body())) } catch { finish(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            finish(.failure(TimedOut()))
            work.cancel()
        }
    }
}

/// Runs `scripts/NAME --check` (a generated file's check); its exit status and what it printed on
/// stderr, which says what is out of date.
func runCheckScript(_ name: String) throws -> (status: Int32, message: String) {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let check = Process()
    check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    check.arguments = ["python3", root.appendingPathComponent("scripts/\(name)").path, "--check"]
    let errors = Pipe()
    check.standardError = errors
    check.standardOutput = FileHandle.nullDevice
    try check.run()
    check.waitUntilExit()
    return (check.terminationStatus, String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
}

/// Runs `cairn-spec --check` (the generator of TypedCommands.generated.swift, built with the
/// tests next to their executable); its exit status and what it printed, which says what is out
/// of date. It is run directly: `scripts/command-spec` would start a build inside this one.
func runSpecCheck() throws -> (status: Int32, message: String) {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let tool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("cairn-spec")
    guard FileManager.default.isExecutableFile(atPath: tool.path) else {
        return (-1, "\(tool.path) is not built: swift build --build-tests builds it")
    }
    let check = Process()
    check.executableURL = tool
    check.arguments = ["--check", "--root", root.path]
    let output = Pipe()
    check.standardError = output
    check.standardOutput = output
    try check.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    check.waitUntilExit()
    return (check.terminationStatus, text)
}
