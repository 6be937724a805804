import CairnEngine
import Testing

/// One validation per option, shared by the config file, `--set` and CONFIG SET: what it
/// refuses is refused everywhere with the same reason, and what it accepts CONFIG REWRITE
/// can write back.
@Suite struct ConfigValidationTests {
    static let refused: [(String, String, String)] = [
        ("loglevel", "bogus", "argument(s) must be one of the following: debug, verbose, notice, warning, nothing, trace, info, error"),
        ("loglevel", "notice\nrequirepass x", "argument(s) must be one of the following: debug, verbose, notice, warning, nothing, trace, info, error"),
        ("requirepass", "a\nb", "argument must not contain control characters such as newlines (the config file could not hold it)"),
        ("backup-dir", "/tmp/x\r", "argument must not contain control characters such as newlines (the config file could not hold it)"),
        ("proto-max-bulk-len", "0", "argument must be between 1048576 and 9223372036854775807 inclusive"),
        ("proto-max-bulk-len", "1kb", "argument must be between 1048576 and 9223372036854775807 inclusive"),
        ("proto-max-bulk-len", "lots", "argument must be a memory value"),
        ("client-query-buffer-limit", "0", "argument must be between 1048576 and 9223372036854775807 inclusive"),
        ("max-args", "2", "argument must be between 10 and 9223372036854775807 inclusive"),
        ("timeout", "x", "argument couldn't be parsed into an integer"),
        ("appendfsync", "sometimes", "argument(s) must be one of the following: always, everysec, no"),
        ("compression", "rar", "argument(s) must be one of the following: no, snappy, zlib, lz4, zstd, bz2"),
    ]

    @Test(arguments: refused)
    func refusedEverywhereWithTheSameReason(_ name: String, _ value: String, _ reason: String) throws {
        let option = try #require(ConfigOption.named(name))
        var config = Configuration()
        #expect(throws: ConfigOption.Invalid(reason)) { try option.apply(value, to: &config) }
        #expect(config == Configuration())
        #expect(option.configSetError(ConfigOption.Invalid(reason)).message
            == "CONFIG SET failed (possibly related to argument '\(name)') - \(reason)")
        // The file refuses it too (a value with a newline cannot even be written as one line).
        if !value.contains(where: \.isNewline) {
            do {
                try ConfigFile.apply("\(name) \"\(value)\"", to: &config)
                Issue.record("the config file took \(name) \(value)")
            } catch {
                #expect(error.description == "config line 1: bad value '\(value)' for '\(name)': \(reason)")
            }
        }
    }

    /// Every option's value survives CONFIG REWRITE: rendered, read back, rendered the same.
    @Test func everyAcceptedValueRoundTrips() throws {
        var config = Configuration()
        let values: [(String, String)] = [
            ("requirepass", #"sp ace "q" 'a' \b #h"#), ("loglevel", "WARNING"), ("proto-max-bulk-len", "1mb"),
            ("client-query-buffer-limit", "2mb"), ("backup-dir", "/var/lib/cairn backups"), ("timeout", "30"),
        ]
        for (name, value) in values { try #require(ConfigOption.named(name)).apply(value, to: &config) }
        var back = Configuration()
        try ConfigFile.apply(ConfigFile.render(config), to: &back)
        #expect(back == config)
        #expect(back.loglevel == "warning")
    }
}
