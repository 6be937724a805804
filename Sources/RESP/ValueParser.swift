/// Incremental parser of RESP2/RESP3 replies (the client side).
///
/// Aggregates are built on an explicit stack, not by recursion, so a hostile 10,000-deep
/// nesting gets an error at `maxDepth` instead of overflowing the stack. Attributes (`|`) are
/// read and dropped: the value they annotate is returned.
public struct ValueParser: Sendable {
    public let limits: RESPLimits
    private var buffer = ByteQueue()
    private var stack: [Frame] = []

    private enum Kind: Sendable { case array, set, push, map, attribute }

    private struct Frame: Sendable {
        var kind: Kind
        var remaining: Int
        var items: [RESPValue]
    }

    public init(limits: RESPLimits = .init()) { self.limits = limits }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(bytes) }
    public mutating func append(_ bytes: [UInt8]) { buffer.append(bytes) }
    public var bufferedByteCount: Int { buffer.count }

    /// The next complete value, or nil when more bytes are needed.
    public mutating func next() throws(RESPProtocolError) -> RESPValue? {
        while true {
            guard let element = try element() else { return nil }
            var value: RESPValue
            switch element {
            case .value(let v): value = v
            case .open(let kind, let count):
                guard stack.count < limits.maxDepth else { throw RESPProtocolError("Protocol error: nesting deeper than \(limits.maxDepth)") }
                if count == 0 {
                    value = ValueParser.finish(kind, [])
                    if kind == .attribute { continue }
                } else {
                    stack.append(Frame(kind: kind, remaining: count, items: []))
                    continue
                }
            }
            // Deliver the value to the open aggregates, closing those that are complete.
            while true {
                guard !stack.isEmpty else {
                    buffer.compact()
                    return value
                }
                stack[stack.count - 1].items.append(value)
                stack[stack.count - 1].remaining -= 1
                guard stack[stack.count - 1].remaining == 0 else { break }
                let frame = stack.removeLast()
                if frame.kind == .attribute { break }  // dropped; the annotated value follows
                value = ValueParser.finish(frame.kind, frame.items)
            }
        }
    }

    private static func finish(_ kind: Kind, _ items: [RESPValue]) -> RESPValue {
        switch kind {
        case .array: return .array(items)
        case .set: return .set(items)
        case .push: return .push(items)
        case .map, .attribute:
            var pairs: [(key: RESPValue, value: RESPValue)] = []
            pairs.reserveCapacity(items.count / 2)
            var i = 0
            while i + 1 < items.count {
                pairs.append((items[i], items[i + 1]))
                i += 2
            }
            return .map(pairs)
        }
    }

    private enum Element {
        case value(RESPValue)
        case open(Kind, Int)
    }

    /// Reads one element at the read position: a complete scalar, or an aggregate header.
    private mutating func element() throws(RESPProtocolError) -> Element? {
        let s = buffer.start
        guard s < buffer.storage.count else { return nil }
        guard let cr = buffer.index(of: 13, from: s) else {
            if buffer.count > limits.maxInlineLength + 32 { throw RESPProtocolError("Protocol error: line too long") }
            return nil
        }
        guard cr + 1 < buffer.storage.count else { return nil }
        let type = buffer.storage[s]
        let lineStart = s + 1
        let storage = buffer.storage
        let text = { String(decoding: storage[lineStart..<cr], as: UTF8.self) }
        func length() throws(RESPProtocolError) -> Int64 {
            guard let n = buffer.integer(from: lineStart, to: cr) else {
                throw RESPProtocolError("Protocol error: invalid length '\(text())'")
            }
            return n
        }
        let afterLine = cr + 2
        switch type {
        case UInt8(ascii: "+"):
            buffer.start = afterLine
            return .value(.simpleString(text()))
        case UInt8(ascii: "-"):
            buffer.start = afterLine
            return .value(.error(text()))
        case UInt8(ascii: ":"):
            guard let n = buffer.integer(from: lineStart, to: cr) else { throw RESPProtocolError("Protocol error: invalid integer '\(text())'") }
            buffer.start = afterLine
            return .value(.integer(n))
        case UInt8(ascii: "$"), UInt8(ascii: "="), UInt8(ascii: "!"):
            let n = try length()
            if n == -1 && type == UInt8(ascii: "$") {
                buffer.start = afterLine
                return .value(.null)
            }
            guard n >= 0, n <= Int64(limits.maxBulkLength) else { throw RESPProtocolError("Protocol error: invalid bulk length") }
            let count = Int(n)
            guard buffer.storage.count - afterLine >= count + 2 else { return nil }
            let body = Array(buffer.storage[afterLine..<(afterLine + count)])
            buffer.start = afterLine + count + 2
            if type == UInt8(ascii: "!") { return .value(.error(String(decoding: body, as: UTF8.self))) }
            if type == UInt8(ascii: "=") {
                guard body.count >= 4 else { return .value(.verbatimString(format: "", text: body)) }
                return .value(.verbatimString(format: String(decoding: body[0..<3], as: UTF8.self), text: Array(body[4...])))
            }
            return .value(.bulkString(body))
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            let n = try length()
            buffer.start = afterLine
            if n == -1 && type == UInt8(ascii: "*") { return .value(.null) }
            guard n >= 0, n <= Int64(limits.maxMultibulkCount) else { throw RESPProtocolError("Protocol error: invalid multibulk length") }
            switch type {
            case UInt8(ascii: "*"): return .open(.array, Int(n))
            case UInt8(ascii: "~"): return .open(.set, Int(n))
            case UInt8(ascii: ">"): return .open(.push, Int(n))
            case UInt8(ascii: "%"): return .open(.map, Int(n) * 2)
            default: return .open(.attribute, Int(n) * 2)
            }
        case UInt8(ascii: "_"):
            buffer.start = afterLine
            return .value(.null)
        case UInt8(ascii: "#"):
            let t = text()
            guard t == "t" || t == "f" else { throw RESPProtocolError("Protocol error: invalid boolean '\(t)'") }
            buffer.start = afterLine
            return .value(.boolean(t == "t"))
        case UInt8(ascii: ","):
            let t = text()
            let d: Double? = switch t {
            case "inf", "+inf": .infinity
            case "-inf": -.infinity
            case "nan", "-nan": .nan
            default: Double(t)
            }
            guard let d else { throw RESPProtocolError("Protocol error: invalid double '\(t)'") }
            buffer.start = afterLine
            return .value(.double(d))
        case UInt8(ascii: "("):
            buffer.start = afterLine
            return .value(.bigNumber(text()))
        default:
            throw RESPProtocolError("Protocol error: unknown reply type '\(Character(Unicode.Scalar(type)))'")
        }
    }
}
