import CairnEngine
import Dispatch
import Logging
import RESP
import Synchronization
import func CairnSync.withThreadName
#if canImport(Glibc)
import Glibc
#endif

/// The primary's end of one replica's link, on a thread of its own: after PSYNC it sends a
/// full sync's files or `+CONTINUE`, then the WAL's batches as they are written (`WALFeed`),
/// a `PING` each second, and reads the replica's `REPLCONF ACK`s. A replica that stops reading
/// holds only this thread: it is dropped after `repl-timeout`, never slowing clients.
final class ReplicaFeeder: @unchecked Sendable {
    private let engine: Engine
    private let logger: Logger
    private var socket: ReplicationSocket
    private let handOff: ReplicaHandOff
    private let record: ClientRecord
    private let pending: [UInt8]
    private let stopped = Atomic<Bool>(false)
    private let queue: DispatchQueue
    /// Stops feeding when set (shutdown).
    private let isStopping: @Sendable () -> Bool

    init(fd: Int32, engine: Engine, handOff: ReplicaHandOff, record: ClientRecord, pending: [UInt8], logger: Logger, isStopping: @escaping @Sendable () -> Bool) {
        self.engine = engine
        self.logger = logger
        self.socket = ReplicationSocket(fd: fd)
        self.handOff = handOff
        self.record = record
        self.pending = pending
        self.isStopping = isStopping
        self.queue = DispatchQueue(label: "cairn.replica-feeder.\(record.id)")
    }

    func start() {
        record.markReplica()
        record.setKillHandler { [weak self] in self?.stopped.store(true, ordering: .relaxed) }
        queue.async { withThreadName("cairn-feeder") { self.run() } }
    }

    private var name: String { "replica \(record.address) (client \(record.id))" }

    /// The replica's address as it announced it (`REPLCONF ip-address`), else its connection's.
    private var replicaHost: String {
        handOff.announcedIP.isEmpty ? String(record.address.split(separator: ":").dropLast().joined(separator: ":")) : handOff.announcedIP
    }

    private func run() {
        engine.replication.keepWAL(engine)
        let generation = engine.replication.feedGeneration
        engine.replication.replicaConnected(.init(
            clientID: record.id, address: replicaHost, listeningPort: handOff.listeningPort, state: handOff.full ? "wait_bgsave" : "online",
            acked: handOff.full ? 0 : handOff.from - 1, lastAck: Clock.milliseconds()))
        defer {
            engine.replication.replicaDisconnected(record.id)
            engine.clients.remove(record.id)
            socket.close()
        }
        let timeout = engine.configuration.replTimeout
        socket.makeBlocking(receiveTimeoutMilliseconds: 1, sendTimeoutSeconds: timeout)
        do {
            try socket.send(pending)
            var from = handOff.from
            if handOff.full {
                from = try sendFullSync()
            } else {
                try socket.send("+CONTINUE \(handOff.id)\r\n")
            }
            socket.startFrames()
            try stream(from: from, generation: generation, timeout: timeout)
        } catch {
            logger.warning("\(name): link closed: \(error)")
        }
    }

