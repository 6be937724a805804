/// An error reply: its wire form is `-PREFIX message`, as Redis writes it.
///
/// Handlers throw these; the dispatcher writes them. Internal causes (storage failures) are
/// logged with detail and reach the client only as a short, actionable sentence.
public struct CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    public var prefix: String
    public var message: String

    public init(_ prefix: String = "ERR", _ message: String) {
        self.prefix = prefix
        self.message = message
    }

    /// The text after `-`, e.g. `ERR syntax error`.
    public var wire: String { "\(prefix) \(message)" }
    public var description: String { wire }

    public static let syntax = CommandError("ERR", "syntax error")
    public static let notInteger = CommandError("ERR", "value is not an integer or out of range")
    public static let notFloat = CommandError("ERR", "value is not a valid float")
    public static let overflow = CommandError("ERR", "increment or decrement would overflow")
    public static let noSuchKey = CommandError("ERR", "no such key")
    public static let wrongType = CommandError(
        "WRONGTYPE", "Operation against a key holding the wrong kind of value")
    public static let noAuth = CommandError("NOAUTH", "Authentication required.")
    public static let wrongPass = CommandError(
        "WRONGPASS", "invalid username-password pair or user is disabled.")

    public static func arity(_ name: String) -> CommandError {
        CommandError("ERR", "wrong number of arguments for '\(name)' command")
    }

    public static func invalidExpire(_ name: String) -> CommandError {
        CommandError("ERR", "invalid expire time in '\(name)' command")
    }
}
