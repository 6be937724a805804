/// Splits text into the terms of the full-text index: runs of Unicode letters, marks and
/// digits, lowercased. Everything else (spaces, punctuation, symbols) separates terms.
///
/// `"Rock'n'Roll, Vol. 2"` → `rock`, `n`, `roll`, `vol`, `2`.
public enum Tokenizer {
    public static func tokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var current = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isWordScalar(scalar) {
                current.append(scalar)
            } else if !current.isEmpty {
                tokens.append(String(current).lowercased())
                current = String.UnicodeScalarView()
            }
        }
        if !current.isEmpty { tokens.append(String(current).lowercased()) }
        return tokens
    }

    static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            let v = scalar.value
            return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A)
        }
        let p = scalar.properties
        return p.isAlphabetic || p.numericType == .decimal || p.generalCategory == .nonspacingMark
            || p.generalCategory == .spacingMark
    }
}

/// A parsed full-text query: terms that must all match, each exactly or as a prefix (`rock*`).
struct TextQuery {
    struct Term: Hashable {
        var text: String
        var isPrefix: Bool
    }

    var terms: [Term]

    /// `"rock* love"`: every whitespace-separated word, tokenized like the indexed text; a word
    /// ending in `*` matches terms starting with it.
    init(_ query: String) {
        var terms: [Term] = []
        for word in query.split(whereSeparator: { $0.isWhitespace }) {
            let isPrefix = word.hasSuffix("*")
            let tokens = Tokenizer.tokens(String(word))
            for (i, token) in tokens.enumerated() {
                terms.append(Term(text: token, isPrefix: isPrefix && i == tokens.count - 1))
            }
        }
        self.terms = Array(Set(terms)).sorted { $0.text < $1.text }
    }

    /// True when `tokens` satisfy every term: the brute-force definition of a match.
    func matches(_ tokens: [String]) -> Bool {
        terms.allSatisfy { term in
            tokens.contains { term.isPrefix ? $0.hasPrefix(term.text) : $0 == term.text }
        }
    }
}
