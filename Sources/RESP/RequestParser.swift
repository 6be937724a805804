/// Incremental parser of client requests: multibulk (`*2\r\n$3\r\nGET\r\n$1\r\na\r\n`) and
/// inline lines (`GET a` ending in CRLF or LF) with redis-cli's quoting.
///
/// Feed bytes with `append`, then call `next()` until it returns nil ("need more bytes").
/// It never rescans a partly received bulk and never allocates for an announced length before
/// the bytes arrive. After it throws, the parser is unusable and the connection should close.
/// Error texts are Redis's (networking.c).
public struct RequestParser: Sendable {
    public let limits: RESPLimits
    private var buffer = ByteQueue()
    /// Arguments of the multibulk being read, nil between requests.
    private var args: [[UInt8]]? = nil
    private var remaining = 0
    /// Length of the bulk being read, or -1 when its `$` header is next.
    private var bulkLength = -1

    /// The client has not authenticated yet: multibulk counts and bulk lengths are held to
    /// `limits.maxUnauthenticated...` (Redis's pre-AUTH limits), so a stranger cannot make the
    /// server buffer a large request. The connection sets it before each `next()`.
    public var unauthenticated = false

    public init(limits: RESPLimits = .init()) { self.limits = limits }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(bytes) }
    public mutating func append(_ bytes: [UInt8]) { buffer.append(bytes) }

    /// Bytes received and not yet returned as part of a request.
    public var bufferedByteCount: Int { buffer.count }

    public mutating func next() throws(RESPProtocolError) -> [[UInt8]]? {
        while true {
            if args == nil {
                guard !buffer.isEmpty else {
                    buffer.compact()
                    return nil
                }
                if buffer.storage[buffer.start] != UInt8(ascii: "*") {
                    guard let line = try inlineRequest() else { return nil }
                    if line.isEmpty { continue }
                    buffer.compact()
                    return line
                }
                guard try multibulkHeader() else { return nil }
                if args == nil { continue }  // *0 or *-1: nothing to run
            }
            while remaining > 0 {
                if bulkLength < 0 {
                    guard try bulkHeader() else { return nil }
                }
                guard buffer.count >= bulkLength + 2 else { return nil }
                let s = buffer.start
                args!.append(Array(buffer.storage[s..<(s + bulkLength)]))
                buffer.start = s + bulkLength + 2
                bulkLength = -1
                remaining -= 1
            }
            let request = args!
            args = nil
            buffer.compact()
            return request
        }
    }

    /// Reads `*<count>\r\n`. False when the line is incomplete.
    private mutating func multibulkHeader() throws(RESPProtocolError) -> Bool {
        let s = buffer.start
        guard let cr = buffer.index(of: 13, from: s) else {
            if buffer.count > limits.maxInlineLength { throw RESPProtocolError("Protocol error: too big mbulk count string") }
            return false
        }
        guard cr + 1 < buffer.storage.count else { return false }
        guard let n = buffer.integer(from: s + 1, to: cr), n <= Int64(limits.maxMultibulkCount) else {
            throw RESPProtocolError("Protocol error: invalid multibulk length")
        }
        if unauthenticated && n > Int64(limits.maxUnauthenticatedMultibulkCount) {
            throw RESPProtocolError("Protocol error: unauthenticated multibulk length")
        }
        buffer.start = cr + 2
        if n <= 0 { return true }
        args = []
        args!.reserveCapacity(Int(min(n, 1024)))
        remaining = Int(n)
        bulkLength = -1
        return true
    }

    /// Reads `$<length>\r\n`. False when the line is incomplete.
    private mutating func bulkHeader() throws(RESPProtocolError) -> Bool {
        let s = buffer.start
        guard s < buffer.storage.count else { return false }
        let first = buffer.storage[s]
        guard first == UInt8(ascii: "$") else {
            throw RESPProtocolError("Protocol error: expected '$', got '\(Character(Unicode.Scalar(first)))'")
        }
        guard let cr = buffer.index(of: 13, from: s) else {
            if buffer.count > limits.maxInlineLength { throw RESPProtocolError("Protocol error: too big bulk count string") }
            return false
        }
        guard cr + 1 < buffer.storage.count else { return false }
        guard let n = buffer.integer(from: s + 1, to: cr), n >= 0, n <= Int64(limits.maxBulkLength) else {
            throw RESPProtocolError("Protocol error: invalid bulk length")
        }
        if unauthenticated && n > Int64(limits.maxUnauthenticatedBulkLength) {
            throw RESPProtocolError("Protocol error: unauthenticated bulk length")
        }
        buffer.start = cr + 2
        bulkLength = Int(n)
        return true
    }

    /// One inline line split into arguments; nil when the line is incomplete.
    private mutating func inlineRequest() throws(RESPProtocolError) -> [[UInt8]]? {
        let s = buffer.start
        guard let lf = buffer.index(of: 10, from: s) else {
            if buffer.count > limits.maxInlineLength { throw RESPProtocolError("Protocol error: too big inline request") }
            return nil
        }
        var end = lf
        if end > s && buffer.storage[end - 1] == 13 { end -= 1 }
        let line = buffer.storage[s..<end]
        buffer.start = lf + 1
        guard let words = InlineSplitter.split(line) else {
            throw RESPProtocolError("Protocol error: unbalanced quotes in request")
        }
        return words
    }
}

