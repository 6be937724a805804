import CairnEngine
import Dispatch
import Logging
import RESP
import func CairnSync.withThreadName
#if canImport(Glibc)
import Glibc
#endif

/// A replica's link to its primary, on a thread of its own: connects, authenticates
/// (`masterauth`/`masteruser`), says its port, asks `PSYNC id offset`, receives a full sync's
/// files or continues, then applies every batch in order (`Replication.apply`) and reports
/// what it applied (`REPLCONF ACK`) after each burst and every second. A broken link is
/// retried each second; one REPLICAOF later (a new generation) ends it. Everything it reports
/// or writes names its generation, so a link that has not noticed yet that it ended changes
/// nothing (`Replication.linkGate`).
final class PrimaryLink: @unchecked Sendable {
    private let engine: Engine
    private let logger: Logger
    private let generation: Int
    private let queue: DispatchQueue

    init(engine: Engine, logger: Logger, generation: Int) {
        self.engine = engine
        self.logger = logger
        self.generation = generation
        self.queue = DispatchQueue(label: "cairn.primary-link.\(generation)")
    }

    func start() {
        queue.async {
            withThreadName("cairn-link") {
                // Its writes compare keys in the memtable as a worker's do: no perf counters.
                Engine.prepareThread()
                self.run()
            }
        }
    }

    private var current: Bool { engine.replication.target(ifGeneration: generation) != nil && !engine.replication.isStopped }

    /// A full sync that failed (the replica's old data is intact).
    struct FullSyncFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// Full syncs that failed in a row (reset by one that succeeds).
    private var fullSyncFailures = 0

    private func run() {
        var lastError = ""
        while let (host, port) = engine.replication.target(ifGeneration: generation), !engine.replication.isStopped {
            var delaySeconds = 1
            do {
                try follow(host: host, port: port)
            } catch where !current {
                // REPLICAOF changed while this link worked: the new generation's link takes over.
                if !engine.replication.isStopped {
                    logger.notice("replication link to \(host):\(port) ended: the replication target changed")
                }
                return
            } catch let error as FullSyncFailed {
                // Each attempt copies the whole data set: back off, and say so every time.
                fullSyncFailures += 1
                delaySeconds = min(60, 1 << min(fullSyncFailures, 6))
                logger.error("replication link to \(host):\(port): full sync failed \(fullSyncFailures) time(s) in a row (\(error)); the old data is kept; next attempt in \(delaySeconds) s")
            } catch {
                let text = "\(error)"
                // The same failure each second is logged once, not every retry.
                if text != lastError { logger.warning("replication link to \(host):\(port): \(text); retrying every second") }
                lastError = text
            }
            engine.replication.noteLink(up: false, generation: generation)
            engine.replication.noteSync(inProgress: false, generation: generation)
            for _ in 0..<(10 * delaySeconds) where current { usleep(100_000) }
        }
    }

    private func follow(host: String, port: Int) throws {
        let config = engine.configuration
        var socket = try ReplicationSocket.connect(host: host, port: port, timeoutSeconds: min(config.replTimeout, 10))
        defer { socket.close() }
        func ask(_ words: [String]) throws -> String {
            var out = RESPWriter(version: .v2, capacity: 128)
            out.arrayHeader(words.count)
            for w in words { out.bulk(w) }
            try socket.send(out.bytes)
            return try socket.readLine(timeoutSeconds: config.replTimeout)
        }
        if !config.masterauth.isEmpty {
            let reply = try ask(config.masteruser.isEmpty ? ["AUTH", config.masterauth] : ["AUTH", config.masteruser, config.masterauth])
            guard reply.hasPrefix("+") else { throw ReplicationSocket.Failure(description: "the primary refused masterauth: \(reply)") }
        }
        let listening = config.replicaAnnouncePort > 0 ? config.replicaAnnouncePort : config.server.port
        var reply = try ask(["REPLCONF", "listening-port", String(listening)])
        guard reply.hasPrefix("+") else { throw ReplicationSocket.Failure(description: "the primary refused REPLCONF: \(reply)") }
        if !config.replicaAnnounceIP.isEmpty {
            reply = try ask(["REPLCONF", "ip-address", config.replicaAnnounceIP])
            guard reply.hasPrefix("+") else { throw ReplicationSocket.Failure(description: "the primary refused REPLCONF ip-address: \(reply)") }
        }
        reply = try ask(["REPLCONF", "capa", "cairn-wal"])
        guard reply.hasPrefix("+") else { throw ReplicationSocket.Failure(description: "the primary refused REPLCONF capa: \(reply)") }
        // An ended link asks for nothing (a full sync would make the old primary a checkpoint).
        try checkCurrent()
        let next = engine.replicationOffset + 1
        reply = try ask(["PSYNC", engine.replication.psyncID(latest: next - 1), String(next)])
        let words = reply.split(separator: " ").map(String.init)
        socket.startFrames()
        if words.first == "+FULLRESYNC", words.count >= 2 {
            try receiveFullSync(&socket, primaryID: words[1], host: host, port: port)
        } else if words.first == "+CONTINUE" {
            engine.replication.continued(primaryID: words.count >= 2 ? words[1] : engine.replication.replicationID, latest: next - 1,
                                         dir: config.dir, generation: generation)
            logger.notice("replication link to \(host):\(port): partial sync from sequence \(next)")
        } else {
            throw ReplicationSocket.Failure(description: "the primary refused PSYNC: \(reply)")
        }
        engine.replication.noteLink(up: true, generation: generation)
        // Short receive waits: a hand-over request is noticed within 100 ms.
        socket.makeBlocking(receiveTimeoutMilliseconds: 100, sendTimeoutSeconds: config.replTimeout)
        try apply(&socket, timeout: config.replTimeout)
    }

