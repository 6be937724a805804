/// A value that can be sent as one argument of a command: bytes as they are, text as UTF-8,
/// numbers in decimal.
///
/// Keys and values are bytes (`[UInt8]`); `String` and integers conform so that
/// `client.set("visits", 1)` reads naturally.
public protocol RESPArgument: Sendable {
    /// The bytes sent on the wire for this argument.
    var respBytes: [UInt8] { get }
}

extension Array: RESPArgument where Element == UInt8 {
    public var respBytes: [UInt8] { self }
}

extension ArraySlice: RESPArgument where Element == UInt8 {
    public var respBytes: [UInt8] { Array(self) }
}

extension String: RESPArgument {
    public var respBytes: [UInt8] { Array(utf8) }
}

extension Substring: RESPArgument {
    public var respBytes: [UInt8] { Array(utf8) }
}

extension Int: RESPArgument {
    public var respBytes: [UInt8] { Array(String(self).utf8) }
}

extension Int64: RESPArgument {
    public var respBytes: [UInt8] { Array(String(self).utf8) }
}

extension Double: RESPArgument {
    public var respBytes: [UInt8] { Array(String(self).utf8) }
}

/// One command: its name and arguments as bytes.
typealias Command = [[UInt8]]

func command(_ args: any RESPArgument...) -> Command { args.map(\.respBytes) }
func command(_ args: [any RESPArgument]) -> Command { args.map(\.respBytes) }
