import Dispatch
import Glibc
import RESP
import Synchronization

/// One TCP connection speaking RESP2, with blocking I/O on its own serial queue.
///
/// A request (one command or a pipeline) is written whole and its replies read in order inside
/// one block on `queue`, so concurrent callers never interleave on the wire. A failure in the
/// middle of a request (timeout, reset, bad bytes) closes the connection: it is never reused
/// with an unknown number of replies in flight.
///
/// `@unchecked Sendable`: `parser`, `family` and `buffer` are only touched on `queue`; the
/// descriptor sits in a `Mutex` because `close()` and the cancellation handler run elsewhere.
final class Connection: @unchecked Sendable {
    private let configuration: CairnClientConfiguration
    private let queue = DispatchQueue(label: "cairn.client.connection")
    private let descriptor = Mutex<Int32>(-1)
    // Confined to `queue`.
    private var parser = ValueParser()
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// The column family the server has as this connection's current one (`CF.USE`).
    private var family = "default"
    /// The commands queued since MULTI, until EXEC or DISCARD (nil outside a transaction).
    private var queuedSinceMulti: [Command]? = nil

    init(configuration: CairnClientConfiguration) {
        self.configuration = configuration
    }

    deinit { close() }

    /// Connects and authenticates. Throws `.connection`, `.timeout`, or `.server` (e.g. a wrong password).
    func open() async throws(CairnClientError) {
        let config = configuration
        try await onQueue { () throws(CairnClientError) in
            let fd = try Socket.connect(
                host: config.host, port: config.port, timeout: config.connectTimeout, ioTimeout: config.commandTimeout)
            self.descriptor.withLock { $0 = fd }
            if let password = config.password {
                var auth: Command = [Array("AUTH".utf8)]
                if let user = config.username { auth.append(Array(user.utf8)) }
                auth.append(Array(password.utf8))
                let reply = try self.exchange([auth])[0]
                if case .error(let text) = reply {
                    self.close()
                    throw CairnClientError(serverReply: text)
                }
            }
        }
    }

    /// Sends `commands` in one write and returns their replies in order (server errors as `.error`
    /// values). When `family` is given and differs from the connection's current one, a `CF.USE`
    /// round trip comes first and its error is thrown.
    func execute(_ commands: [Command], family: String?) async throws(CairnClientError) -> [RESPValue] {
        try await onQueue { () throws(CairnClientError) in
            if let family, family != self.family {
                let reply = try self.exchange([command("CF.USE", family)])[0]
                if case .error(let text) = reply { throw CairnClientError(serverReply: text) }
                self.family = family
            }
            let replies = try self.exchange(commands)
            self.track(commands, replies)
            return replies
        }
    }

    /// True when the connection is open and, while idle, nothing arrived on it (the server did not
    /// close it). Call only when no request is running on it.
    var isUsable: Bool {
        descriptor.withLock { fd in fd >= 0 && !Socket.isStale(fd) }
    }

    /// Closes the socket; requests running on it fail with `.connection`. Idempotent.
    func close() {
        descriptor.withLock { fd in
            if fd >= 0 {
                Glibc.shutdown(fd, Int32(SHUT_RDWR))
                Glibc.close(fd)
                fd = -1
            }
        }
    }

    /// Wakes a blocked read or write by shutting the socket down; the request fails and the
    /// connection is closed by it.
    private func interrupt() {
        descriptor.withLock { fd in
            if fd >= 0 { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Runs `work` on the connection's queue and bridges it to async. Cancelling the waiting task
    /// interrupts the connection (it is closed, not left with a reply in flight).
    private func onQueue<T: Sendable>(_ work: @escaping @Sendable () throws(CairnClientError) -> T) async throws(CairnClientError) -> T {
        let result: Result<T, CairnClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async {
                    do throws(CairnClientError) {
                        continuation.resume(returning: .success(try work()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            self.interrupt()
        }
        if case .failure(let error) = result, error.code != .server, Task.isCancelled {
            throw CairnClientError(.cancelled, message: "the request was cancelled; its connection was closed")
        }
        return try result.get()
    }

    /// Writes the requests and reads exactly one reply per request. On queue.
    private func exchange(_ commands: [Command]) throws(CairnClientError) -> [RESPValue] {
        dispatchPrecondition(condition: .onQueue(queue))
        let fd = descriptor.withLock { $0 }
        guard fd >= 0 else { throw CairnClientError(.connection, message: "the connection is closed") }
        var request: [UInt8] = []
        for c in commands { request += RESPWriter.command(c) }
        do throws(CairnClientError) {
            try Socket.write(fd, request)
            var replies: [RESPValue] = []
            replies.reserveCapacity(commands.count)
            while replies.count < commands.count {
                let next: RESPValue?
                do { next = try parser.next() } catch { throw CairnClientError(.protocolViolation, message: error.message) }
                if let next {
                    replies.append(next)
                } else {
                    let n = try Socket.read(fd, into: &buffer)
                    buffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                }
            }
            return replies
        } catch {
            close()
            parser = ValueParser()
            throw error
        }
    }

    /// Follows commands that change the connection's family so `execute(_:family:)` stays right
    /// when a caller sends `CF.USE` or `RESET` through `send`, also inside MULTI: a queued
    /// `CF.USE` changes the family only when EXEC runs it.
    private func track(_ commands: [Command], _ replies: [RESPValue]) {
        for (c, reply) in zip(commands, replies) {
            let name = String(decoding: c[0], as: UTF8.self).uppercased()
            if name == "RESET" {
                queuedSinceMulti = nil
                family = "default"
            } else if let queued = queuedSinceMulti {
                switch name {
                case "EXEC", "DISCARD":
                    queuedSinceMulti = nil
                    if name == "EXEC", case .array(let results) = reply { follow(queued, results) }
                default:
                    if reply == .simpleString("QUEUED") { queuedSinceMulti?.append(c) }
                }
            } else if name == "MULTI" {
                if reply == .simpleString("OK") { queuedSinceMulti = [] }
            } else {
                follow([c], [reply])
            }
        }
    }

    /// Applies the `CF.USE`s among commands that ran (outside MULTI, or by EXEC).
    private func follow(_ commands: [Command], _ replies: [RESPValue]) {
        for (c, reply) in zip(commands, replies) where reply == .simpleString("OK") && c.count == 2 {
            if String(decoding: c[0], as: UTF8.self).uppercased() == "CF.USE" {
                family = String(decoding: c[1], as: UTF8.self)
            }
        }
    }
}
