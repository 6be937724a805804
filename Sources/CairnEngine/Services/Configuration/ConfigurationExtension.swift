/// Settings a module around the engine keeps in the configuration, with the options that read
/// and write them: the server's listener and client limit (`ServerSettings` in CairnServer).
///
/// The engine stores them, compares them and hands them to `CONFIG` and the config file through
/// `options`, without knowing what they mean; the module that declares them reads them back
/// with `configuration[Settings.self]`. One table of options (`ConfigTable`) serves both.
public protocol ConfigurationExtension: Sendable, Equatable {
    /// The defaults.
    init()
    /// The options over these settings (their paths go through `Configuration[Self.self]`), in
    /// the order `CONFIG REWRITE` writes them.
    static var options: [ConfigOption] { get }
}

/// The `ConfigurationExtension` values of one configuration, one per type. Only values that
/// differ from their type's defaults are stored, so two configurations that say the same thing
/// compare equal whether or not a module ever wrote its settings into them.
public struct ConfigurationExtensions: Sendable, Equatable {
    private var values: [ObjectIdentifier: any ConfigurationExtension] = [:]

    subscript<Settings: ConfigurationExtension>(_ type: Settings.Type) -> Settings {
        get { values[ObjectIdentifier(type)] as? Settings ?? Settings() }
        set { values[ObjectIdentifier(type)] = newValue == Settings() ? nil : newValue }
    }

    public static func == (a: ConfigurationExtensions, b: ConfigurationExtensions) -> Bool {
        a.values.count == b.values.count
            && a.values.allSatisfy { key, value in b.values[key].map { value.isEqual(to: $0) } ?? false }
    }
}

extension ConfigurationExtension {
    fileprivate func isEqual(to other: any ConfigurationExtension) -> Bool {
        (other as? Self) == self
    }
}

extension Configuration {
    /// The settings a module around the engine declared (`ConfigurationExtension`); their
    /// defaults until something set them.
    public subscript<Settings: ConfigurationExtension>(_ type: Settings.Type) -> Settings {
        get { extensions[type] }
        set { extensions[type] = newValue }
    }
}
