public import RESP

/// One command as a value, with the type its reply decodes to: what the typed `pipeline`
/// (`client.pipeline(SET("k", "v"), GET("k"))`) takes.
///
/// Make one with the functions named after the commands (``GET(_:)``, ``SET(_:_:)``,
/// ``INCR(_:)``...) or, for any other command, ``RAW(_:)`` (the reply as the server sent it) or
/// ``init(_:decode:)``.
public struct PipelineCommand<Response: Sendable>: Sendable {
    /// The command and its arguments, as `send` takes them.
    public let arguments: [any RESPArgument]
    let decode: @Sendable (RESPValue) throws(CairnClientError) -> Response

    /// A command whose reply `decode` turns into `Response`; a server error never reaches
    /// `decode` (the pipeline throws it).
    public init(_ arguments: [any RESPArgument], decode: @escaping @Sendable (RESPValue) throws(CairnClientError) -> Response) {
        self.arguments = arguments
        self.decode = decode
    }
}

extension CommandSender {
    /// Sends the commands as one pipeline (one write, one round trip, as the untyped
    /// `pipeline([...])`) and returns their replies as a tuple, each decoded to its command's
    /// type.
    ///
    /// ```swift
    /// let (_, value, count) = try await client.pipeline(SET("k", "v"), GET("k"), INCR("n"))
    /// ```
    ///
    /// - Throws: every command runs; then the first reply that is a server error is thrown as
    ///   `.server` (the untyped form keeps errors in place instead), or `.unexpectedReply` when a
    ///   reply has another shape than its command's type. Transport failures as `send`.
    public func pipeline<each Response>(
        _ commands: repeat PipelineCommand<each Response>
    ) async throws(CairnClientError) -> (repeat each Response) {
        var arguments: [[any RESPArgument]] = []
        for command in repeat each commands { arguments.append(command.arguments) }
        let replies = try await pipeline(arguments)
        return try PipelineCommand<Void>.decode(replies, as: repeat each commands)
    }
}

extension CairnClient {
    /// Runs the commands as one transaction (MULTI, the commands, EXEC, on one connection) and
    /// returns their replies as a tuple, each decoded to its command's type; the closure form
    /// (``transaction(watching:attempts:_:)``) stays for WATCH and reads before EXEC.
    ///
    /// ```swift
    /// let (_, stock) = try await client.transaction(SET("order:7", "paid"), INCRBY("stock", -1))
    /// ```
    ///
    /// - Throws: as the typed `pipeline`: the first reply that is a server error, after the
    ///   whole transaction ran; `EXECABORT` when the server refused a command before EXEC.
    public func transaction<each Response>(
        _ commands: repeat PipelineCommand<each Response>
    ) async throws -> (repeat each Response) {
        var queued: [[any RESPArgument]] = []
        for command in repeat each commands { queued.append(command.arguments) }
        let arguments = queued
        let replies = try await transaction { tx in
            for argv in arguments { tx.queue(argv) }
        }
        return try PipelineCommand<Void>.decode(replies, as: repeat each commands)
    }
}

extension PipelineCommand {
    /// The replies of a typed pipeline or transaction, decoded in order: a server error
    /// anywhere is thrown before any reply is decoded, so the first one wins.
    static func decode<each R>(
        _ replies: [RESPValue], as commands: repeat PipelineCommand<each R>
    ) throws(CairnClientError) -> (repeat each R) {
        var count = 0
        for _ in repeat each commands { count += 1 }
        guard replies.count == count else {
            throw CairnClientError(.protocolViolation, message: "\(replies.count) replies to \(count) commands")
        }
        for reply in replies { _ = try reply.throwingServerError() }
        var next = 0
        func decoded<C>(_ command: PipelineCommand<C>) throws(CairnClientError) -> C {
            defer { next += 1 }
            return try command.decode(replies[next])
        }
        return (repeat try decoded(each commands))
    }
}

// The commands of the typed pipeline. Their replies decode as the typed methods of the same
// names decode them (``KeyValueReader``, ``KeyValueWriter``).

/// `GET key`: the value, or nil when the key does not exist.
public func GET(_ key: some RESPArgument) -> PipelineCommand<[UInt8]?> {
    PipelineCommand(["GET", key]) { reply throws(CairnClientError) in try reply.expectBytes() }
}

/// `SET key value`.
public func SET(_ key: some RESPArgument, _ value: some RESPArgument) -> PipelineCommand<Void> {
    PipelineCommand(["SET", key, value]) { reply throws(CairnClientError) in try reply.expectOK() }
}

/// `DEL key...`: how many of the keys existed.
public func DEL(_ keys: any RESPArgument...) -> PipelineCommand<Int64> {
    PipelineCommand(["DEL"] + keys) { reply throws(CairnClientError) in try reply.expectInt() }
}

/// `EXISTS key...`: how many of the keys exist (a key named twice counts twice).
public func EXISTS(_ keys: any RESPArgument...) -> PipelineCommand<Int64> {
    PipelineCommand(["EXISTS"] + keys) { reply throws(CairnClientError) in try reply.expectInt() }
}

/// `INCR key`: the value after the increment.
public func INCR(_ key: some RESPArgument) -> PipelineCommand<Int64> {
    PipelineCommand(["INCR", key]) { reply throws(CairnClientError) in try reply.expectInt() }
}

/// `INCRBY key increment`: the value after the increment.
public func INCRBY(_ key: some RESPArgument, _ increment: Int64) -> PipelineCommand<Int64> {
    PipelineCommand(["INCRBY", key, increment]) { reply throws(CairnClientError) in try reply.expectInt() }
}

/// `HSET key field value`: 1 when the field is new, 0 when it was overwritten.
public func HSET(_ key: some RESPArgument, _ field: some RESPArgument, _ value: some RESPArgument) -> PipelineCommand<Int64> {
    PipelineCommand(["HSET", key, field, value]) { reply throws(CairnClientError) in try reply.expectInt() }
}

/// `HGET key field`: the field's value, or nil.
public func HGET(_ key: some RESPArgument, _ field: some RESPArgument) -> PipelineCommand<[UInt8]?> {
    PipelineCommand(["HGET", key, field]) { reply throws(CairnClientError) in try reply.expectBytes() }
}

/// Any command; the reply as the server sent it (a server error still throws).
public func RAW(_ arguments: [any RESPArgument]) -> PipelineCommand<RESPValue> {
    PipelineCommand(arguments) { reply in reply }
}
