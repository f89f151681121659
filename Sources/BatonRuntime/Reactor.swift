import BatonEngine
import CBatonSystem
import FoundationEssentials
import Glibc
import Synchronization

/// batond's event loop: one thread that waits on many descriptors (epoll), deadlines and posted
/// work at once, and runs their handlers there, one at a time. The conductor's events, every
/// running attempt's pipes and pidfd, and the timers share it instead of a thread or a task each;
/// other threads hand it work with `post`, woken by an eventfd.
///
/// Handlers run on the reactor's thread, one at a time, and must not block; no lock of the
/// reactor is held while they run. Registering, removing, scheduling and posting may happen from
/// any thread, the reactor's own included.
///
/// A reactor is made by whoever owns the loop (batond makes one and hands it to each part; a
/// test makes its own, with a `ReactorClock` it advances) and passed in: there is no global one.
/// Its thread ends once the reactor is no longer referenced: its deinit wakes the thread.
public final class Reactor: Sendable {
    /// What a descriptor's handler is told: the epoll event mask.
    public typealias Handler = @Sendable (UInt32) -> Void
    /// A scheduled call, to cancel it.
    public struct TimerID: Hashable, Sendable { let value: UInt64 }

    private struct Deadline: Comparable {
        var at: ContinuousClock.Instant
        var id: UInt64
        static func < (lhs: Deadline, rhs: Deadline) -> Bool { (lhs.at, lhs.id) < (rhs.at, rhs.id) }
    }

    private struct State {
        /// Each watch's handler, by the token its epoll registration carries (never the fd: an
        /// event read in the same batch as a close, for a descriptor whose number a handler has
        /// since reused, names the old watch's token, which is gone, and is dropped).
        var handlers: [UInt64: Handler] = [:]
        /// The token of each descriptor watched now.
        var tokens: [Int32: UInt64] = [:]
        var deadlines = Heap<Deadline>()
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 1
        /// Work posted by `post`, run in order on the next turn.
        var posted: [@Sendable () -> Void] = []
        /// Work for the end of this turn (`atTurnEnd`), in order.
        var turnEnd: [@Sendable () -> Void] = []
    }

    /// The epoll and the eventfd that wakes it, shared with the reactor's thread, which closes
    /// them when it ends (after the reactor is gone, never while it waits on them).
    private let poller: Poller
    private var epoll: Int32 { poller.epoll }
    private var wakeFD: Int32 { poller.wakeFD }
    /// What deadlines are measured on.
    public let clock: any ReactorClock
    /// One buffer for reads on the loop (every attempt's pipes): only handlers, one at a time, use it.
    package nonisolated(unsafe) let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
    /// The kernel's id of the reactor's thread, once it runs (set once, by that thread).
    private let loopThread = Atomic<Int32>(0)
    /// Guards handlers, timers and posted work, which any thread may add to; never held while a
    /// handler or timer action runs.
    private let state = Locked(State())


    /// A reactor whose deadlines are measured on `clock` (a test's clock fires timers only as
    /// the test advances it); its thread starts now.
    public init(clock: any ReactorClock = SystemClock()) {
        self.clock = clock
        let poller = Poller(wakeToken: Self.wakeToken)
        self.poller = poller
        // Named from inside: a Linux thread starts with its creator's name (a Dispatch queue's, here).
        // The thread holds the reactor only while it handles a turn's events, never while it waits,
        // so that a reactor nobody holds ends: its deinit wakes the thread, which finds it gone.
        SystemThread.start(stackSize: 1 << 20) { [weak self] in
            baton_set_thread_name("baton-reactor")
            self?.loopThread.store(baton_gettid(), ordering: .releasing)
            var tokens = [UInt64](repeating: 0, count: 128)
            var events = [UInt32](repeating: 0, count: 128)
            while let timeout = self?.nextWait() {
                let count = baton_epoll_wait(poller.epoll, &tokens, &events, 128, timeout)
                guard let reactor = self else { break }
                reactor.handle(count, &tokens, &events)
            }
        }
    }

    deinit {
        poller.wake()
        readBuffer.deallocate()
    }

    /// Whether the caller runs on the reactor's thread.
    public var isCurrent: Bool { loopThread.load(ordering: .relaxed) == baton_gettid() }

