import CairnEngine
import Foundation
import Logging
import RESP

/// An engine over a temporary directory, driven in-process: commands in, decoded replies out.
/// `@unchecked Sendable`: the concurrency test drives it from several threads, each with its own session.
final class EngineHarness: @unchecked Sendable {
    let directory: String
    let engine: Engine
    let session: Session
    var version: RESPVersion = .v2

    init(configure: (inout Configuration) -> Void = { _ in }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cairn-engine-\(UUID().uuidString)").path
        var config = Configuration()
        config.dir = directory
        config.blockCacheSize = 8 << 20
        configure(&config)
        engine = try Engine(configuration: config, logger: Logger(label: "test"))
        session = engine.makeSession(record: ClientRecord(id: engine.clients.makeID(), address: "127.0.0.1:1", localAddress: "127.0.0.1:7379", now: 0))
        engine.clients.add(session.record)
    }

    /// A second client on the same engine.
    func otherSession() -> Session {
        let s = engine.makeSession(record: ClientRecord(id: engine.clients.makeID(), address: "127.0.0.1:2", localAddress: "127.0.0.1:7379", now: 0))
        engine.clients.add(s.record)
        return s
    }

    @discardableResult
    func run(_ words: String..., on session: Session? = nil) -> RESPValue {
        run(words.map { Array($0.utf8) }, on: session)
    }

    @discardableResult
    func run(_ argv: [[UInt8]], on session: Session? = nil) -> RESPValue {
        let s = session ?? self.session
        var out = RESPWriter(version: s.protocolVersion)
        engine.execute(argv, session: s, out: &out)
        var parser = ValueParser()
        parser.append(out.bytes)
        guard let value = try? parser.next() else { return .error("no reply") }
        return value
    }

    deinit {
        try? engine.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension RESPValue {
    static func bulk(_ s: String) -> RESPValue { .bulkString(Array(s.utf8)) }
    static let ok = RESPValue.simpleString("OK")
}
