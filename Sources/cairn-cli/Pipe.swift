import CairnCLIKit
import CairnClient
import Glibc

/// `--pipe`: connects a plain socket and hands it to PipeLoader with AUTH and CF.USE up front.
enum Pipe {
    /// Returns the exit status: 0, 1 when some replies were errors, 2 when the load failed.
    static func run(_ config: CairnClientConfiguration, family: String) -> Int32 {
        let fd: Int32
        do {
            fd = try config.openSocket()
        } catch {
            Output.err("Could not connect to Cairn at \(config.host):\(config.port): \(Session.reason(error.message))\n")
            return Session.connectionFailure
        }
        defer { close(fd) }
        var prelude: [[[UInt8]]] = []
        if let password = config.password {
            prelude.append([Array("AUTH".utf8)] + (config.username.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)])
        }
        if family != "default" { prelude.append([Array("CF.USE".utf8), Array(family.utf8)]) }
        let loader = PipeLoader(socket: fd, input: 0, prelude: prelude, progress: isatty(2) != 0)
        do {
            let summary = try loader.run()
            Output.err("All data transferred: \(summary.description)\n")
            return summary.errors > 0 ? 1 : 0
        } catch {
            Output.err("--pipe failed: \(Session.reason(error.message))\n")
            return Session.connectionFailure
        }
    }
}