    /// Stops the process (debug builds) unless the caller runs on the reactor's thread: where
    /// state that only the loop changes is touched.
    @inlinable @inline(__always)
    public func assertOnLoop(_ what: @autoclosure () -> String = "loop-owned state", file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        precondition(isCurrent, "\(what()) touched off the reactor's thread", file: file, line: line)
        #endif
    }

    /// Runs `work` on the reactor's thread, after what was posted before it.
    public func post(_ work: @escaping @Sendable () -> Void) {
        let first = state.withLock { state -> Bool in
            state.posted.append(work)
            return state.posted.count == 1
        }
        // From the loop itself no wake-up: it looks at the posted work before it waits again.
        if first && !isCurrent { wake() }
    }

    /// Runs `work` at the end of this turn of the loop: after its handlers, posted work and due
    /// timers, before it waits again. Called on the loop only (what it gathers is the turn's).
    public func atTurnEnd(_ work: @escaping @Sendable () -> Void) {
        // Checked in release builds too: work queued from another thread would wait for a turn nobody wakes.
        precondition(isCurrent, "atTurnEnd off the loop: work for the turn's end")
        state.withLock { $0.turnEnd.append(work) }
    }

    /// Calls `handler` whenever `fd` has input (or hangs up, or errs) until `remove(fd)`; with
    /// `priority`, when it has a priority event instead (a cgroup's `cgroup.events` changed).
    public func watch(_ fd: Int32, priority: Bool = false, _ handler: @escaping Handler) {
        watch(fd, events: priority ? Epoll.priority : Epoll.input, handler)
    }

    /// Calls `handler` with the event mask whenever `fd` has one of `events` (hang-ups and
    /// errors always), until `remove(fd)`.
    /// A descriptor watched again without `remove` gets the new handler (and a new token).
    public func watch(_ fd: Int32, events: UInt32, _ handler: @escaping Handler) {
        let token = state.withLock { state -> UInt64 in
            let token = state.nextID
            state.nextID += 1
            if let old = state.tokens.updateValue(token, forKey: fd) { state.handlers[old] = nil }
            state.handlers[token] = handler
            return token
        }
        // Still registered (watched again without `remove`): the registration takes the new token.
        if baton_epoll_ctl(epoll, Epoll.add, fd, events, token) != 0 && errno == EEXIST {
            _ = baton_epoll_ctl(epoll, Epoll.modify, fd, events, token)
        }
    }

    /// Changes which events of a watched `fd` its handler hears.
    public func modify(_ fd: Int32, events: UInt32) {
        guard let token = state.withLock({ $0.tokens[fd] }) else { return }
        _ = baton_epoll_ctl(epoll, Epoll.modify, fd, events, token)
    }

    /// Stops watching `fd` (before it is closed): no event of this watch reaches its handler
    /// after this, even one the loop has already read.
    public func remove(_ fd: Int32) {
        _ = baton_epoll_ctl(epoll, Epoll.remove, fd, 0, 0)
        state.withLock { state in
            if let token = state.tokens.removeValue(forKey: fd) { state.handlers[token] = nil }
        }
    }

    /// Stops watching `fd` and closes it with no `EPOLL_CTL_DEL`: closing the last descriptor of an
    /// open file takes it out of every epoll set. For a descriptor watched edge-triggered
    /// (`Epoll.edgeTriggered`) whose file no other process keeps: a child being spawned holds a
    /// copy until its exec, and the registration lasts that long; edge-triggered, a pipe or pidfd
    /// at its end reports nothing more (level-triggered, its hang-up would wake every wait), and
    /// its token is gone, so what it might report reaches no handler.
    public func close(_ fd: Int32) {
        state.withLock { state in
            if let token = state.tokens.removeValue(forKey: fd) { state.handlers[token] = nil }
        }
        _ = Glibc.close(fd)
    }

    /// The token of the wake-up eventfd's registration (watches' tokens start at 1).
    private static let wakeToken: UInt64 = 0

