import BatonCore
import CBatonSystem
import FoundationEssentials
import Glibc
import Synchronization

/// One client connection of a server on the event loop (the `Reactor`): the Unix socket's, the
/// metrics listener's and the dashboard's. Everything it does happens on the loop — reads,
/// writes, closing; `send`, `endRequest` and `close` called from another thread are posted there,
/// in order — so its descriptor is never used by two threads and never reused under a send.
/// Its state is the loop's, with no lock (`LoopOwned`); other threads read only `isClosed`, which
/// the loop publishes.
public final class ServerConnection: Sendable, Hashable {
    /// The client's credentials from `SO_PEERCRED` (a TCP client has none: uid and pid are 0).
    public let peer: Peer
    let fd: Int32
    let token: UInt64
    let reactor: Reactor
    /// The unsent output allowed: for request-answer connections, and once `markStreaming`.
    private let outputLimits: (normal: Int, streaming: Int)
    private let budget: OutputBudget
    private let maxInFlight: Int
    /// Told once, on the loop, when the connection has closed.
    private let onClose: @Sendable (ServerConnection) -> Void
    let state: LoopOwned<State>
    /// `state.closed`, published for other threads.
    private let closedFlag = Atomic<Bool>(false)

    struct State {
        /// Bytes waiting for room in the socket, from `sent` on.
        var output: [UInt8] = []
        var sent = 0
        /// Bytes kept for this client elsewhere until they can be written (`hold`): unsent all the same.
        var held = 0
        var closed = false
        var watchingOut = false
        /// Requests received and not yet fully answered.
        var inFlight = 0
        /// The client shut its sending side.
        var inputEnded = false
        /// Reading stopped until enough requests in flight are answered.
        var readingPaused = false
        /// The connection follows a stream (`watch`, an event stream): the smaller output limit applies.
        var streaming = false
        /// Input the server's framing has not used yet (its own buffer: lines or an HTTP head).
        var splitter: FrameSplitter
        var input: [UInt8] = []
        /// When the request now arriving began (a request line), or when the exchange must end (HTTP).
        var partialSince: ContinuousClock.Instant?
        var deadline: ContinuousClock.Instant?
        /// An HTTP connection's one exchange, once its head is in.
        var exchange: HTTPExchange?
        /// Who waits for the unsent output to fall to a size (`whenDrained`).
        var drainWaiters: [(bytes: Int, body: @Sendable () -> Void)] = []
        /// Requests in flight that follow a stream (a run's end, a watch, live output), counted
        /// by `park`: a restart in place ends them with its last line (`+Quiesce`).
        var parked = 0
        /// A restart in place: nothing more is read; the connection ends once only parked requests are left.
        var quiescing = false
        /// The restart's last line is written: nothing more is.
        var sealed = false
        /// Output was written this turn: one flush at the turn's end sends it (`flushAtTurnEnd`).
        var flushDue = false
    }

    init(fd: Int32, token: UInt64, peer: Peer, reactor: Reactor, frameLimit: Int, outputLimits: (Int, Int), maxInFlight: Int = 1_024,
         budget: OutputBudget, onClose: @escaping @Sendable (ServerConnection) -> Void) {
        self.fd = fd
        self.token = token
        self.peer = peer
        self.reactor = reactor
        self.outputLimits = outputLimits
        self.budget = budget
        self.maxInFlight = max(maxInFlight, 1)
        self.onClose = onClose
        state = LoopOwned(State(splitter: FrameSplitter(limit: frameLimit)), on: reactor)
    }

    /// Whether the connection has closed (any thread).
    public var isClosed: Bool { closedFlag.load(ordering: .acquiring) }

    /// Marks the connection as following a stream: a client that stops reading it is dropped
    /// once `streamingOutputLimit` bytes wait.
    public func markStreaming() {
        guard reactor.isCurrent else { return reactor.post { [self] in markStreaming() } }
        state.access { $0.streaming = true }
    }

    var isStreaming: Bool { state.access { $0.streaming } }
    /// What waits to be written, held bytes included: what the server's total limit weighs.
    var unsentCount: Int { state.access { $0.output.count - $0.sent + $0.held } }

    /// Whether the server should read more from this connection now.
    var mayRead: Bool { state.access { !$0.closed && !$0.inputEnded && !$0.readingPaused && !$0.quiescing } }

    /// The server's framing state, changed in place (loop).
    func withInput<Result>(_ body: (inout State) -> Result) -> Result { state.access(body) }

    // MARK: Requests in flight

    /// Counts a request received (loop); true once the in-flight limit is reached.
    func beginRequest() -> Bool {
        state.access { state in
            state.inFlight += 1
            return state.inFlight >= maxInFlight
        }
    }

