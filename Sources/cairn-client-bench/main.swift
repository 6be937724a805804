// Client-side throughput: N tasks doing SET then GET through one CairnClient against each
// server given, printing ops/s per server and the ratio to the first. Run by scripts/bench-client.
// `--tasks` takes a comma-separated list (1,50,500); `--total` spreads that many operations over
// the tasks of each level (`--ops` gives a per-task count instead). One line per level and server
// starting `rate` is what scripts/bench-client reads.
//
// `--pipeline 1000,10000,100000,1000000` measures instead one `pipeline` call per size (SET and
// GET alternating), repeated at least 3 times and for at least a second, and prints the median
// time per command (and the fastest): a pipeline should cost O(n), so the figure should hardly
// move with the size. The median, not the best: a best of hundreds of short runs would be
// compared with a best of three long ones. Lines starting `pipeline` are what scripts/bench-client reads. `--deadline`
// sets the request deadline in seconds (default 30, the client's own): a long pipeline is one
// request.
//
//   cairn-client-bench [--tasks 1,50,500] [--total 40000 | --ops 2000] [--connections 8] [--value-size 32] name=port ...
//   cairn-client-bench --pipeline 1000,10000,100000,1000000 [--deadline 30] [--value-size 32] name=port ...
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
    /// Pipeline sizes for `--pipeline`; empty runs the task benchmark.
    var pipelineSizes: [Int] = []
    var deadlineSeconds = 30
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
        case "--pipeline": options.pipelineSizes = (rest.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
        case "--deadline": options.deadlineSeconds = Int(rest.popFirst() ?? "") ?? options.deadlineSeconds
        default:
            let parts = arg.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let port = Int(parts[1]) else {
                print(
                    "usage: cairn-client-bench [--tasks n] [--ops n] [--connections n] [--value-size bytes] "
                        + "[--pipeline n,n... [--deadline seconds]] name=port ...")
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

/// `x` with three decimals (no Foundation here for `String(format:)`).
func fixed(_ x: Double) -> String {
    let thousandths = Int((x * 1000).rounded())
    let fraction = String(thousandths % 1000)
    return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// The median and the fastest time per command, in microseconds, of one `pipeline` call of
/// `size` commands (SET and GET of the same key alternating, over 1,000 keys), replies checked.
func measurePipeline(port: Int, size: Int, _ options: Options) async throws -> (median: Double, best: Double, runs: Int) {
    var config = CairnClientConfiguration(port: port)
    config.maximumConnections = 1
    config.requestDeadline = .seconds(options.deadlineSeconds)
    let client = CairnClient(configuration: config)
    defer { client.close() }
    let value = [UInt8](repeating: UInt8(ascii: "x"), count: options.valueSize)
    var commands: [[any RESPArgument]] = []
    commands.reserveCapacity(size)
    for i in 0..<size {
        let key = "pipe:\(i / 2 % 1000)"
        let c: [any RESPArgument] = i % 2 == 0 ? ["SET", key, value] : ["GET", key]
        commands.append(c)
    }
    _ = try await client.ping()
    var times: [Double] = []
    var spent = 0.0
    // At least 3 runs, more until a second was spent (small pipelines vary the most).
    while times.count < 3 || (spent < 1 && times.count < 1000) {
        let start = ContinuousClock.now
        let replies = try await client.pipeline(commands)
        let elapsed = seconds(ContinuousClock.now - start)
        guard replies.count == size, size < 2 || replies[1] == .bulkString(value) else {
            throw CairnClientError(.unexpectedReply, message: "the pipeline's replies are not SET's and GET's")
        }
        times.append(elapsed)
        spent += elapsed
    }
    times.sort()
    let perCommand = { (t: Double) in t / Double(size) * 1e6 }
    return (perCommand(times[times.count / 2]), perCommand(times[0]), times.count)
}

let options = parse(CommandLine.arguments.dropFirst())
if !options.pipelineSizes.isEmpty {
    print("one pipeline call per size (SET/GET alternating, \(options.valueSize)-byte values), at least 3 runs and a second")
    for server in options.servers {
        for size in options.pipelineSizes {
            do {
                let (median, best, runs) = try await measurePipeline(port: server.port, size: size, options)
                print("pipeline \(server.name) n=\(size) \(fixed(median)) us/command median, \(fixed(best)) best of \(runs)")
            } catch {
                print("pipeline \(server.name) n=\(size) failed: \(error)")
            }
        }
    }
    exit(0)
}
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
