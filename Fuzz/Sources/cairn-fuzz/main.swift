// Fuzz targets for the RESP request parser and for the engine's command dispatch.
//
// Built by `scripts/fuzz` with `-sanitize=fuzzer,address`, this runs under libFuzzer
// (LLVMFuzzerRunDriver, found at run time). Built plainly (`swift build`), it replays the
// inputs named on the command line, so a crash found by the fuzzer can be re-run in a debugger.
// CAIRN_FUZZ_TARGET chooses the target: `resp` (default) or `dispatch`.
//
// What counts as a finding: a crash, a sanitizer report, or a broken invariant (precondition):
// - resp: feeding the same bytes whole and split at any point gives the same requests and the
//   same error; a parsed request re-encoded as a multibulk parses back to itself.
// - dispatch: every request gets exactly one well-formed RESP reply, whatever it asks.
import CairnEngine
import Foundation
import Logging
import RESP

#if canImport(Glibc)
import Glibc
#endif

/// Everything `parser` yields from `bytes` fed in two parts split at `cut`: requests, then the
/// protocol error if one ended the stream.
func parseAll(_ bytes: [UInt8], cut: Int, limits: RESPLimits) -> ([[[UInt8]]], RESPProtocolError?) {
    var parser = RequestParser(limits: limits)
    var requests: [[[UInt8]]] = []
    let parts = cut > 0 && cut < bytes.count ? [Array(bytes[..<cut]), Array(bytes[cut...])] : [bytes]
    for part in parts {
        parser.append(part)
        do {
            while let r = try parser.next() { requests.append(r) }
        } catch {
            return (requests, error)
        }
    }
    return (requests, nil)
}

/// Small limits so the fuzzer reaches every limit branch with short inputs.
let smallLimits: RESPLimits = {
    var l = RESPLimits()
    l.maxBulkLength = 512
    l.maxMultibulkCount = 64
    l.maxInlineLength = 256
    l.maxDepth = 8
    return l
}()

func fuzzRESP(_ bytes: [UInt8]) {
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    for limits in [RESPLimits(), smallLimits] {
        let (whole, wholeError) = parseAll(bytes, cut: 0, limits: limits)
        let (split, splitError) = parseAll(bytes, cut: cut, limits: limits)
        precondition(whole == split, "split feeding changed the requests")
        precondition(wholeError == splitError, "split feeding changed the error: \(String(describing: wholeError)) vs \(String(describing: splitError))")
        for request in whole where !request.isEmpty {
            var w = RESPWriter()
            w.arrayHeader(request.count)
            for arg in request { w.bulk(arg) }
            let (back, error) = parseAll(w.bytes, cut: 0, limits: RESPLimits())
            precondition(error == nil && back == [request], "a request did not survive re-encoding")
        }
    }
    // The reply parser (used by clients) must not crash on anything either.
    var values = ValueParser(limits: smallLimits)
    values.append(bytes)
    while let v = try? values.next() { _ = v }
}

/// One engine over a temporary directory for the whole run.
final class DispatchFuzzer {
    let directory: String
    let engine: Engine

    init() {
        directory = NSTemporaryDirectory() + "cairn-fuzz-\(getpid())"
        var config = Configuration()
        config.dir = directory
        config.blockCacheSize = 8 << 20
        config.writeBufferSize = 4 << 20
        config.maxSnapshots = 64
        // SETRANGE k 8000000 x builds an 8 MB value: fine in a release server, but over
        // libFuzzer's 10 s timeout in this debug, ASan and coverage build. Small values keep
        // each run fast and send the fuzzer through the limit checks.
        config.maxValueSize = 64 * 1024
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        engine = try! Engine(configuration: config, logger: logger)
    }

    func run(_ bytes: [UInt8]) {
        let (requests, _) = parseAll(bytes, cut: 0, limits: smallLimits)
        let record = ClientRecord(id: engine.clients.makeID(), address: "127.0.0.1:1", localAddress: "127.0.0.1:7379", now: 0)
        engine.clients.add(record)
        let session = engine.makeSession(record: record)
        defer {
            engine.connectionClosed(session)
            engine.clients.remove(record.id)
        }
        // Families pile up across runs and each costs RocksDB memory: cap them.
        let capFamilies = engine.allFamilies.count > 8
        let pipeline = requests.prefix(32).filter { !$0.isEmpty && !(capFamilies && Bytes.lowercase($0[0]) == "cf.create") }
        // The whole input as one pipeline, as a connection runs it: runs of GETs and of plain
        // writes go through the grouped executors, the rest one by one. Every request gets
        // exactly one well-formed reply, in order.
        var out = RESPWriter(version: session.protocolVersion)
        engine.executePipeline(Array(pipeline), session: session, out: &out)
        var parser = ValueParser()
        parser.append(out.bytes)
        for request in pipeline {
            let reply = try? parser.next()
            precondition(reply != nil, "no complete reply to \(request.map { String(decoding: $0, as: UTF8.self) })")
        }
        precondition(parser.bufferedByteCount == 0, "more replies than requests")
    }
}

enum Bytes {
    static func lowercase(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self).lowercased() }
}

let target = ProcessInfo.processInfo.environment["CAIRN_FUZZ_TARGET"] ?? "resp"
nonisolated(unsafe) var dispatchFuzzer: DispatchFuzzer? = nil

func runOne(_ bytes: [UInt8]) {
    switch target {
    case "dispatch":
        if dispatchFuzzer == nil { dispatchFuzzer = DispatchFuzzer() }
        dispatchFuzzer!.run(bytes)
    default:
        fuzzRESP(bytes)
    }
}

typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
typealias RunDriver = @convention(c) (
    UnsafeMutablePointer<Int32>, UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>, TestOneInput
) -> Int32

/// libFuzzer's entry point; its driver refers to it by name, so it is exported too.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    runOne(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}

let testOneInput: TestOneInput = { data, count in fuzzerTestOneInput(data, count) }

// RTLD_DEFAULT (nil on Linux): libFuzzer is linked in only by scripts/fuzz.
if let symbol = dlsym(nil, "LLVMFuzzerRunDriver") {
    let driver = unsafeBitCast(symbol, to: RunDriver.self)
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(driver(&argc, &argv, testOneInput))
}

// Replay: run every file (or every file in every directory) named on the command line.
var count = 0
for path in CommandLine.arguments.dropFirst() {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("no such file: \(path)\n".utf8))
        exit(2)
    }
    let files = isDirectory.boolValue
        ? (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted().map { path + "/" + $0 } ?? []
        : [path]
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        runOne(Array(data))
        count += 1
    }
}
print("replayed \(count) inputs through the \(target) target without a finding")
if let d = dispatchFuzzer { try? d.engine.close(); try? FileManager.default.removeItem(atPath: d.directory) }
