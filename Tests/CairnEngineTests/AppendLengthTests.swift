@testable import CairnEngine
import Foundation
import RESP
import Testing

/// APPEND answers the new length without reading the value when the last APPEND of the key
/// left it (`AppendLengths`); whatever else writes the key in between, the answer stays exact.
@Suite struct AppendLengthTests {
    @Test func appendAnswersStayExactWhateverWritesTheKeyBetween() throws {
        let h = try EngineHarness()
        let other = h.otherSession()
        var seed: UInt64 = 0x5eed
        func next(_ n: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int((seed >> 33) % UInt64(n))
        }
        let keys = ["a", "b", "c"]
        for step in 0..<3000 {
            let k = keys[next(keys.count)]
            let o = keys[next(keys.count)]
            switch next(12) {
            case 0: h.run("SET", k, String(repeating: "s", count: next(5)), on: other)
            case 1: h.run("DEL", k, on: other)
            case 2: h.run("SETRANGE", k, String(next(6)), "zz", on: other)
            case 3: h.run("RENAME", o, k, on: other)
            case 4: h.run("COPY", o, k, "REPLACE", on: other)
            case 5: h.run("PEXPIRE", k, String(1 + next(3)), on: other)
            case 6: h.run("PERSIST", k, on: other)
            case 7: h.run("MSET", k, "m", o, "mm", on: other)
            case 8: h.run("FLUSHDB", on: other)
            default:
                let reply = h.run("APPEND", k, String(repeating: "x", count: 1 + next(3)))
                let length = h.run("STRLEN", k)
                if case .error = reply {
                    #expect(h.run("TYPE", k) != .simpleString("string"), "step \(step)")
                } else {
                    // A TTL of 1-3 ms may pass between the APPEND and the STRLEN: then the key is gone.
                    let expiredBetween = length == .integer(0) && h.run("EXISTS", k) == .integer(0)
                    #expect(reply == length || expiredBetween, "step \(step): APPEND \(k) answered \(reply), STRLEN \(length)")
                }
            }
            if next(50) == 0 { Thread.sleep(forTimeInterval: 0.004) }  // let short TTLs pass
        }
    }

    @Test func anExpiredValueIsAppendedToAsEmpty() throws {
        let h = try EngineHarness()
        #expect(h.run("SET", "k", "abc", "PX", "40") == .ok)
        #expect(h.run("APPEND", "k", "de") == .integer(5))
        #expect(h.run("APPEND", "k", "f") == .integer(6))
        Thread.sleep(forTimeInterval: 0.08)
        #expect(h.run("APPEND", "k", "gh") == .integer(2))
        #expect(h.run("GET", "k") == .bulk("gh"))
    }
}
