import CairnCLIKit
import CairnClient
import Glibc

/// `cairn-cli migrate`: opens the two sockets and runs a `Migrator`, drawing a progress bar on
/// a terminal and printing a progress line every few seconds otherwise.
extension Session {
    /// Returns the exit status: 0 when every key went over and both DBSIZEs are equal, 1 when
    /// not, 2 when a server cannot be reached or the copy broke off.
    func migrate(from: MigrationEndpoint, to given: MigrationEndpoint?, batch: Int) -> Int32 {
        let mine = client.configuration
        let to = given ?? MigrationEndpoint(host: mine.host, port: mine.port, user: mine.username, password: mine.password)
        func open(_ e: MigrationEndpoint, _ role: String) -> Int32? {
            var config = CairnClientConfiguration(host: e.host, port: e.port)
            config.requestDeadline = .seconds(300)
            do { return try config.openSocket() } catch {
                Output.err("Could not connect to the \(role) at \(e.description): \(Self.reason(error.message))\n")
                return nil
            }
        }
        guard let source = open(from, "source") else { return Self.connectionFailure }
        defer { close(source) }
        guard let target = open(to, "target") else { return Self.connectionFailure }
        defer { close(target) }
        let terminal = isatty(2) != 0
        var lastLine = 0.0
        let migrator = Migrator(source: source, target: target, batch: batch) { progress in
            if terminal {
                Output.err("\r" + progress.bar())
            } else if progress.seconds - lastLine >= 2 {
                lastLine = progress.seconds
                Output.err(progress.line + "\n")
            }
        }
        do {
            let summary = try migrator.run(from: from, to: to)
            if terminal { Output.err("\n") }
            Output.err("Migrated \(from.description) to \(to.description): \(summary.description)\n")
            for e in summary.firstErrors { Output.err("  target error: \(e)\n") }
            if !summary.succeeded {
                Output.err(summary.errors > 0
                           ? "FAILED: \(summary.errors) keys were refused by the target\n"
                           : "FAILED: the key counts differ (keys written or expired during the copy, or the target held other keys)\n")
                return 1
            }
            return 0
        } catch {
            if terminal { Output.err("\n") }
            Output.err("migrate failed: \(error.message)\n")
            return Self.connectionFailure
        }
    }
}
