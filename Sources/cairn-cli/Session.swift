import CairnCLIKit
import CairnClient
import RESP

/// One cairn-cli run against one server: the client (one pooled connection), the current column
/// family and the output format. Runs raw commands and admin subcommands and prints their results.
final class Session {
    let client: CairnClient
    let format: ReplyFormat
    /// The family commands run in; follows a successful `CF.USE` and `RESET`.
    private(set) var family: String
    /// Exit status for a failure to reach the server (or its refusal of AUTH / CF.USE).
    static let connectionFailure: Int32 = 2

    init(client: CairnClient, family: String, format: ReplyFormat) {
        self.client = client
        self.family = family
        self.format = format
    }

    var address: String { "\(client.configuration.host):\(client.configuration.port)" }

    /// Sends commands in one round trip, in the current family, and follows family changes.
    /// Error replies are returned in place; transport failures throw.
    func send(_ commands: [[[UInt8]]]) async throws -> [RESPValue] {
        let replies = try await client.columnFamily(family).pipeline(commands)
        for (argv, reply) in zip(commands, replies) where reply == .simpleString("OK") || reply == .simpleString("RESET") {
            switch String(decoding: argv[0], as: UTF8.self).uppercased() {
            case "CF.USE" where argv.count == 2: family = String(decoding: argv[1], as: UTF8.self)
            case "RESET": family = "default"
            default: break
            }
        }
        return replies
    }

    /// Prints why a request failed and returns the exit status for it.
    func report(_ error: any Error) -> Int32 {
        switch error {
        case let e as CairnClientError where e.code == .connection || e.code == .timeout:
            // The client's messages for failed connects start "connect to", "connecting to" or
            // "cannot resolve"; anything else broke an open connection.
            let connecting = e.message.hasPrefix("connect") || e.message.hasPrefix("cannot resolve")
            Output.err((connecting ? "Could not connect to Cairn at " : "Lost the connection to Cairn at ")
                       + "\(address): \(Self.reason(e.message))\n")
            return Self.connectionFailure
        case let e as CairnClientError where e.code == .server:
            Output.err("Cairn at \(address) refused the session: \(e.prefix) \(e.message)\n")
            return Self.connectionFailure
        default:
            Output.err("Error: \(error)\n")
            return Self.connectionFailure
        }
    }

    /// `SHUTDOWN` without `ABORT`: a closed connection is its success.
    static func isShutdown(_ words: [String]) -> Bool {
        words.first?.uppercased() == "SHUTDOWN" && !words.contains { $0.uppercased() == "ABORT" }
    }

    /// `connect to h:p failed: Connection refused` → `Connection refused`.
    static func reason(_ message: String) -> String {
        guard let r = message.range(of: "failed: ") else { return message }
        return String(message[r.upperBound...])
    }

    /// One-shot mode: an admin subcommand or a raw command from the command line.
    func runWords(_ words: [String]) async -> Int32 {
        do {
            if let admin = try AdminCommand.parse(words) { return await run(admin) }
        } catch {
            let (text, status) = AdminCommand.message(for: error, words: words)
            if status == 0 { Output.out(text + "\n") } else { Output.err(text + "\n") }
            return status
        }
        do {
            let reply = try await send([words.map { Array($0.utf8) }])[0]
            Output.reply(reply, format)
            if case .error = reply { return 1 }
            return 0
        } catch let error as CairnClientError where error.code == .connection && Self.isShutdown(words) {
            // The server closing the connection is SHUTDOWN succeeding (redis-cli prints nothing).
            return 0
        } catch {
            return report(error)
        }
    }

    /// Standard input that is not a terminal: one command per line, pipelined in batches; replies
    /// print in order. Exit status 1 when any reply was an error or a line could not be split.
    func runStandardInput() async -> Int32 {
        var status: Int32 = 0
        var batch: [[[UInt8]]] = []
        func flush() async throws {
            guard !batch.isEmpty else { return }
            for reply in try await send(batch) {
                Output.reply(reply, format)
                if case .error = reply { status = 1 }
            }
            batch.removeAll(keepingCapacity: true)
        }
        do {
            while let line = readLine(strippingNewline: true) {
                guard let argv = InlineSplitter.split(Array(line.utf8)) else {
                    try await flush()
                    Output.err("Invalid argument(s): unbalanced quotes in: \(line)\n")
                    status = 1
                    continue
                }
                if argv.isEmpty { continue }
                batch.append(argv)
                if batch.count >= 512 { try await flush() }
            }
            try await flush()
        } catch {
            return report(error)
        }
        return status
    }
}