    /// Marks a request fully answered: reading resumes below half the limit, and a connection
    /// whose client is done sending closes once nothing is left to answer or to write.
    public func endRequest() {
        guard reactor.isCurrent else { return reactor.post { [self] in endRequest() } }
        let (closing, resume) = state.access { state -> (Bool, Bool) in
            state.inFlight = max(state.inFlight - 1, 0)
            assert(state.parked <= state.inFlight, "a request ended parked: unpark before its answer")
            if state.inputEnded && state.inFlight == 0 { return (true, false) }
            guard state.readingPaused && state.inFlight <= maxInFlight / 2 else { return (false, false) }
            state.readingPaused = false
            if state.splitter.buffered > 0 { state.partialSince = .now }
            return (false, true)
        }
        if closing { closeWhenWritten() } else if resume { watch() }
        settleIfQuiet()
    }

    /// Stops reading until requests in flight are answered (loop); a half line held meanwhile is not timed as a slow client's.
    func pauseReading() {
        state.access { $0.readingPaused = true; $0.partialSince = nil }
        watch()
    }

    /// The client will send no more (loop): close once the last answer is written.
    func endOfInput() {
        let idle = state.access { state -> Bool in
            state.inputEnded = true
            return state.inFlight == 0
        }
        if idle { closeWhenWritten() } else { watch() }
    }

    // MARK: Output

    /// Sends one line (a newline is added).
    public func send(_ line: [UInt8]) { write(line, newline: true) }

    /// Writes bytes as the socket takes them. Drops the connection when the client does not read
    /// and its unsent output passes the limit.
    public func write(_ bytes: [UInt8]) { write(bytes, newline: false) }

    /// `bytes`, and a newline after them where asked, added to the output as they are: a line
    /// with its newline made as a new array cost a copy of the line (issue 39).
    private func write(_ bytes: [UInt8], newline: Bool) {
        guard reactor.isCurrent else { return reactor.post { [self] in write(bytes, newline: newline) } }
        assertNoLockHeld("a connection's write")
        // Nothing is kept for a closed connection, nor after a restart's last line: nor counted.
        let over = state.access { state -> Bool? in
            guard !state.closed, !state.sealed else { return nil }
            state.output.append(contentsOf: bytes)
            if newline { state.output.append(UInt8(ascii: "\n")) }
            return isOver(state)
        }
        guard let over else { return }
        budget.add(bytes.count + (newline ? 1 : 0))
        if over { return closeIfStillOver() }
        flushAtTurnEnd()
    }

    /// Past the limit: what this turn wrote and has not sent yet (`flushAtTurnEnd`) is no sign of
    /// a slow client (sent at each write, the socket took it), so it is sent first; only what the
    /// socket refuses counts (review-loop6 finding 6: a follower reading fast was dropped).
    private func closeIfStillOver() {
        sendTurnOutput()
        if state.access({ !$0.closed && isOver($0) }) { close() }
    }

    /// Sends what this turn wrote now rather than at the turn's end (`Server.enforceBudget` too).
    func sendTurnOutput() { if takeFlushDue() { flush() } }

    /// What a turn writes goes out in one send at its end (`Reactor.atTurnEnd`): the answers of a
    /// commit's batch to one client were a `sendto` each (issue 39). Before the loop waits again,
    /// so no later than before.
    private func flushAtTurnEnd() {
        let first = state.access { state -> Bool in
            defer { state.flushDue = true }
            return !state.flushDue
        }
        if first { reactor.atTurnEnd { [self] in if takeFlushDue() { flush() } } }
    }

    /// Whether a flush at the turn's end is due; it is not any more.
    private func takeFlushDue() -> Bool {
        state.access { state in
            defer { state.flushDue = false }
            return state.flushDue
        }
    }

    /// Counts bytes held for this client until they can be written (negative: released); past the
    /// connection's limit, it closes.
    public func hold(_ bytes: Int) {
        guard reactor.isCurrent else { return reactor.post { [self] in hold(bytes) } }
        let over = state.access { state -> Bool? in
            guard !state.closed else { return nil }
            state.held += bytes
            return isOver(state)
        }
        guard let over else { return }
        budget.add(bytes)
        if over { closeIfStillOver() }
    }

    /// Whether what waits for the client, written or held, is past its limit.
    private func isOver(_ state: State) -> Bool {
        state.output.count - state.sent + state.held > (state.streaming ? outputLimits.streaming : outputLimits.normal)
    }

    /// Calls `body` on the loop once at most `bytes` of output wait to be written, or the
    /// connection has closed.
    public func whenDrained(below bytes: Int, _ body: @escaping @Sendable () -> Void) {
        guard reactor.isCurrent else { return reactor.post { [self] in whenDrained(below: bytes, body) } }
        let now = state.access { state -> Bool in
            if state.closed || state.output.count - state.sent <= bytes { return true }
            state.drainWaiters.append((bytes, body))
            return false
        }
        if now { body() }
    }

