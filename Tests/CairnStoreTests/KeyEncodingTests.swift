@testable import CairnStore
import CairnTestSupport
import Foundation
import Testing

/// The order-preserving key encoding: comparing encodings byte by byte must give the values' order.
@Suite struct KeyEncodingTests {
    func order<V: IndexValue & Comparable>(_ values: [V], sourceLocation: SourceLocation = #_sourceLocation) {
        for a in values {
            for b in values {
                let byKey = a.keyBytes.lexicographicallyPrecedes(b.keyBytes)
                #expect(byKey == (a < b), "\(a) vs \(b)", sourceLocation: sourceLocation)
                #expect((a.keyBytes == b.keyBytes) == (a == b), "\(a) vs \(b)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func integersIncludingNegativesAndExtremes() {
        var rng = SeededGenerator(seed: 1)
        var values = [Int.min, Int.min + 1, -256, -255, -1, 0, 1, 255, 256, Int.max - 1, Int.max]
        for _ in 0..<60 { values.append(Int.random(in: Int.min...Int.max, using: &rng)) }
        for _ in 0..<30 { values.append(Int.random(in: -1000...1000, using: &rng)) }
        order(values)
    }

    @Test func doublesIncludingSignedZerosAndInfinities() {
        var rng = SeededGenerator(seed: 2)
        var values: [Double] = [
            -.infinity, -.greatestFiniteMagnitude, -1e300, -1, -.leastNormalMagnitude, -.leastNonzeroMagnitude, -0.0, 0.0,
            .leastNonzeroMagnitude, .leastNormalMagnitude, 0.1, 1, 1.5, 1e300, .greatestFiniteMagnitude, .infinity,
        ]
        for _ in 0..<60 { values.append(Double.random(in: -1e6...1e6, using: &rng)) }
        for _ in 0..<20 { values.append(Double(bitPattern: rng.next())) }
        order(values.filter { !$0.isNaN })
        #expect((-0.0).keyBytes == (0.0).keyBytes)
        #expect(Double.nan.keyBytes == (-Double.nan).keyBytes)
        #expect(Double.infinity.keyBytes.lexicographicallyPrecedes(Double.nan.keyBytes))
    }

    @Test func datesSortByTime() {
        let base = Date(timeIntervalSince1970: 0)
        order([-1e9, -1, -0.001, 0, 0.001, 1, 1e9].map { base.addingTimeInterval($0) })
    }

    @Test func stringsWithEmbeddedSeparatorsAndUnicode() {
        var rng = SeededGenerator(seed: 3)
        let alphabet: [Character] = ["\0", "\u{1}", "a", "b", "z", "\u{7F}", "é", "\u{FF}", "日", "\u{10FFFF}", " ", "\u{FFFF}"]
        var values = ["", "\0", "\0\0", "a", "a\0", "a\0b", "a\u{1}", "ab", "b", "\u{FF}", "é", "日本"]
        for _ in 0..<80 {
            let n = Int.random(in: 0...5, using: &rng)
            values.append(String((0..<n).map { _ in alphabet.randomElement(using: &rng)! }))
        }
        order(values)
        // Canonically equivalent strings are equal, as in Swift.
        #expect("e\u{301}".keyBytes == "é".keyBytes)
    }

    @Test func booleansAndOptionals() {
        #expect(false.keyBytes.lexicographicallyPrecedes(true.keyBytes))
        #expect(!true.keyBytes.lexicographicallyPrecedes(false.keyBytes))
        let optionals: [Int?] = [nil, -5, 0, 7]
        for (i, a) in optionals.enumerated() {
            for (j, b) in optionals.enumerated() {
                #expect(a.keyBytes.lexicographicallyPrecedes(b.keyBytes) == (i < j))
            }
        }
    }

    @Test func compoundKeysSortFieldByField() {
        // (String, Int) pairs: a string that is a prefix of another must not bleed into the next field.
        var rng = SeededGenerator(seed: 4)
        var pairs: [(String, Int)] = [("a", 5), ("a", -5), ("a\0", -9), ("ab", Int.min), ("", Int.max), ("a\0\u{1}", 0)]
        for _ in 0..<60 {
            pairs.append((["", "a", "a\0", "ab", "b"].randomElement(using: &rng)!, Int.random(in: -3...3, using: &rng)))
        }
        for a in pairs {
            for b in pairs {
                let ka = a.0.keyBytes + a.1.keyBytes
                let kb = b.0.keyBytes + b.1.keyBytes
                let expected = a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
                #expect(ka.lexicographicallyPrecedes(kb) == expected, "\(a) vs \(b)")
            }
        }
    }

    @Test func elementsAreSelfDelimiting() {
        let key = "a\0b".keyBytes + 42.keyBytes + true.keyBytes + 1.5.keyBytes + "id".keyBytes
        #expect(KeyCodec.tail(key, skipping: 4) == "id".keyBytes)
        #expect(KeyCodec.successor(ofPrefix: [1, 0xFF, 0xFF]) == [2])
        #expect(KeyCodec.successor(ofPrefix: [0xFF]) == nil)
    }

    @Test func tokenizerSplitsOnNonLetters() {
        #expect(Tokenizer.tokens("Rock'n'Roll, Vol. 2") == ["rock", "n", "roll", "vol", "2"])
        #expect(Tokenizer.tokens("Été à Paris — 東京") == ["été", "à", "paris", "東京"])
        #expect(Tokenizer.tokens("  ") == [])
    }
}
