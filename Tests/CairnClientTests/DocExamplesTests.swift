import Testing

/// Every ```swift example of the client's documentation (README's client section, the DocC
/// articles, the doc comments) is compiled as part of this target (DocExamples.swift, written
/// by scripts/doc-examples); this test fails when an example changed and the file was not
/// written again, so what compiles is what the documentation shows.
@Suite struct DocExamplesTests {
    @Test func theCompiledExamplesAreTheDocumentedOnes() throws {
        let (status, message) = try runCheckScript("doc-examples")
        #expect(status == 0, "\(message)")
    }
}
