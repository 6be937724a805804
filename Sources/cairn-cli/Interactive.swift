import CEditLine
import CairnCLIKit
import CairnClient
import Glibc
import RESP

/// The interactive prompt: libedit for line editing and history (kept in ~/.cairncli_history,
/// or CAIRNCLI_HISTFILE), `help` from `COMMAND DOCS`, and a prompt with host, port and the
/// current column family: `127.0.0.1:7379[users]> `.
struct Interactive {
    let session: Session
    private let historyFile: String?

    init(session: Session) {
        self.session = session
        if let path = getenv("CAIRNCLI_HISTFILE").map({ String(cString: $0) }) {
            historyFile = path.isEmpty ? nil : path
        } else {
            historyFile = getenv("HOME").map { String(cString: $0) + "/.cairncli_history" }
        }
    }

    /// The prompt: `host:port> `, with `[family]` when the family is not `default`, or
    /// `not connected> ` after the connection failed.
    func prompt(connected: Bool) -> String {
        guard connected else { return "not connected> " }
        return session.address + (session.family == "default" ? "" : "[\(session.family)]") + "> "
    }

    func run() async -> Int32 {
        cairn_take_over_signals()
        using_history()
        stifle_history(1000)
        if let historyFile { _ = read_history(historyFile) }
        var connected = true
        // Connect (and AUTH, CF.USE) before the first prompt, as redis-cli does.
        do { _ = try await session.send([[Array("PING".utf8)]]) } catch {
            _ = session.report(error)
            connected = false
        }
        // Tab completes command names; without a server, only the prompt's own words.
        var commands: [String] = []
        if connected, let reply = try? await session.send([[Array("COMMAND".utf8), Array("LIST".utf8)]])[0],
            case .array(let items) = reply
        {
            // Subcommands come as `config|get`: only the commands themselves complete.
            commands = items.compactMap { $0.bytes.map { String(decoding: $0, as: UTF8.self) } }.filter { !$0.contains("|") }
        }
        Completion.install(commands: commands)
        var docs: [CommandDoc]? = nil
        while let raw = readline(prompt(connected: connected)) {
            let line = String(cString: raw)
            free(raw)
            let trimmed = line.trimmingSpaces()
            if trimmed.isEmpty { continue }
            add_history(trimmed)
            if let historyFile { _ = write_history(historyFile) }
            guard let words = InlineSplitter.split(Array(trimmed.utf8)) else {
                Output.err("Invalid argument(s)\n")
                continue
            }
            let name = String(decoding: words[0], as: UTF8.self).lowercased()
            if name == "quit" || name == "exit" { break }
            if name == "clear" {
                Output.out("\u{1b}[H\u{1b}[2J")
                continue
            }
            do {
                if name == "help" {
                    if docs == nil { docs = CommandDoc.parse(try await session.send([[Array("COMMAND".utf8), Array("DOCS".utf8)]])[0]) }
                    let topic = words.dropFirst().map { String(decoding: $0, as: UTF8.self) }
                    Output.out(CommandHelp.text(for: topic, in: docs ?? []) ?? "No help for '\(topic.joined(separator: " "))'. Try: help @string, help SET\n")
                } else {
                    Output.reply(try await session.send([words])[0], session.format)
                }
                connected = true
            } catch {
                _ = session.report(error)
                connected = false
            }
        }
        return 0
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" })!
        return String(scalars[first...last])
    }
}
