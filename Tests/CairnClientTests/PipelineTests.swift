import CairnClient
import CairnTestSupport
import RESP
import Testing

/// Pipelines: long ones cost O(n) (issue #41), and the typed form decodes each reply to its
/// command's type.
@Suite struct PipelineTests {
    /// 100,000 commands in one pipeline, answered in order within a minute in a debug build
    /// (about 12 s on two cores, most of it the debug server): each reply used to copy the
    /// replies gathered so far, O(n²), and 100,000 commands missed even a 30 s deadline.
    /// scripts/bench-client --pipeline measures the time per command of release builds.
    @Test(.timeLimit(.minutes(2))) func aLongPipelineIsAnsweredInOrder() async throws {
        try await withCairnd(configure: { $0.requestDeadline = .seconds(60) }) { client, _ in
            let n = 100_000
            let replies = try await client.pipeline((0..<n).map { i in i % 2 == 0 ? ["SET", "p\(i / 2 % 100)", i] : ["GET", "p\(i / 2 % 100)"] })
            #expect(replies.count == n)
            let wrong = (0..<n).filter { i in i % 2 == 0 ? replies[i] != .simpleString("OK") : replies[i].string != String(i - 1) }
            #expect(wrong.isEmpty, "wrong replies at \(wrong.prefix(10))")
        }
    }

    @Test func aTypedPipelineDecodesEachReply() async throws {
        try await withCairnd { client, _ in
            let (_, value, missing, count, more, deleted) = try await client.pipeline(
                SET("k", "v"), GET("k"), GET("nothing"), INCR("n"), INCRBY("n", 41), DEL("k", "nothing"))
            #expect(value == Array("v".utf8))
            #expect(missing == nil)
            #expect(count == 1)
            #expect(more == 42)
            #expect(deleted == 1)
            // One command: its reply alone, not a tuple.
            let exists: Int64 = try await client.pipeline(EXISTS("n"))
            #expect(exists == 1)
            let (added, field, raw) = try await client.pipeline(HSET("h", "f", "x"), HGET("h", "f"), RAW(["STRLEN", "n"]))
            #expect(added == 1 && field == Array("x".utf8) && raw == .integer(2))
            // The untyped form stays: errors in place.
            let replies = try await client.pipeline([["SET", "a", "1"], ["HGET", "a", "f"]])
            #expect(replies[0] == .simpleString("OK"))
            if case .error = replies[1] {} else { Issue.record("\(replies[1])") }
        }
    }

    /// A server error anywhere throws after every command ran; a reply of another shape is
    /// `.unexpectedReply`.
    @Test func aTypedPipelineThrowsTheFirstServerError() async throws {
        try await withCairnd { client, _ in
            let refused = await #expect(throws: CairnClientError.self) {
                _ = try await client.pipeline(SET("s", "text"), INCR("s"), SET("after", "ran"))
            }
            #expect(refused?.code == .server && refused?.prefix == "ERR", "\(String(describing: refused))")
            let after = try await client.getString("after")
            #expect(after == "ran")
            let shape = await #expect(throws: CairnClientError.self) {
                _ = try await client.pipeline(PipelineCommand<Int64>(["GET", "s"]) { reply throws(CairnClientError) in
                    guard case .integer(let n) = reply else { throw CairnClientError(.unexpectedReply, message: "\(reply)") }
                    return n
                })
            }
            #expect(shape?.code == .unexpectedReply)
        }
    }

    /// The typed transaction: MULTI, the commands, EXEC, each reply decoded; a command that
    /// fails inside EXEC throws after the others ran, as the typed pipeline does.
    @Test func aTypedTransactionDecodesEachReply() async throws {
        try await withCairnd { client, _ in
            let (_, value, count) = try await client.transaction(SET("t", "1"), GET("t"), INCR("t"))
            #expect(value == Array("1".utf8))
            #expect(count == 2)
            let failed = await #expect(throws: CairnClientError.self) {
                _ = try await client.transaction(SET("word", "text"), INCR("word"), SET("later", "ran"))
            }
            #expect(failed?.code == .server && failed?.prefix == "ERR", "\(String(describing: failed))")
            let later = try await client.getString("later")
            #expect(later == "ran")
        }
    }
}
