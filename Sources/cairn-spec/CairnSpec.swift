import ArgumentParser
import Foundation

/// Generates Swift from the command spec (`spec/commands/*.json`): the command table's facts
/// for CairnEngine (`CommandSpec.generated.swift`) and CairnClient's typed commands with their
/// queued forms (`TypedCommands.generated.swift`). `--check` writes nothing and exits 1 when a
/// generated file differs from what the spec gives (scripts/test runs it).
@main
struct CairnSpec: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cairn-spec", abstract: "Generates the command table's facts and the client's typed commands from spec/commands/*.json.")

    @Flag(help: "Write nothing; exit 1 when a generated file is out of date.")
    var check = false

    @Option(help: "The package's root directory (default: the current directory).")
    var root = "."

    func run() throws {
        let root = URL(fileURLWithPath: root)
        let commands = try Spec.load(root.appendingPathComponent("spec/commands"))
        let problems = Spec.problems(commands)
        guard problems.isEmpty else {
            throw ValidationError("the spec has mistakes:\n  " + problems.joined(separator: "\n  "))
        }
        let outputs: [(String, String)] = [
            ("Sources/CairnEngine/Requests/CommandSpec.generated.swift", EngineOutput.render(commands)),
            ("Sources/CairnClient/TypedCommands.generated.swift", ClientOutput.render(commands)),
        ]
        var stale: [String] = []
        for (path, text) in outputs {
            let url = root.appendingPathComponent(path)
            let current = try? String(contentsOf: url, encoding: .utf8)
            guard current != text else { continue }
            if check {
                stale.append(path)
            } else {
                try text.write(to: url, atomically: true, encoding: .utf8)
                print("wrote \(path)")
            }
        }
        if !stale.isEmpty {
            print("out of date (run scripts/command-spec): " + stale.joined(separator: ", "))
            throw ExitCode(1)
        }
    }
}
