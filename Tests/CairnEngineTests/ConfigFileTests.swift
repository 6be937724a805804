import CairnEngine
import Foundation
import Testing

@Suite struct ConfigFileTests {
    @Test func parsesTheShippedFile() throws {
        var config = Configuration()
        let text = """
            # comment
            port 7000
            requirepass "with space"
            proto-max-bulk-len 1mb
            client-output-buffer-limit "normal 1024 0 0"
            appendfsync always
            """
        try ConfigFile.apply(text, to: &config)
        #expect(config.port == 7000)
        #expect(config.requirepass == "with space")
        #expect(config.protoMaxBulkLen == 1 << 20)
        #expect(config.clientOutputBufferLimit == 1024)
        #expect(config.appendfsync == .always)
    }

    /// The documented file in config/ must parse and give the documented defaults.
    @Test func shippedConfigFileMatchesDefaults() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("config/cairn.conf"), encoding: .utf8)
        var config = Configuration()
        try ConfigFile.apply(text, to: &config)
        #expect(config == Configuration())
    }

    @Test func rejectsUnknownOptions() {
        var config = Configuration()
        #expect(throws: ConfigFile.ParseError.self) { try ConfigFile.apply("nonsense 1", to: &config) }
    }

    @Test func renderRoundTrips() throws {
        var config = Configuration()
        config.requirepass = "a b\"c"
        config.timeout = 30
        var back = Configuration()
        try ConfigFile.apply(ConfigFile.render(config), to: &back)
        #expect(back == config)
    }
}
