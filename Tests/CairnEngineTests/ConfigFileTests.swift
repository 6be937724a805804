import CairnEngine
import Foundation
import Testing

@Suite struct ConfigFileTests {
    @Test func parsesTheShippedFile() throws {
        var config = Configuration()
        let text = """
            # comment
            timeout 7000
            requirepass "with space"
            proto-max-bulk-len 1mb
            client-output-buffer-limit "normal 1024 0 0"
            appendfsync always
            """
        try ConfigFile.apply(text, to: &config)
        #expect(config.timeout == 7000)
        #expect(config.requirepass == "with space")
        #expect(config.protoMaxBulkLen == 1 << 20)
        #expect(config.clientOutputBufferLimit == 1024)
        #expect(config.appendfsync == .always)
    }

    @Test func rejectsUnknownOptions() {
        var config = Configuration()
        #expect(throws: ConfigFile.ParseError.self) { try ConfigFile.apply("nonsense 1", to: &config) }
        // The server's options are read through the server's table (ServerSettingsTests).
        #expect(throws: ConfigFile.ParseError.self) { try ConfigFile.apply("port 7000", to: &config) }
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
