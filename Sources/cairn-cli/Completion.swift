import CEditLine
import Glibc

/// Tab completion of the first word at the prompt: the server's command names (`COMMAND LIST`,
/// read once when the prompt starts) and the prompt's own words, in the case the user typed.
/// libedit calls a C function, so the names live in a global the callback reads.
enum Completion {
    /// Upper-case candidates, sorted. Set once before the first prompt; read only by libedit's
    /// callback on the same thread.
    nonisolated(unsafe) static var names: [String] = []
    nonisolated(unsafe) private static var matches: [String] = []
    nonisolated(unsafe) private static var next = 0

    static let promptWords = ["CLEAR", "EXIT", "HELP", "QUIT"]

    /// Installs the completer with `commands` (names as the server gives them).
    static func install(commands: [String]) {
        names = Array(Set(commands.map { $0.uppercased() } + promptWords)).sorted()
        cairn_set_completion_entry { text, state in
            Completion.candidate(text.map { String(cString: $0) } ?? "", state: state)
        }
    }

    /// libedit's generator protocol: called with state 0, then 1, 2, ... until it returns nil;
    /// each string is malloc'd (libedit frees it).
    private static func candidate(_ text: String, state: Int32) -> UnsafeMutablePointer<CChar>? {
        if state == 0 {
            // Only the first word is a command; arguments get no completion (not file names).
            let start = cairn_completion_point() - Int32(text.utf8.count)
            let before = cairn_completion_line().map { String(cString: $0).utf8.prefix(Int(max(0, start))) } ?? "".utf8[...]
            let firstWord = before.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            matches = firstWord ? matching(text) : []
            next = 0
        }
        guard next < matches.count else { return nil }
        defer { next += 1 }
        return strdup(matches[next])
    }

    /// The names starting with `text` (any case), in the case of `text`'s first letter.
    static func matching(_ text: String) -> [String] {
        let upper = text.uppercased()
        let lower = text.first.map { $0.isLowercase } ?? false
        return names.filter { $0.hasPrefix(upper) }.map { lower ? $0.lowercased() : $0 }
    }
}