/// Splits a line into arguments as Redis's `sdssplitargs` does (and so as redis-cli quotes):
/// double quotes with `\n \r \t \b \a \\ \" \xHH`, single quotes with only `\'`; a closing
/// quote must be followed by a space or the end of the line.
public enum InlineSplitter {
    static func isSpace(_ c: UInt8) -> Bool { c == 32 || (c >= 9 && c <= 13) }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }

    /// The words of `line`, or nil for unbalanced quotes.
    public static func split(_ line: some Collection<UInt8>) -> [[UInt8]]? {
        let p = Array(line)
        var i = 0
        var words: [[UInt8]] = []
        while true {
            while i < p.count && isSpace(p[i]) { i += 1 }
            if i >= p.count { return words }
            var current: [UInt8] = []
            var inDouble = false, inSingle = false, done = false
            while !done {
                if inDouble {
                    guard i < p.count else { return nil }
                    let c = p[i]
                    if c == 92 && i + 3 < p.count && p[i + 1] == UInt8(ascii: "x"), let h = hex(p[i + 2]), let l = hex(p[i + 3]) {
                        current.append(h << 4 | l)
                        i += 3
                    } else if c == 92 && i + 1 < p.count {
                        i += 1
                        switch p[i] {
                        case UInt8(ascii: "n"): current.append(10)
                        case UInt8(ascii: "r"): current.append(13)
                        case UInt8(ascii: "t"): current.append(9)
                        case UInt8(ascii: "b"): current.append(8)
                        case UInt8(ascii: "a"): current.append(7)
                        default: current.append(p[i])
                        }
                    } else if c == UInt8(ascii: "\"") {
                        if i + 1 < p.count && !isSpace(p[i + 1]) { return nil }
                        done = true
                    } else {
                        current.append(c)
                    }
                } else if inSingle {
                    guard i < p.count else { return nil }
                    let c = p[i]
                    if c == 92 && i + 1 < p.count && p[i + 1] == UInt8(ascii: "'") {
                        current.append(UInt8(ascii: "'"))
                        i += 1
                    } else if c == UInt8(ascii: "'") {
                        if i + 1 < p.count && !isSpace(p[i + 1]) { return nil }
                        done = true
                    } else {
                        current.append(c)
                    }
                } else {
                    if i >= p.count { break }
                    let c = p[i]
                    switch c {
                    case 32, 10, 13, 9, 0: done = true
                    case UInt8(ascii: "\""): inDouble = true
                    case UInt8(ascii: "'"): inSingle = true
                    default: current.append(c)
                    }
                }
                if i < p.count { i += 1 }
            }
            words.append(current)
        }
    }
}