    private func receiveFullSync(_ socket: inout ReplicationSocket, primaryID: String, host: String, port: Int) throws {
        let started = Clock.milliseconds()
        engine.replication.noteSync(inProgress: true, generation: generation)
        var totalBytes = 0
        while true {
            guard let frame = try socket.nextFrame() else { try checkCurrent(); continue }
            guard ReplicationFrame.name(frame) == "SNAPSHOT", frame.count == 3, let total = ReplicationFrame.number(frame[1]) else {
                throw ReplicationSocket.Failure(description: "expected the full sync's SNAPSHOT frame")
            }
            totalBytes = Int(total)
            break
        }
        logger.notice("replication link to \(host):\(port): full sync: receiving \(totalBytes >> 20) MB; serving the old data until it is complete")
        var received = 0
        var failure: (any Error)? = nil
        let latest: UInt64
        do {
            latest = try engine.replication.receiveFullSync(engine, primaryID: primaryID, totalBytes: totalBytes, generation: generation) { staging in
                var file: Int32 = -1
                var fileName = ""
                defer { if file >= 0 { close(file) } }
                do {
                    while true {
                        guard let frame = try socket.nextFrame() else { try checkCurrent(); continue }
                        let name = ReplicationFrame.name(frame)
                        if name == "SYNCED" { return }
                        guard name == "FILE", frame.count == 3 else { throw ReplicationSocket.Failure(description: "unexpected frame \(name) in a full sync") }
                        let fname = String(decoding: frame[1], as: UTF8.self)
                        guard !fname.isEmpty, !fname.contains("/"), fname != "..", fname != "." else {
                            throw ReplicationSocket.Failure(description: "bad file name in a full sync")
                        }
                        if fname != fileName {
                            if file >= 0 { close(file) }
                            file = open(staging + "/" + fname, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                            guard file >= 0 else { throw ReplicationSocket.Failure(description: "cannot create \(fname): \(String(cString: strerror(errno)))") }
                            fileName = fname
                        }
                        var at = 0
                        while at < frame[2].count {
                            let n = frame[2].withUnsafeBytes { write(file, $0.baseAddress! + at, $0.count - at) }
                            guard n > 0 else { throw ReplicationSocket.Failure(description: "cannot write \(fname): \(String(cString: strerror(errno)))") }
                            at += n
                        }
                        received += frame[2].count
                        engine.replication.noteSync(inProgress: true, bytes: received, generation: generation)
                    }
                } catch {
                    failure = error
                    throw error
                }
            }
        } catch {
            engine.replication.noteSyncFailure("\(failure ?? error)", generation: generation)
            throw FullSyncFailed(description: "\(failure ?? error)")
        }
        engine.replication.fullSyncDone(generation: generation)
        fullSyncFailures = 0
        engine.replication.noteSync(inProgress: false, generation: generation)
        engine.replication.noteSyncFailure("", generation: generation)
        logger.notice("replication link to \(host):\(port): full sync done in \(Clock.milliseconds() - started) ms (\(received >> 20) MB), at sequence \(latest)")
        var out = RESPWriter(version: .v2, capacity: 64)
        ReplicationFrame.ack(latest, into: &out)
        try socket.send(out.bytes)
    }

    /// Throws when this link should end: REPLICAOF changed, or the server stops.
    private func checkCurrent() throws {
        guard current else { throw ReplicationSocket.Failure(description: "the replication target changed") }
    }

    private func apply(_ socket: inout ReplicationSocket, timeout: Int) throws {
        var lastHeard = Clock.milliseconds()
        var lastAck = Clock.milliseconds()
        var unacked = false
        var out = RESPWriter(version: .v2, capacity: 64)
        // A hand-over (Takeover.swift): asked for, and the sequence the primary ended at.
        var takeoverSent = false
        var promoteAsked = false
        var readyAt: UInt64? = nil
        // Batches read but not yet written: every batch already here is written with the
        // others in one write where they follow one another (`Replication.apply`).
        var received: [Replication.ReceivedBatch] = []
        var receivedBytes = 0
        while true {
            if !takeoverSent && (promoteAsked || engine.replication.takeoverWanted) {
                out.reset()
                ReplicationFrame.takeover(into: &out)
                try socket.send(out.bytes)
                takeoverSent = true
                logger.notice("asked the primary to hand over")
            }
            if let readyAt, engine.replicationOffset >= readyAt {
                if promoteAsked {
                    engine.replication.promote(engine, afterHandOver: true)
                    logger.notice("promoted at the primary's request (FAILOVER) at sequence \(readyAt)")
                } else {
                    engine.replication.takeoverApplied()
                }
                // REPLICAOF NO ONE ends this link's generation; wait for it rather than reconnect.
                for _ in 0..<100 where current { usleep(20_000) }
                return
            }
            let frame: [[UInt8]]?
            do {
                frame = try socket.nextFrame(wait: !unacked && received.isEmpty)
            } catch {
                // The primary is gone (or the link broke) after sending these: they are
                // whole, so write them, as they would have been one by one.
                if !received.isEmpty { _ = try? engine.replication.apply(engine, received, generation: generation) }
                throw error
            }
            if let frame {
                lastHeard = Clock.milliseconds()
                if ReplicationFrame.isBatch(frame) {
                    // Taken with the others already here, then written together (below).
                    guard frame.count == 3, let sequence = ReplicationFrame.number(frame[1]) else {
                        throw ReplicationSocket.Failure(description: "bad BATCH frame")
                    }
                    received.append(.init(sequence: sequence, data: frame[2]))
                    receivedBytes += frame[2].count
                    if receivedBytes < Replication.joinedBytesLimit { continue }
                } else if ReplicationFrame.name(frame) == "PING" {
                    // Answered with an acknowledgement (the primary learns the lag each
                    // second), once the batches around it are written.
                    engine.replication.noteIO(generation: generation)
                    unacked = true
                    continue
                }
            }
            // The hand-over's frames come after the batches before them are written.
            if !received.isEmpty {
                engine.replication.noteIO(generation: generation)
                do {
                    try engine.replication.apply(engine, received, generation: generation)
                } catch .linkEnded {
                    throw ReplicationSocket.Failure(description: "the replication target changed")
                } catch {
                    logger.error("replication: \(error); the next sync will be a full one")
                    engine.replication.requireFullSync(generation: generation)
                    throw error
                }
                received.removeAll(keepingCapacity: true)
                receivedBytes = 0
                unacked = true
            }
            if let frame, !ReplicationFrame.isBatch(frame) {
                engine.replication.noteIO(generation: generation)
                switch ReplicationFrame.name(frame) {
                case "TAKEOVER-READY":
                    readyAt = frame.count == 2 ? ReplicationFrame.number(frame[1]) : nil
                case "PROMOTE":
                    promoteAsked = true
                default:
                    break
                }
                continue
            }
            // Nothing more buffered: report what was applied, at least once a second.
            let now = Clock.milliseconds()
            if unacked || now - lastAck >= 1000 {
                out.reset()
                ReplicationFrame.ack(engine.replicationOffset, into: &out)
                try socket.send(out.bytes)
                lastAck = now
                unacked = false
            }
            try checkCurrent()
            if now - lastHeard > Int64(timeout) * 1000 {
                throw ReplicationSocket.Failure(description: "nothing from the primary for \(timeout) s (repl-timeout)")
            }
        }
    }
}