    /// Calls `action` on the reactor's thread once `delay` has passed.
    @discardableResult
    public func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> TimerID {
        let at = clock.now + max(delay, .zero)
        let (id, earliest) = state.withLock { state -> (UInt64, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.actions[id] = action
            let earliest = state.deadlines.peek().map { at < $0.at } ?? true
            state.deadlines.insert(Deadline(at: at, id: id))
            return (id, earliest)
        }
        // From the loop itself no wake-up: it measures its next wait after this turn.
        if earliest && !isCurrent { wake() }
        return TimerID(value: id)
    }

    /// Cancels a scheduled call that has not run yet.
    public func cancel(_ timer: TimerID) {
        state.withLock { state in
            guard state.actions.removeValue(forKey: timer.value) != nil else { return }
            // Cancelled deadlines stay in the heap until due; rebuild it before they outnumber the live ones.
            if state.deadlines.count > 2 * state.actions.count + 64 {
                let live = state.actions
                state.deadlines.removeAll { live[$0.id] == nil }
            }
        }
    }

    private func wake() { poller.wake() }

    /// How long the next wait may be, in milliseconds (-1: until woken): none when work is posted.
    private func nextWait() -> Int32 {
        state.withLock { $0.posted.isEmpty } ? nextTimeout() : 0
    }

    /// Runs the handlers of the `count` events a wait returned, then the posted work and the due timers.
    private func handle(_ count: Int32, _ tokens: inout [UInt64], _ events: inout [UInt32]) {
        if count < 0 && errno != EINTR { fatalError("reactor: epoll_wait failed: \(String(cString: strerror(errno)))") }
        for index in 0..<Int(max(count, 0)) {
            if tokens[index] == Self.wakeToken {
                var value: UInt64 = 0
                _ = read(wakeFD, &value, 8)
                continue
            }
            if let handler = state.withLock({ $0.handlers[tokens[index]] }) {
                assertNoLockHeld("a descriptor's handler")
                handler(events[index])
            }
        }
        runPosted()
        runDueTimers()
        runTurnEnd()
    }

    private func runTurnEnd() {
        while true {
            let work = state.withLock { state -> [@Sendable () -> Void] in
                defer { state.turnEnd = [] }
                return state.turnEnd
            }
            if work.isEmpty { return }
            for item in work {
                assertNoLockHeld("work at the turn's end")
                item()
            }
        }
    }

    /// Milliseconds until the earliest deadline (rounded up), or -1 when there is none (or the
    /// clock does not advance by itself: its owner wakes the loop when it moves it).
    private func nextTimeout() -> Int32 {
        guard let first = state.withLock({ $0.deadlines.peek() }) else { return -1 }
        let left = first.at - clock.now
        guard left > .zero else { return 0 }
        guard clock.advancesByItself else { return -1 }
        return Int32(clamping: (left.microseconds + 999) / 1_000)
    }

    private func runPosted() {
        let work = state.withLock { state -> [@Sendable () -> Void] in
            defer { state.posted = [] }
            return state.posted
        }
        for item in work {
            assertNoLockHeld("posted work")
            item()
        }
    }

    private func runDueTimers() {
        let now = clock.now
        while true {
            let due = state.withLock { state -> (@Sendable () -> Void)?? in
                guard let first = state.deadlines.peek(), first.at <= now else { return nil }
                state.deadlines.removeFirst()
                return .some(state.actions.removeValue(forKey: first.id))
            }
            guard let due else { return }
            assertNoLockHeld("a timer")
            due?()
        }
    }
}

/// epoll(7) event bits and control operations for the C shim (Glibc's module does not export them).
public enum Epoll {
    static let add: Int32 = 1
    static let remove: Int32 = 2
    static let modify: Int32 = 3
    public static let input: UInt32 = 0x001
    public static let priority: UInt32 = 0x002
    public static let output: UInt32 = 0x004
    public static let error: UInt32 = 0x008
    public static let hangUp: UInt32 = 0x010
    public static let readHangUp: UInt32 = 0x2000
    /// `EPOLLET`: reported when the state changes (new input, a hang-up), not while it lasts.
    public static let edgeTriggered: UInt32 = 0x8000_0000
}

/// A reactor's epoll and wake-up eventfd: held by the reactor and by its thread, closed when both
/// have let go, so that the thread never waits on a closed (or reused) descriptor.
private final class Poller: Sendable {
    let epoll: Int32
    let wakeFD: Int32

    init(wakeToken: UInt64) {
        epoll = baton_epoll_create()
        wakeFD = baton_eventfd()
        precondition(epoll >= 0 && wakeFD >= 0, "cannot create the reactor's epoll and eventfd: \(String(cString: strerror(errno)))")
        _ = baton_epoll_ctl(epoll, Epoll.add, wakeFD, Epoll.input, wakeToken)
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    deinit {
        close(epoll)
        close(wakeFD)
    }
}
