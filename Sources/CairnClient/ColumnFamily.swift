public import RESP

/// A column family: every command sent through it runs in that family, whichever pooled
/// connection carries it. Get one with ``CairnClient/columnFamily(_:)``.
///
/// ```swift
/// let counters = try await client.createColumnFamily("counters", options: .init(merge: .add))
/// try await counters.merge("page:home", 1)
/// ```
public struct ColumnFamily: KeyValueWriter {
    /// The family's name.
    public let name: String
    let route: Route

    // `send` and `pipeline` forward to the route in each public handle type (client, connection,
    // family, snapshot, transaction): a protocol witness must be public, so an internal protocol
    // extension cannot supply them once for all.
    @discardableResult
    public func send(_ argv: [any RESPArgument]) async throws(CairnClientError) -> RESPValue {
        try await route.send(argv)
    }

    public func pipeline(_ commands: [[any RESPArgument]]) async throws(CairnClientError) -> [RESPValue] {
        try await route.pipeline(commands)
    }

    /// `CF.INFO` for this family.
    public func info() async throws -> ColumnFamilyInfo {
        try await ColumnFamilyInfo(name, via: self)
    }
}
