import ArgumentParser
import CairnCLIKit
import CairnClient
import Glibc
import RESP

/// `cairn-cli`: one-shot commands, commands from standard input, an interactive prompt,
/// `--pipe` bulk loading and admin subcommands. Argument parsing and wiring only; formatting,
/// help and bulk loading live in CairnCLIKit, connections in CairnClient.
@main
struct CairnCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cairn-cli",
        abstract: "The command-line client for Cairn.",
        usage: """
            cairn-cli [options]                        interactive prompt (or commands from a non-terminal stdin)
              cairn-cli [options] <command> [args...]    run one raw command and print its reply
              cairn-cli [options] <subcommand> ...       an admin subcommand (see above)
              cairn-cli [options] --pipe < commands      bulk load RESP or inline commands
            """,
        discussion: """
            Options come before the command. Replies print as redis-cli prints them
            ((integer) 1, "quoted", (nil), numbered arrays) on a terminal, and raw when
            standard output is not a terminal, as redis-cli does; --raw and --no-raw
            force either, --json prints one JSON value per reply.

            When standard input is not a terminal and no command is given, each line
            is a command, quoted as redis-cli quotes: "double quotes" with \\n \\t \\"
            \\xNN escapes, 'single quotes' with \\' only.

            \(AdminCommand.help)

            EXIT STATUS: 0 on success; 1 when a reply is an error (one-shot, standard
            input, subcommands) or --pipe saw error replies; 2 when the server cannot
            be reached, refuses the password or --cf family, or the connection breaks;
            64 for a malformed subcommand.
            """,
        helpNames: [.long]
    )

    @Option(name: .customShort("h"), help: "Server host name or address.")
    var host = "127.0.0.1"

    @Option(name: .customShort("p"), help: "Server port.")
    var port = 7379

    @Option(name: .customShort("a"), help: "Password for AUTH (or the CAIRNCLI_AUTH environment variable).")
    var password: String?

    @Option(name: .customLong("user"), help: "ACL user name to AUTH as (with -a).")
    var user: String?

    @Option(name: .customLong("cf"), help: "Column family to run commands in (CF.USE).")
    var family = "default"

    @Flag(help: "Print replies raw (the default when standard output is not a terminal).")
    var raw = false

    @Flag(name: .customLong("no-raw"), help: "Print replies formatted even when standard output is not a terminal.")
    var noRaw = false

    @Flag(help: "Print each reply as JSON.")
    var json = false

    @Flag(help: "Bulk load: stream standard input (RESP or inline commands) to the server, count the replies.")
    var pipe = false

    @Option(help: "--pipe: seconds to wait for a reply before giving up.")
    var pipeTimeout: Double = 30

    @Argument(parsing: .captureForPassthrough, help: "A raw command and its arguments, or an admin subcommand.")
    var command: [String] = []

    var format: ReplyFormat {
        if json { return .json }
        if raw { return .raw }
        if noRaw { return .standard }
        return isatty(1) != 0 ? .standard : .raw
    }

    func validate() throws {
        // The passthrough argument swallows a leading --help too.
        if command.first == "--help" { throw CleanExit.helpRequest(self) }
        if [raw, noRaw, json].filter({ $0 }).count > 1 { throw ValidationError("choose one of --raw, --no-raw and --json") }
        if pipe && !command.isEmpty { throw ValidationError("--pipe reads commands from standard input; give no command") }
    }

    func run() async throws {
        var config = CairnClientConfiguration(host: host, port: port, password: password ?? env("CAIRNCLI_AUTH"), username: user)
        config.maximumConnections = 1
        config.connectAttempts = 1
        // Replies shown as redis-cli shows them: RESP2, as redis-cli speaks unless told -3.
        config.protocolVersion = .v2
        config.requestDeadline = .seconds(3600)
        if pipe {
            config.requestDeadline = .milliseconds(Int64((pipeTimeout * 1000).rounded()))
            throw ExitCode(Pipe.run(config, family: family))
        }
        let session = Session(client: CairnClient(configuration: config), family: family, format: format)
        defer { session.client.close() }
        let status: Int32
        if !command.isEmpty {
            status = await session.runWords(command)
        } else if isatty(0) == 0 {
            status = await session.runStandardInput()
        } else {
            status = await Interactive(session: session).run()
        }
        if status != 0 { throw ExitCode(status) }
    }

    private func env(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
