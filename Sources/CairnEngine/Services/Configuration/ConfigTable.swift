/// The options the config file, `cairnd`'s flags and `CONFIG GET/SET/REWRITE` know: the
/// engine's own (`ConfigOption.all`) followed by those of every `ConfigurationExtension` added
/// to it (the server's, registered with `Engine.register(_:)`). One table, one parser: a row
/// contributed by another module is read, validated and written back exactly as the engine's.
public struct ConfigTable: Sendable {
    /// Every option, in the order `CONFIG GET *` lists them and `CONFIG REWRITE` writes them.
    public private(set) var options: [ConfigOption]
    private var added: Set<ObjectIdentifier> = []

    /// The engine's options alone (an engine run in-process, the offline tools' defaults).
    public static let engine = ConfigTable(options: ConfigOption.all)

    private init(options: [ConfigOption]) {
        self.options = options
    }

    /// This table with `Settings.options` after its rows; the same table when they are in it already.
    public func adding<Settings: ConfigurationExtension>(_ type: Settings.Type) -> ConfigTable {
        var table = self
        guard table.added.insert(ObjectIdentifier(type)).inserted else { return self }
        table.options += Settings.options
        return table
    }

    /// The option called `name` (any case).
    public func named(_ name: String) -> ConfigOption? {
        let lowered = name.lowercased()
        return options.first { $0.name == lowered }
    }
}
