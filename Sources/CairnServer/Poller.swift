import CairnEngine
import CEpoll
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// One epoll set per worker, watched by a single Dispatch read source on the worker's queue.
///
/// A Dispatch source per socket costs, on Linux, a round trip through libdispatch's manager
/// thread for every event: the event is handed to the worker queue, and once the handler returns
/// the source is re-armed by waking the manager again (an `eventfd` write and an `epoll_ctl`).
/// At one request per event that hand-off was half of cairnd's CPU. Here the worker's sockets
/// sit in their own epoll set, whose descriptor is what Dispatch watches: one wake-up serves
/// every socket that is ready, and the handler keeps collecting ready sockets for a few rounds
/// before it returns, so a busy worker re-arms rarely. Everything still runs on the worker's
/// serial queue, between its timers and other blocks.
///
/// `@unchecked Sendable`: used only on `queue` (the source's handlers run there).
final class Poller: @unchecked Sendable {
    /// `epoll_wait` rounds per wake-up: enough to pick up requests that arrive while a batch
    /// runs, few enough that timers and queued blocks are not held back.
    static let roundsPerWakeUp = 8

    private let epollFD: Int32
    private let queue: DispatchQueue
    private var source: (any DispatchSourceRead)?
    private let ready: (Int32, UInt32) -> Void
    private let roundEnded: () -> Void
    /// Scratch for `cairn_epoll_wait`: ready descriptors and their event bits.
    private let readyFDs: UnsafeMutableBufferPointer<Int32>
    private let readyEvents: UnsafeMutableBufferPointer<UInt32>
    private var cancelled = false

    /// `ready(fd, events)` runs on `queue` for each ready descriptor, and `roundEnded` after
    /// each batch of them.
    init(queue: DispatchQueue, ready: @escaping (Int32, UInt32) -> Void, roundEnded: @escaping () -> Void) {
        epollFD = cairn_epoll_create()
        precondition(epollFD >= 0, "epoll_create1: \(String(cString: strerror(errno)))")
        self.queue = queue
        self.ready = ready
        self.roundEnded = roundEnded
        readyFDs = .allocate(capacity: Int(cairn_epoll_batch))
        readyEvents = .allocate(capacity: Int(cairn_epoll_batch))
        let source = DispatchSource.makeReadSource(fileDescriptor: epollFD, queue: queue)
        // The poller lives as long as its worker, which lives as long as the server.
        source.setEventHandler { [unowned self] in drain() }
        let fd = epollFD
        source.setCancelHandler { Glibc.close(fd) }
        source.activate()
        self.source = source
    }

    deinit {
        readyFDs.deallocate()
        readyEvents.deallocate()
    }

    /// Serves ready sockets for up to `roundsPerWakeUp` rounds. Sockets still ready after the
    /// last round are served by a block queued behind whatever else waits on the queue, so
    /// nothing depends on Dispatch reporting the epoll descriptor again.
    private func drain() {
        Engine.prepareThread()
        for _ in 0..<Poller.roundsPerWakeUp {
            guard !cancelled else { return }
            let n = Int(cairn_epoll_wait(epollFD, readyFDs.baseAddress, readyEvents.baseAddress, 0))
            guard n > 0 else { return }
            for i in 0..<n { ready(readyFDs[i], readyEvents[i]) }
            roundEnded()
        }
        queue.async { [self] in drain() }
    }

    /// Watches `fd` for input (level-triggered, like a Dispatch read source).
    func add(_ fd: Int32) -> Bool {
        control(cairn_epoll_add, fd, writable: false)
    }

    /// Also wakes for room to write (`on`) or stops doing so.
    func watchWritable(_ fd: Int32, _ on: Bool) {
        _ = control(cairn_epoll_mod, fd, writable: on)
    }

    /// Stops watching `fd`; call before closing it.
    func remove(_ fd: Int32) {
        _ = control(cairn_epoll_del, fd, writable: false)
    }

    /// Stops serving (on `queue`); the epoll descriptor closes once the source is cancelled.
    func cancel() {
        cancelled = true
        source?.cancel()
        source = nil
    }

    /// The event bit for room to write, as `ready` handlers receive it.
    static var writableBit: UInt32 { cairn_epoll_out }

    private func control(_ operation: Int32, _ fd: Int32, writable: Bool) -> Bool {
        let events = cairn_epoll_in | cairn_epoll_rdhup | (writable ? cairn_epoll_out : 0)
        return cairn_epoll_ctl(epollFD, operation, fd, events) == 0
    }
}
