public import RESP

extension Engine {
    /// Runs one client's pipelined requests in order the way the server does, synchronously:
    /// runs of requests the command table lets group (`grouping`) go to the grouped executors
    /// (one MultiGet for GETs, one transaction and write batch for writes), every other request through
    /// `execute`. Appends the replies the server would send.
    ///
    /// The server's connections interleave the same executors with socket I/O and batch
    /// writes across clients; this is what the fuzzer and the tests drive, so the grouped paths
    /// are checked against running each request alone (`GroupedPathsTests`).
    @discardableResult
    public func executePipeline(_ requests: [[[UInt8]]], session: Session, out: inout RESPWriter) -> Outcome {
        var outcome = Outcome()
        var i = 0
        while i < requests.count {
            out.version = session.protocolVersion
            guard let kind = grouping(requests[i], session: session) else {
                outcome.absorb(execute(requests[i], session: session, out: &out))
                i += 1
                continue
            }
            var end = i + 1
            while end < requests.count && end - i < kind.mostRequests && grouping(requests[end], session: session) == kind { end += 1 }
            let run = Array(requests[i..<end])
            switch kind {
            case .read:
                i += executePlainGets(run, session: session, out: &out)
            case .batched:
                outcome.absorb(executeBatched(run, session: session, out: &out))
                i = end
            }
        }
        return outcome
    }
}
