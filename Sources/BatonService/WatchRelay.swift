import BatonCore

/// Sends one watcher what was committed after its cursor (`after`: the last transition it saw
/// before batond restarted or stopped), then the live updates: those that come while the replay
/// is read and sent are held (counted against the client's unsent output, as an output
/// follower's are), and a live update the replay already sent, by run and sequence, is dropped.
/// So nothing committed after the cursor is missed and none is sent twice. The replay is read
/// by the read driver, off the loop; everything else here is the loop's.
final class WatchRelay: Sendable {
    private struct Sent: Hashable {
        var run: Int64
        var seq: Int
    }

    private struct State {
        /// Live updates (their lines) that came while the replay was read or sent; nil once they go straight out.
        var held: [(Sent?, [UInt8])]? = []
        var heldBytes = 0
        /// What the replay sent: the live update of one of them (its commit told late) is not sent again.
        var sent: Set<Sent> = []
        /// The watch failed (its replay could not be read): nothing more goes out.
        var over = false
    }

    /// Updates sent at a time; the next page once the client has read most of them.
    static let page = 256
    static let drain = 64 << 10

    private let exchange: Exchange
    private let reactor: Reactor
    private let state: LoopOwned<State>
    /// Where a live update's snapshot is written once.
    private let rendered: RenderedRuns

    init(_ exchange: Exchange, reactor: Reactor, rendered: RenderedRuns) {
        self.exchange = exchange
        self.reactor = reactor
        self.rendered = rendered
        state = LoopOwned(State(), on: reactor)
    }

    /// A live update (on the loop): held while the replay goes out, then sent unless the replay had it.
    func live(_ update: RunUpdate) {
        let key = update.transition.map { Sent(run: $0.runID, seq: $0.seq) }
        let closed = exchange.connection.isClosed
        let (send, line) = state.access { state -> (Bool, [UInt8]?) in
            if state.over || closed { return (false, nil) }
            if let key, state.sent.contains(key) { return (false, nil) }
            let line = rendered.updateLine(exchange.id, update)
            guard state.held != nil else { return (true, line) }
            state.held!.append((key, line))
            state.heldBytes += line.count
            return (false, line)
        }
        guard let line else { return }
        if send { exchange.connection.send(line) } else { exchange.connection.hold(line.count) }
    }

    /// The replay is read: the `watching` event (saying how many were left out), then its updates
    /// a page at a time, then what was held.
    func replayed(_ replay: Replay, visible: (RunUpdate) -> Bool) {
        let updates = replay.updates.filter(visible)
        state.access { state in
            state.sent = Set(updates.compactMap { $0.transition.map { Sent(run: $0.runID, seq: $0.seq) } })
        }
        var started = Response(id: exchange.id, ok: nil)
        started.event = "watching"
        started.skipped = replay.skipped > 0 ? Int64(replay.skipped) : nil
        exchange.event(started)
        send(updates[...])
    }

    private func send(_ rest: ArraySlice<RunUpdate>) {
        guard !exchange.connection.isClosed else { return letGo() }
        for update in rest.prefix(Self.page) { exchange.event(line: Response.updateLine(exchange.id, update)) }
        let next = rest.dropFirst(Self.page)
        guard !next.isEmpty else { return caughtUp() }
        exchange.connection.whenDrained(below: Self.drain) { [self] in
            reactor.onLoop { [self] in send(next) }
        }
    }

    /// The replay is out: what was held goes (but what the replay sent), and the rest straight out.
    private func caughtUp() {
        let (held, bytes) = state.access { state -> ([(Sent?, [UInt8])], Int) in
            defer { state.held = nil; state.heldBytes = 0 }
            return (state.held ?? [], state.heldBytes)
        }
        if bytes != 0 { exchange.connection.hold(-bytes) }
        let sent = state.access { $0.sent }
        for (key, line) in held where key.map({ !sent.contains($0) }) ?? true { exchange.connection.send(line) }
    }

    /// The replay could not be read, or the client went: what was held is let go.
    func letGo() {
        let bytes = state.access { state -> Int in
            defer { state.held = []; state.heldBytes = 0; state.over = true }
            return state.heldBytes
        }
        if bytes != 0 { exchange.connection.hold(-bytes) }
    }
}
