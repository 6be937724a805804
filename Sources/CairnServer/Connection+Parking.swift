import CairnEngine
import Dispatch

/// A connection whose blocking pop (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) found nothing is
/// parked: no worker waits for it, its later requests wait (they are still read, so a hang-up
/// is seen and the client forgotten), and it is retried on this queue when a push wakes it
/// (`Engine.blocking`), until served, timed out, unblocked (CLIENT UNBLOCK) or closed.
extension Connection {
    func park(_ request: BlockRequest) {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        parked = request
        let worker = worker
        worker.engine.park(
            session, request,
            wake: { [weak self] in worker.post { [weak self] in self?.retryParked(request) } },
            unblock: { [weak self] withError in worker.post { [weak self] in self?.finishParked(request, .unblocked(withError: withError)) } })
        if request.timeoutMilliseconds > 0 {
            let timer = DispatchSource.makeTimerSource(queue: worker.queue)
            timer.schedule(deadline: .now() + .milliseconds(Int(request.timeoutMilliseconds)), leeway: .milliseconds(1))
            timer.setEventHandler { [weak self] in self?.finishParked(request, .timedOut) }
            timer.activate()
            parkTimer = timer
        }
        // Parked as retrying: this first retry sees a push that landed since the handler's try.
        // `drive`, which called us, goes on by itself when it serves.
        retryParked(request, resume: false)
    }

    /// Woken by a push: retries the pop; served, answers and runs the requests that waited.
    func retryParked(_ request: BlockRequest, resume: Bool = true) {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed, parked === request else { return }
        let start = machine.position
        machine.output.version = session.protocolVersion
        guard let outcome = worker.engine.retryBlocked(session, request, out: &machine.output) else { return }
        unpark()
        machine.unparked(.init(holdsForSync: outcome.wroteToWAL && worker.engine.repliesWaitForSync), from: start)
        if resume { drive() }
    }

    /// The wait ended without an element (timeout, CLIENT UNBLOCK): answers and goes on.
    func finishParked(_ request: BlockRequest, _ ending: BlockRequest.Ending) {
        dispatchPrecondition(condition: .onQueue(worker.queue))
        guard !closed, parked === request else { return }
        let start = machine.position
        endParked(ending)
        machine.unparked(.init(), from: start)
        drive()
    }

    /// Ends the wait of the parked request (also when the connection closes).
    func endParked(_ ending: BlockRequest.Ending) {
        guard let request = parked else { return }
        machine.output.version = session.protocolVersion
        worker.engine.endBlock(session, request, ending, out: &machine.output)
        unpark()
    }

    private func unpark() {
        parked = nil
        parkTimer?.cancel()
        parkTimer = nil
    }
}
