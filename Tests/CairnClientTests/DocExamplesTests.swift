import Foundation
import Testing

/// Every ```swift example of the client's documentation (README's client section, the DocC
/// articles, the doc comments) is compiled as part of this target (DocExamples.swift, written
/// by scripts/doc-examples); this test fails when an example changed and the file was not
/// written again, so what compiles is what the documentation shows.
@Suite struct DocExamplesTests {
    @Test func theCompiledExamplesAreTheDocumentedOnes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        check.arguments = ["python3", root.appendingPathComponent("scripts/doc-examples").path, "--check"]
        let errors = Pipe()
        check.standardError = errors
        check.standardOutput = FileHandle.nullDevice
        try check.run()
        check.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(check.terminationStatus == 0, "\(message)")
    }
}
