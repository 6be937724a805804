// Client-side throughput: N tasks doing SET then GET through one CairnClient against each
// server given, printing ops/s per server and the ratio to the first. Run by scripts/bench-client.
// `--tasks` takes a comma-separated list (1,50,500); `--total` spreads that many operations over
// the tasks of each level (`--ops` gives a per-task count instead). One line per level and server
// starting `rate` is what scripts/bench-client reads.
//
//   cairn-client-bench [--tasks 1,50,500] [--total 40000 | --ops 2000] [--connections 8] [--value-size 32] name=port ...
import CairnClient

#if canImport(Glibc)
    import Glibc
#endif

struct Options {
    var taskLevels = [50]
    var total: Int? = nil
    var opsPerTask = 2000
    var connections = 8
    var valueSize = 32
    var servers: [(name: String, port: Int)] = []
}

func parse(_ args: ArraySlice<String>) -> Options {
    var options = Options()
    var rest = args
    while let arg = rest.popFirst() {
        switch arg {
        case "--tasks": options.taskLevels = (rest.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
        case "--total": options.total = Int(rest.popFirst() ?? "")
        case "--ops": options.opsPerTask = Int(rest.popFirst() ?? "") ?? options.opsPerTask
        case "--connections": options.connections = Int(rest.popFirst() ?? "") ?? options.connections
        case "--value-size": options.valueSize = Int(rest.popFirst() ?? "") ?? options.valueSize
        default:
            let parts = arg.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let port = Int(parts[1]) else {
                print("usage: cairn-client-bench [--tasks n] [--ops n] [--connections n] [--value-size bytes] name=port ...")
                exit(2)
            }
            options.servers.append((String(parts[0]), port))
        }
    }
    return options
}

/// Operations per second for `tasks` tasks each doing `opsPerTask` commands (alternating SET, GET).
func measure(port: Int, tasks: Int, opsPerTask: Int, _ options: Options) async throws -> Double {
    var config = CairnClientConfiguration(port: port)
    config.maximumConnections = options.connections
    let client = CairnClient(configuration: config)
    defer { client.close() }
    let value = [UInt8](repeating: UInt8(ascii: "x"), count: options.valueSize)
    _ = try await client.ping()
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for task in 0..<tasks {
            group.addTask {
                for i in 0..<opsPerTask / 2 {
                    let key = "bench:\(task):\(i % 100)"
                    try await client.set(key, value)
                    guard try await client.get(key) == value else {
                        throw CairnClientError(.unexpectedReply, message: "GET returned another value")
                    }
                }
            }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(tasks * (opsPerTask / 2) * 2) / seconds
}

let options = parse(CommandLine.arguments.dropFirst())
for tasks in options.taskLevels {
    let opsPerTask = max(2, options.total.map { $0 / tasks } ?? options.opsPerTask)
    print(
        "\(tasks) tasks x \(opsPerTask) ops (SET/GET alternating, \(options.valueSize)-byte values), at most \(options.connections) connections"
    )
    var results: [(String, Double)] = []
    for server in options.servers {
        let rate = try await measure(port: server.port, tasks: tasks, opsPerTask: opsPerTask, options)
        results.append((server.name, rate))
        print("rate \(server.name) tasks=\(tasks) \(Int(rate)) ops/s")
    }
    if results.count > 1 {
        for (name, rate) in results.dropFirst() {
            print("ratio \(results[0].0)/\(name): \(String(Int(results[0].1 / rate * 100)))%")
        }
    }
}
