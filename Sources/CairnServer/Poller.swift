import CairnEngine
import CEpoll
import Dispatch
import Synchronization
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
/// When a round finds nothing after one that served requests, the drain waits in `epoll_wait`
/// for up to `idleWaitMilliseconds` before giving the thread back. At one request per client
/// (`-P 1`) the next request usually comes within that time, and the kernel wakes this thread
/// directly: handing back instead costs a wake-up of Dispatch's manager thread to re-arm the
/// source and two more (manager, then a pool thread) for the next request, each a chance for
/// the scheduler to run something else first. Blocks for the queue are posted with `post`,
/// which wakes a waiting drain through an eventfd so they never wait behind it; anything else
/// queued there (timers) waits at most `idleWaitMilliseconds`.
///
/// `@unchecked Sendable`: used only on `queue` (the source's handlers run there), except
/// `post`, which any thread may call (it touches only atomics and the eventfd).
final class Poller: @unchecked Sendable {
    /// `epoll_wait` rounds per wake-up: enough to pick up requests that arrive while a batch
    /// runs, few enough that timers and queued blocks are not held back.
    static let roundsPerWakeUp = 8
    /// How long a drain that just served requests waits for more before returning.
    static let idleWaitMilliseconds: Int32 = 1

    /// Wakes a drain waiting in `epoll_wait` when a block is posted to the queue.
    private let wakeFD: Int32
    /// Blocks `post`ed and not yet started, and whether a drain is waiting: each side writes
    /// its own then reads the other's (sequentially consistent), so a block posted as the
    /// drain starts to wait is either seen by the drain or pokes it.
    private let postedBlocks = Atomic<Int>(0)
    private let waiting = Atomic<Bool>(false)

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
        wakeFD = cairn_eventfd_create()
        precondition(wakeFD >= 0, "eventfd: \(String(cString: strerror(errno)))")
        precondition(cairn_epoll_ctl(epollFD, cairn_epoll_add, wakeFD, cairn_epoll_in) == 0, "epoll_ctl: \(String(cString: strerror(errno)))")
        self.queue = queue
        self.ready = ready
        self.roundEnded = roundEnded
        readyFDs = .allocate(capacity: Int(cairn_epoll_batch))
        readyEvents = .allocate(capacity: Int(cairn_epoll_batch))
        let source = DispatchSource.makeReadSource(fileDescriptor: epollFD, queue: queue)
        // The poller lives as long as its worker, which lives as long as the server.
        source.setEventHandler { [unowned self] in drain() }
        let fd = epollFD
        let wake = wakeFD
        source.setCancelHandler {
            Glibc.close(fd)
            Glibc.close(wake)
        }
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
        var served = false
        for _ in 0..<Poller.roundsPerWakeUp {
            guard !cancelled else { return }
            var n = Int(cairn_epoll_wait(epollFD, readyFDs.baseAddress, readyEvents.baseAddress, 0))
            if n == 0 && served { n = waitIdle() }
            var woken = false
            for i in 0..<max(n, 0) {
                if readyFDs[i] == wakeFD {
                    woken = true
                } else {
                    served = true
                    ready(readyFDs[i], readyEvents[i])
                }
            }
            if n > (woken ? 1 : 0) { roundEnded() }
            // A posted block waits on the queue: give the thread back so it runs.
            if woken {
                cairn_eventfd_clear(wakeFD)
                break
            }
            guard n > 0 else { return }
        }
        queue.async { [self] in drain() }
    }

    /// Waits up to `idleWaitMilliseconds` for a ready socket, unless a posted block is waiting
    /// for the queue. Returns what `epoll_wait` returned.
    private func waitIdle() -> Int {
        waiting.store(true, ordering: .sequentiallyConsistent)
        defer { waiting.store(false, ordering: .sequentiallyConsistent) }
        if postedBlocks.load(ordering: .sequentiallyConsistent) > 0 { return 0 }
        return Int(cairn_epoll_wait(epollFD, readyFDs.baseAddress, readyEvents.baseAddress, Poller.idleWaitMilliseconds))
    }

    /// Runs `block` on the queue (from any thread), waking a drain that waits for sockets.
    func post(_ block: @escaping @Sendable () -> Void) {
        postedBlocks.add(1, ordering: .sequentiallyConsistent)
        queue.async { [self] in
            postedBlocks.subtract(1, ordering: .sequentiallyConsistent)
            block()
        }
        if waiting.load(ordering: .sequentiallyConsistent) { cairn_eventfd_signal(wakeFD) }
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
