// cairn-bench-rocks: the embedded engine's single-thread put and get rates, with the options
// cairnd opens its database with, so `scripts/bench` can show how close the server comes to
// RocksDB itself. Prints one JSON object.
//
//   cairn-bench-rocks [--requests N] [--keyspace N] [--value-size N] [--dir DIR]
//                     [--memtable-bloom-ratio R] [--data-block-hash-ratio R]
//                     [--block-size BYTES]
import CairnEngine
import Foundation
import Rocks

struct BenchArguments {
    var requests = 1_000_000
    var keyspace = 1_000_000
    var valueSize = 100
    /// Overrides the server's memtable bloom ratio (for trying options).
    var memtableBloomRatio: Double? = nil
    var dataBlockHashRatio: Double? = nil
    var blockSize: Int? = nil
    var dir = NSTemporaryDirectory() + "cairn-bench-rocks-\(getpid())"

    init(_ args: [String]) {
        var i = 1
        while i + 1 < args.count {
            let value = args[i + 1]
            switch args[i] {
            case "--requests": requests = Int(value) ?? requests
            case "--keyspace": keyspace = Int(value) ?? keyspace
            case "--value-size": valueSize = Int(value) ?? valueSize
            case "--dir": dir = value
            case "--memtable-bloom-ratio": memtableBloomRatio = Double(value)
            case "--data-block-hash-ratio": dataBlockHashRatio = Double(value)
            case "--block-size": blockSize = Int(value)
            default: fatalError("unknown option \(args[i])")
            }
            i += 2
        }
    }
}

/// Keys as redis-benchmark makes them with `-r`: `key:` and twelve digits.
struct KeyGenerator {
    var state: UInt64 = 0x2545_F491_4F6C_DD1D
    let keyspace: UInt64

    mutating func next() -> [UInt8] {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let n = (state >> 33) % keyspace
        var key = Array("key:000000000000".utf8)
        var v = n
        var i = key.count - 1
        while v > 0 {
            key[i] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
            i -= 1
        }
        return key
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let args = BenchArguments(CommandLine.arguments)
let config = Configuration()
var options = Engine.databaseOptions(config)
if let ratio = args.memtableBloomRatio { options.memtableBloomRatio = ratio }
if let ratio = args.dataBlockHashRatio { options.dataBlockHashRatio = ratio }
if let size = args.blockSize { options.blockSize = size }
let db = try Database.open(at: args.dir, options: options, familyOptions: { Engine.familyOptions($0) })
// The server stores every value behind its header; so does the benchmark.
let value = ValueFormat.encode([UInt8](repeating: UInt8(ascii: "x"), count: args.valueSize))

var keys = KeyGenerator(keyspace: UInt64(args.keyspace))
let putSeconds = try seconds {
    for _ in 0..<args.requests { try db.put(keys.next(), value) }
}
// Reads draw their own random keys, as redis-benchmark's GET does after its SET: some were
// written, the others are misses.
keys = KeyGenerator(state: 0x9E37_79B9_7F4A_7C15, keyspace: UInt64(args.keyspace))
var found = 0
let getSeconds = try seconds {
    for _ in 0..<args.requests where try db.get(keys.next()) != nil { found += 1 }
}
// Pipelined reads as the server could serve them: 16 keys per RocksDB MultiGet.
keys = KeyGenerator(state: 0x9E37_79B9_7F4A_7C15, keyspace: UInt64(args.keyspace))
var foundBatched = 0
let batchedSeconds = try seconds {
    var batch: [[UInt8]] = []
    batch.reserveCapacity(16)
    for _ in 0..<(args.requests / 16) {
        batch.removeAll(keepingCapacity: true)
        for _ in 0..<16 { batch.append(keys.next()) }
        foundBatched += try db.withValues(forKeys: batch) { $0.reduce(0) { $1 == nil ? $0 : $0 + 1 } }
    }
}
try db.close()
try? FileManager.default.removeItem(atPath: args.dir)

print(
    """
    {"requests": \(args.requests), "keyspace": \(args.keyspace), "value_size": \(args.valueSize), \
    "put_ops": \(Int(Double(args.requests) / putSeconds)), "get_ops": \(Int(Double(args.requests) / getSeconds)), \
    "get_found": \(found), "multiget16_ops": \(Int(Double(args.requests / 16 * 16) / batchedSeconds)), \
    "multiget16_found": \(foundBatched)}
    """)