    /// The drain waiters whose size the unsent output is down to (all once closed), taken out.
    private func drainedWaiters() -> [@Sendable () -> Void] {
        state.access { state in
            guard !state.drainWaiters.isEmpty else { return [] }
            let (unsent, closed) = (state.output.count - state.sent, state.closed)
            let due = state.drainWaiters.filter { closed || unsent <= $0.bytes }
            state.drainWaiters.removeAll { closed || unsent <= $0.bytes }
            return due.map(\.body)
        }
    }

    /// Writes what the socket takes of the buffered output (loop); watches for room when it is full.
    func flush() {
        // Taken out of the state for the system calls; only the loop writes, so nothing comes
        // in between, and what is left goes back.
        var (pending, sent, closed) = state.access { state -> ([UInt8], Int, Bool) in
            defer { state.output = []; state.sent = 0 }
            return (state.output, state.sent, state.closed)
        }
        guard !closed else { return }
        let before = pending.count - sent
        var failed = false
        while sent < pending.count {
            let n = pending.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, pending.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            failed = true
            break
        }
        budget.add(-(before - (pending.count - sent)))
        let (changed, finished) = state.access { state -> (Bool, Bool) in
            if sent < pending.count {
                state.output = pending
                state.sent = sent
            }
            let wantOut = sent < pending.count
            defer { state.watchingOut = wantOut }
            return (wantOut != state.watchingOut, !wantOut && state.inputEnded && state.inFlight == 0)
        }
        if failed || finished { return close() }
        if changed { watch() }
        for body in drainedWaiters() { body() }
    }

    /// Closes once what waits is written (half-closed clients, one-shot HTTP answers).
    func closeWhenWritten() {
        guard reactor.isCurrent else { return reactor.post { [self] in closeWhenWritten() } }
        if state.access({ $0.output.count - $0.sent }) == 0 { return close() }
        state.access { $0.inputEnded = true; $0.inFlight = 0 }
        // The turn's unsent answer: sent now, which closes once it is all out (no epoll_ctl first).
        sendTurnOutput()
        if !state.access({ $0.closed }) { watch() }
    }

    /// Sets the epoll interest from the state: input while reading, output while output waits.
    func watch() {
        let events = state.access { state -> UInt32? in
            guard !state.closed else { return nil }
            var events: UInt32 = 0
            if !state.inputEnded && !state.readingPaused && !state.quiescing { events |= Epoll.input | Epoll.readHangUp }
            if state.watchingOut { events |= Epoll.output }
            return events
        }
        if let events { reactor.modify(fd, events: events) }
    }

    /// Closes the connection (any thread; done on the loop): later sends are dropped, the server
    /// is told once.
    public func close() {
        guard reactor.isCurrent else { return reactor.post { [self] in close() } }
        // What this turn wrote goes out first, as when each write was sent at once (an error
        // line then the close). A send that fails closes it there, and this finds it closed.
        sendTurnOutput()
        let unsent = state.access { state -> Int? in
            guard !state.closed else { return nil }
            state.closed = true
            defer { state.output = []; state.sent = 0; state.held = 0 }
            return state.output.count - state.sent + state.held
        }
        guard let unsent else { return }
        closedFlag.store(true, ordering: .releasing)
        budget.add(-unsent)
        reactor.remove(fd)
        Glibc.close(fd)
        onClose(self)
        for body in drainedWaiters() { body() }
    }

    public static func == (lhs: ServerConnection, rhs: ServerConnection) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension ServerConnection: Caller {}

/// The unsent output of every connection together; past its limit the server is woken to drop
/// the connections holding the most. Counted on the loop (by the connections' writes), read
/// anywhere.
final class OutputBudget: Sendable {
    let limit: Int
    private let bytes = Atomic<Int>(0)
    /// The loop's: set there (`onOver`) and called there.
    private let over: LoopOwned<(@Sendable () -> Void)?>

    init(limit: Int, reactor: Reactor) {
        self.limit = limit
        over = LoopOwned(nil, on: reactor)
    }

    /// What to do when the total passes the limit (set on the loop).
    func onOver(_ action: @escaping @Sendable () -> Void) { over.access { $0 = action } }

    var total: Int { bytes.load(ordering: .relaxed) }
    var isOver: Bool { total > limit }

    func add(_ delta: Int) {
        guard delta != 0 else { return }
        let (_, now) = bytes.add(delta, ordering: .relaxed)
        if delta > 0, now > limit, now - delta <= limit { over.access { $0 }?() }
    }
}
