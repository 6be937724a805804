import RESP

/// The argument lists of the write commands a ``Transaction`` can queue, written once: the
/// typed methods of ``KeyValueWriter`` send them, the transaction's methods queue them.
enum WriteSyntax {
    static func set(_ key: some RESPArgument, _ value: some RESPArgument, _ expiration: Expiration?, _ condition: SetCondition)
        -> [any RESPArgument]
    {
        ["SET", key, value] + condition.arguments + (expiration?.arguments ?? [])
    }

    static func delete(_ keys: [any RESPArgument]) -> [any RESPArgument] { ["DEL"] + keys }

    static func incrBy(_ key: some RESPArgument, _ amount: Int64) -> [any RESPArgument] { ["INCRBY", key, amount] }

    static func append(_ key: some RESPArgument, _ value: some RESPArgument) -> [any RESPArgument] { ["APPEND", key, value] }

    static func merge(_ key: some RESPArgument, _ operand: some RESPArgument) -> [any RESPArgument] { ["MERGE", key, operand] }

    static func expire(_ name: String, _ key: some RESPArgument, _ time: Int, _ condition: ExpireCondition?) -> [any RESPArgument] {
        [name, key, time] + (condition.map { [$0.rawValue] } ?? [])
    }

    static func deleteRange(_ low: RangeBound, _ high: RangeBound) -> [any RESPArgument] {
        ["DELRANGE", low.argument(low: true), high.argument(low: false)]
    }
}
