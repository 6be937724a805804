import RESP

/// A column family: every command sent through it runs in that family, whichever pooled
/// connection carries it. Get one with ``CairnClient/columnFamily(_:)``.
///
/// ```swift
/// let counters = try await client.createColumnFamily("counters", options: .init(merge: .add))
/// try await counters.merge("page:home", 1)
/// ```
public struct ColumnFamily: KeyValueWriter, RoutedSender {
    /// The family's name.
    public let name: String
    let route: Route

    public var _route: CommandRoute { CommandRoute(route) }

    /// `CF.INFO` for this family.
    public func info() async throws -> ColumnFamilyInfo {
        try await ColumnFamilyInfo(name, via: self)
    }
}