    /// Streams a checkpoint; returns the sequence the replica reports its copy ends at.
    private func sendFullSync() throws -> UInt64 {
        try socket.send("+FULLRESYNC \(handOff.id) \(engine.replicationOffset)\r\n")
        let started = Clock.milliseconds()
        let checkpoint = try engine.replication.makeSyncCheckpoint(engine)
        defer { engine.replication.remove(checkpoint) }
        engine.replication.replicaState(record.id, "send_bulk")
        logger.notice("\(name): full sync: sending a checkpoint of \(checkpoint.files.count) files, \(checkpoint.totalBytes >> 20) MB")
        var out = RESPWriter(version: .v2, capacity: 1 << 20)
        ReplicationFrame.snapshot(totalBytes: checkpoint.totalBytes, files: checkpoint.files.count, into: &out)
        try socket.send(out.bytes)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        for file in checkpoint.files {
            let fd = open(checkpoint.directory + "/" + file.name, O_RDONLY)
            guard fd >= 0 else { throw ReplicationSocket.Failure(description: "cannot open \(file.name) of the checkpoint: \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var first = true
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n >= 0 else { throw ReplicationSocket.Failure(description: "cannot read \(file.name) of the checkpoint: \(String(cString: strerror(errno)))") }
                if n == 0 && !first { break }
                out.reset()
                chunk.withUnsafeBytes { ReplicationFrame.file(file.name, chunk: UnsafeRawBufferPointer(rebasing: $0[0..<n]), into: &out) }
                try socket.send(out.bytes)
                first = false
                if n == 0 { break }
            }
        }
        out.reset()
        ReplicationFrame.synced(into: &out)
        try socket.send(out.bytes)
        // The replica switches the copy in, then reports where it ends.
        socket.startFrames()
        let deadline = Clock.milliseconds() + Int64(engine.configuration.replTimeout) * 1000 + 600_000
        while Clock.milliseconds() < deadline && !stopped.load(ordering: .relaxed) {
            guard let frame = try socket.nextFrame() else { continue }
            if frame.count == 3, ReplicationFrame.name(frame) == "REPLCONF", let seq = ReplicationFrame.number(frame[2]) {
                engine.replication.acked(record.id, seq)
                engine.replication.replicaState(record.id, "online")
                logger.notice("\(name): full sync done in \(Clock.milliseconds() - started) ms; streaming from sequence \(seq + 1)")
                return seq + 1
            }
        }
        throw ReplicationSocket.Failure(description: "the replica did not report its copy switched in")
    }

    /// After `TAKEOVER-READY`: the replica closes this link once it has applied everything and
    /// is a primary. Following it only then, this server's PSYNC finds it promoted (one that
    /// came earlier would reach a replica, and be cut when the promotion changes its id). A
    /// replica that neither closes nor answers within 5 s is followed anyway.
    private func awaitPromotion() {
        let deadline = Clock.milliseconds() + 5000
        while Clock.milliseconds() < deadline && !stopped.load(ordering: .relaxed) && !isStopping() {
            do {
                guard let frame = try socket.nextFrame() else { continue }
                if frame.count == 3, ReplicationFrame.name(frame) == "REPLCONF", let seq = ReplicationFrame.number(frame[2]) {
                    engine.replication.acked(record.id, seq)
                }
            } catch {
                return  // closed: the replica is a primary now
            }
        }
        logger.warning("\(name) did not close its link within 5 s of the hand-over; following it anyway")
    }

    private func stream(from: UInt64, generation: Int, timeout: Int) throws {
        let feed = WALFeed(engine: engine, from: from)
        defer { feed.close() }
        var out = RESPWriter(version: .v2, capacity: 1 << 20)
        var lastPing = Clock.milliseconds()
        var lastHeard = Clock.milliseconds()
        // A hand-over (Takeover.swift): the sequence this primary ends at for the replica.
        var handOverTarget: UInt64? = nil
        defer { if handOverTarget != nil { engine.replication.abandonHandOver(record.id) } }
        while !stopped.load(ordering: .relaxed) && !isStopping() && engine.replication.feedGeneration == generation {
            out.reset()
            _ = try feed.read(into: &out, maxBytes: 4 << 20)
            if let target = handOverTarget, feed.next > target {
                ReplicationFrame.takeoverReady(target, into: &out)
                try socket.send(out.bytes)
                handOverTarget = nil
                awaitPromotion()
                engine.replication.handedOver(engine, host: replicaHost, port: handOff.listeningPort)
                return
            }
            if engine.replication.takePromoteRequest(for: record.id) { ReplicationFrame.promote(into: &out) }
            let now = Clock.milliseconds()
            if now - lastPing >= 1000 {
                ReplicationFrame.ping(into: &out)
                lastPing = now
            }
            if !out.bytes.isEmpty { try socket.send(out.bytes) }
            // Acknowledgements: wait up to 1 ms for the first, then take what else arrived. The
            // wait also paces the WAL reads (about a thousand a second, each sending what
            // accumulated), where reading again at once would spin on a busy primary.
            var waitForFirst = true
            while let frame = try socket.nextFrame(wait: waitForFirst) {
                waitForFirst = false
                lastHeard = Clock.milliseconds()
                if frame.count == 3, ReplicationFrame.name(frame) == "REPLCONF", frame[1].elementsEqual("ACK".utf8) || frame[1].elementsEqual("ack".utf8),
                   let seq = ReplicationFrame.number(frame[2]) {
                    engine.replication.acked(record.id, seq)
                } else if frame.count == 2, ReplicationFrame.name(frame) == "REPLCONF", String(decoding: frame[1], as: UTF8.self).uppercased() == "TAKEOVER" {
                    if handOverTarget == nil && engine.replication.beginHandOver(to: record.id) {
                        // Writes admitted just before the refusal began land first.
                        usleep(50_000)
                        handOverTarget = engine.replicationOffset
                        logger.notice("\(name) takes over: refusing writes; it gets everything up to sequence \(handOverTarget!)")
                    }
                }
            }
            if Clock.milliseconds() - lastHeard > Int64(timeout) * 1000 {
                throw ReplicationSocket.Failure(description: "no acknowledgement for \(timeout) s (repl-timeout)")
            }
        }
    }
}
