import Foundation
import RESP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a `--pipe` run did.
public struct PipeSummary: Sendable, Equatable {
    /// Replies read for the input's commands (one per command).
    public var replies: Int
    /// How many of them were errors.
    public var errors: Int
    /// Bytes of input sent.
    public var bytes: Int
    /// Wall time from the first byte sent to the last reply, in seconds.
    public var seconds: Double

    /// `sent 1000000 commands (45.2 MB), 0 errors, 2.31 s, 432900 commands/s`.
    public var description: String {
        let rate = seconds > 0 ? Int(Double(replies) / seconds) : replies
        return "sent \(replies) commands (\(PipeLoader.size(bytes))), \(errors) errors, "
            + String(format: "%.2f s, %d commands/s", seconds, rate)
    }
}

/// Bulk loading as redis-cli `--pipe` does it: the input (RESP or inline commands, sent as they
/// are) streams to the socket from the calling thread while a reader thread reads and counts the
/// replies concurrently, so there is never a round trip per command. After the input an
/// `ECHO <random>` is sent; its reply marks the end.
///
/// `@unchecked Sendable`: the counters are atomics; `firstErrors` sits in a `Mutex`; the rest is
/// set in `init` and never changes.
public final class PipeLoader: @unchecked Sendable {
    private let socket: Int32
    private let input: Int32
    private let prelude: [[[UInt8]]]
    private let progress: Bool
    private let sent = Atomic<Int>(0)
    private let replies = Atomic<Int>(0)
    private let errors = Atomic<Int>(0)
    private let failure = Mutex<String?>(nil)
    private let marker: [UInt8]

    /// - Parameters:
    ///   - socket: a connected socket (owned by the caller); its receive timeout bounds the wait
    ///     for each reply.
    ///   - input: the descriptor to read commands from (standard input).
    ///   - prelude: commands sent first whose replies are not counted (`AUTH`, `CF.USE`); an
    ///     error reply to one of them stops the load.
    ///   - progress: draw a progress line on standard error.
    public init(socket: Int32, input: Int32 = 0, prelude: [[[UInt8]]] = [], progress: Bool) {
        self.socket = socket
        self.input = input
        self.prelude = prelude
        self.progress = progress
        var random = SystemRandomNumberGenerator()
        marker = Array((0..<20).map { _ in "0123456789abcdef".randomElement(using: &random)! }.map { UInt8($0.asciiValue!) })
    }

    /// Sends everything and waits for every reply. Error replies are counted; the first ten are
    /// printed to standard error.
    /// - Throws: ``PipeError`` when the connection fails, a reply is late or a prelude command is refused.
    public func run() throws(PipeError) -> PipeSummary {
        let total = Self.inputSize(input)
        let start = ContinuousClock.now
        let done = DispatchSemaphore(value: 0)
        let reader = Thread { [self] in
            readReplies()
            done.signal()
        }
        reader.stackSize = 1 << 20
        reader.start()

        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        var lastDraw = ContinuousClock.now
        do throws(PipeError) {
            var head: [UInt8] = []
            for c in prelude { head += RESPWriter.command(c) }
            try write(head)
            while failure.withLock({ $0 }) == nil {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress!, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 { throw PipeError("cannot read the input: \(String(cString: strerror(errno)))") }
                if n == 0 { break }
                try write(chunk[0..<n])
                sent.add(n, ordering: .relaxed)
                if progress, ContinuousClock.now - lastDraw > .milliseconds(100) {
                    draw(total: total, start: start)
                    lastDraw = ContinuousClock.now
                }
            }
            try write(RESPWriter.command([Array("ECHO".utf8), marker]))
        } catch {
            failure.withLock { if $0 == nil { $0 = error.message } }
            Glibc.shutdown(socket, Int32(SHUT_RDWR))
        }
        while done.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            if progress { draw(total: total, start: start) }
        }
        if progress {
            draw(total: total, start: start)
            FileHandle.standardError.write("\n".data(using: .utf8)!)
        }
        if let message = failure.withLock({ $0 }) { throw PipeError(message) }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return PipeSummary(replies: replies.load(ordering: .relaxed), errors: errors.load(ordering: .relaxed),
                           bytes: sent.load(ordering: .relaxed), seconds: seconds)
    }

    /// The reader thread: counts replies until the marker's echo, or records why it stopped.
    private func readReplies() {
        var parser = ValueParser()
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var preludeLeft = prelude.count
        while true {
            do {
                while let value = try parser.next() {
                    if preludeLeft > 0 {
                        preludeLeft -= 1
                        if case .error(let text) = value {
                            failure.withLock { $0 = $0 ?? "refused before loading: \(text)" }
                            Glibc.shutdown(socket, Int32(SHUT_RDWR))
                            return
                        }
                        continue
                    }
                    if value == .bulkString(marker) { return }
                    if case .error(let text) = value {
                        if errors.add(1, ordering: .relaxed).newValue <= 10 {
                            FileHandle.standardError.write("(error) \(text)\n".data(using: .utf8)!)
                        }
                    }
                    replies.add(1, ordering: .relaxed)
                }
            } catch {
                failure.withLock { $0 = $0 ?? "bad reply from the server: \(error.message)" }
                return
            }
            let n = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress!, $0.count, 0) }
            if n > 0 {
                buffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                let why = n == 0 ? "the server closed the connection"
                    : (errno == EAGAIN || errno == EWOULDBLOCK) ? "no reply from the server in time"
                    : "cannot read from the server: \(String(cString: strerror(errno)))"
                failure.withLock { $0 = $0 ?? why }
                return
            }
        }
    }

    private func write(_ bytes: some Collection<UInt8>) throws(PipeError) {
        let data = Array(bytes)
        var offset = 0
        while offset < data.count {
            let n = data.withUnsafeBytes { send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                if let reason = failure.withLock({ $0 }) { throw PipeError(reason) }
                throw PipeError(errno == EAGAIN || errno == EWOULDBLOCK ? "the server stopped reading (timeout)"
                                : "cannot send to the server: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// `[=====>    ]  48%  21.3 MB  480000 replies  410000/s`, or without the bar when the
    /// input's size is unknown (a pipe).
    private func draw(total: Int?, start: ContinuousClock.Instant) {
        let bytes = sent.load(ordering: .relaxed)
        let count = replies.load(ordering: .relaxed)
        let elapsed = ContinuousClock.now - start
        let seconds = max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        var line = "\r"
        if let total, total > 0 {
            let fraction = min(1, Double(bytes) / Double(total))
            let filled = Int(fraction * 30)
            line += "[" + String(repeating: "=", count: filled) + String(repeating: " ", count: 30 - filled) + "] "
            line += String(format: "%3d%%  ", Int(fraction * 100))
        }
        line += "\(Self.size(bytes))  \(count) replies  \(Int(Double(count) / seconds))/s\u{1b}[K"
        FileHandle.standardError.write(line.data(using: .utf8)!)
    }

    /// The size of a regular file behind `fd`, nil for pipes and terminals.
    private static func inputSize(_ fd: Int32) -> Int? {
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(st.st_size)
    }

    static func size(_ bytes: Int) -> String {
        bytes < 1 << 20 ? String(format: "%.1f KB", Double(bytes) / 1024) : String(format: "%.1f MB", Double(bytes) / 1048576)
    }
}

/// Why a `--pipe` load stopped.
public struct PipeError: Error, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}
