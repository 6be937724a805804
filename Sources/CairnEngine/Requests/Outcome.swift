public import RESP

/// What running a request asks of the server besides sending the reply it wrote.
///
/// Every executor returns one (`execute`, `executeBatched`, the grouped write's `reply`,
/// `retryBlocked`), so the server learns it from the call. While a request runs, its handler
/// records into `Session.outcome`; the executor hands that over and clears it.
public struct Outcome: Sendable {
    /// The request wrote to the WAL: under `appendfsync always` its reply waits for a sync.
    public var wroteToWAL = false
    /// QUIT, SHUTDOWN, ACL DELUSER of oneself: close once the replies are written.
    public var closeAfterReply = false
    /// MONITOR: from now on send this client a line for every request (`Engine.monitors`).
    public var startsMonitoring = false
    /// Slow work (a backup, WAIT) to run off the connection's queue; it writes the reply, and
    /// the client's later requests wait for it.
    public var deferred: DeferredReply? = nil
    /// The deferred work is a big collection command's (LongWork.swift): CPU for seconds,
    /// which the server runs below its workers' priority.
    public var runsInBackground = false
    /// A blocking pop that found nothing: park the client until it is served or its wait ends.
    public var blocked: BlockRequest? = nil
    /// PSYNC accepted: once the replies before it are sent, the socket belongs to a replica feeder.
    public var replicaHandOff: ReplicaHandOff? = nil

    public typealias DeferredReply = @Sendable (inout RESPWriter) -> Void

    public init() {}

    /// Nothing beyond the reply.
    public var isPlain: Bool {
        !wroteToWAL && !closeAfterReply && !startsMonitoring && deferred == nil && blocked == nil && replicaHandOff == nil
    }

    /// Adds what a later request of the same group asked.
    mutating func absorb(_ later: Outcome) {
        wroteToWAL = wroteToWAL || later.wroteToWAL
        closeAfterReply = closeAfterReply || later.closeAfterReply
        startsMonitoring = startsMonitoring || later.startsMonitoring
        if deferred == nil {
            deferred = later.deferred
            runsInBackground = later.runsInBackground
        }
        blocked = blocked ?? later.blocked
        replicaHandOff = replicaHandOff ?? later.replicaHandOff
    }
}

extension Session {
    /// What the request that ran asked of the server; clears it for the next one.
    func takeOutcome() -> Outcome {
        let taken = outcome
        if !taken.isPlain { outcome = Outcome() }
        return taken
    }
}
