import BatonCore

/// The `output` op: a run's output from an offset, out of the history, then (with `follow`) live
/// until the run ends.
extension Service {
    /// The most bytes of history read at once while catching up; the next page is read once the
    /// client has taken all but this much of what was sent (a page's events, base64 in JSON, are
    /// about 1.4 times its bytes: two pages in flight stay under the 1 MiB a streaming client may
    /// leave unread).
    static let outputPage = 256 << 10

    /// The most runs one line of a `history` answer carries: a longer answer is sent in pages.
    public static let historyPage = 500
    /// A history page is read once the client has taken all but this much of the ones before.
    static let historyDrain = 256 << 10

    func output(_ exchange: Exchange, _ generation: Generation) {
        reads.read({ [self] () async throws(BatonError) -> RunSnapshot in
            try await outputRun(exchange.request, generation, exchange.peer)
        }) { [self] result in
            switch result {
            case let .success(run): sendOutput(of: run, exchange)
            case let .failure(error): exchange.fail(error)
            }
        }
    }

    /// On the loop, with the run found: its history, a page at a time through the read driver,
    /// then (followed) its live output.
    private func sendOutput(of run: RunSnapshot, _ exchange: Exchange) {
        let from = max(exchange.request.from ?? 0, 0)
        let relay = OutputRelay(exchange, run: run, from: from, history: history, reads: reads, reactor: reactor)
        guard exchange.request.follow == true, !run.phase.isTerminal else { return relay.catchUp(to: nil) }
        exchange.connection.markStreaming()
        let id = dispatcher.followOutput(run, from: from, relay.live) { position in relay.catchUp(to: position) }
        relay.park()
        outputFollows.access { $0[Self.key(of: exchange.connection), default: []].append(id) }
        if exchange.connection.isClosed { closed(exchange.connection) }
    }

    /// The run asked for: `run`, or the latest run of `action`; the peer must be allowed to read it.
    private func outputRun(_ request: Request, _ generation: Generation, _ peer: Peer) async throws(BatonError) -> RunSnapshot {
        let run: RunSnapshot
        if let id = request.run {
            guard let detail = try await history.run(id) else { throw .unknownRun(id) }
            run = detail.run
        } else if let name = request.action {
            guard let latest = try await history.runs(HistoryFilter(actions: [name], limit: 1)).first else {
                throw generation.actions[name] == nil ? .unknownAction(name) : .badRequest("\(name) has no runs yet")
            }
            run = latest
        } else {
            throw .badRequest("output needs \"run\" or \"action\"")
        }
        try await require(.read, run.action, generation, request, peer)
        return run
    }
}

/// Sends one client a run's output: what the history has from `from` up to where the live chunks
/// start, then the live ones (held meanwhile, in order), then the final answer once the run ends.
final class OutputRelay: Sendable {
    private struct State {
        /// Live chunks that came while the history was read; nil once they go straight out.
        var held: [OutputChunk]? = []
        /// The bytes of `held`, counted against the client's unsent output.
        var heldBytes = 0
        /// Where the next chunk sent starts: the `from` a resumed request would give.
        var next: Int64
        var ended = false
    }

    private let exchange: Exchange
    private let runID: Int64
    private let history: any HistoryReader
    private let reads: ReadDriver
    private let reactor: Reactor
    /// The loop's: the live follower and each step of the catch-up run there; only the history's
    /// pages are read off it (by the read driver), and come back to it.
    private let state: LoopOwned<State>

    init(_ exchange: Exchange, run: RunSnapshot, from: Int64, history: any HistoryReader, reads: ReadDriver, reactor: Reactor) {
        self.exchange = exchange
        self.reads = reads
        self.reactor = reactor
        runID = run.id
        self.history = history
        state = LoopOwned(State(next: from), on: reactor)
    }

    /// The dispatcher's follower: each live chunk, then nil at the run's end (handled on the loop).
    /// A chunk held while the history is read counts against the client's unsent output
    /// (`Caller.hold`): a client that stops reading is closed at its limit instead of batond
    /// keeping the whole run for it, and what was held is let go as soon as the client has gone.
    var live: Conductor.OutputFollower {
        { [self] chunk in reactor.onLoop { [self] in received(chunk) } }
    }

    private func received(_ chunk: OutputChunk?) {
        let closed = exchange.connection.isClosed
        // Exactly one of this and `catchUp` finishes: whichever sees the other's mark.
        let (send, finishNow, hold) = state.access { state -> (Bool, Bool, Int) in
            guard let chunk else {
                state.ended = true
                return (false, state.held == nil, 0)
            }
            guard state.held == nil else {
                if closed { state.held = []; state.heldBytes = 0; return (false, false, 0) }
                state.held!.append(chunk)
                state.heldBytes += chunk.bytes.count
                return (false, false, chunk.bytes.count)
            }
            state.next = chunk.end
            return (!closed, false, 0)
        }
        if hold > 0 { exchange.connection.hold(hold) }
        if let chunk, send { exchange.event(Self.event(exchange.id, chunk)) }
        if finishNow { finish() }
    }

    /// Sends what the history has from the offset up to `position` (all of it when nil), a page
    /// at a time, then what was held; finishes when the run is not followed, or has ended meanwhile.
    func catchUp(to position: Int64?) {
        reactor.onLoop { [self] in readPage(to: position, dropped: 0) }
    }

    /// The next page of the history (on the loop); its chunks go out, and the page after it is
    /// read once the client has taken them (flow control: a slow reader is waited for, not dropped).
    private func readPage(to position: Int64?, dropped: Int64) {
        let from = state.access { $0.next }
        if let position, from >= position { return caughtUp(to: position, dropped: dropped) }
        reads.read({ [history, runID] () async throws(BatonError) -> OutputPage? in
            try await history.output(of: runID, from: from, maxBytes: Service.outputPage)
        }) { [self] result in
            switch result {
            case let .failure(error): exchange.fail(error)
            case .success(nil): caughtUp(to: position, dropped: dropped)
            case let .success(page?):
                let chunks = page.chunks.compactMap { Self.cut($0, below: position) }
                for chunk in chunks { exchange.event(Self.event(exchange.id, chunk)) }
                exchange.connection.whenDrained(below: Service.outputPage) { [self] in
                    reactor.onLoop { [self] in
                        if exchange.connection.isClosed { return letGo() }
                        // Bytes the history dropped between the last chunk and the position are skipped.
                        let end = chunks.last?.end ?? position ?? page.total
                        state.access { $0.next = max($0.next, end) }
                        if chunks.isEmpty { caughtUp(to: position, dropped: page.dropped) } else { readPage(to: position, dropped: page.dropped) }
                    }
                }
            }
        }
    }

    /// The history is sent up to `position`: then what was held, and the end if it came.
    private func caughtUp(to position: Int64?, dropped: Int64) {
        guard let position else { return finish(dropped: dropped) }
        let (held, bytes, ended) = state.access { state -> ([OutputChunk], Int, Bool) in
            state.next = max(state.next, position)
            defer { state.held = nil; state.heldBytes = 0 }
            if let last = state.held?.last { state.next = last.end }
            return (state.held ?? [], state.heldBytes, state.ended)
        }
        if bytes != 0 { exchange.connection.hold(-bytes) }
        for chunk in held { exchange.event(Self.event(exchange.id, chunk)) }
        if ended { finish(dropped: dropped) }
    }

    /// The client went while the history was read: what was held for it goes now, not at the run's end.
    private func letGo() {
        state.access { state in
            guard state.held != nil else { return }
            state.held = []
            state.heldBytes = 0
        }
    }

    /// Followed live: a restart in place may end the request where it got (the client resumes
    /// from the last byte it was sent). Parked before any chunk went out: an output read sends
    /// nothing twice when resent with the same `from`. The exchange's finish or fail (a failed
    /// page read included) unparks it.
    func park() { exchange.park() }

    /// The final answer: the run as the history has it, and where the output sent ends.
    private func finish(dropped: Int64? = nil) {
        reads.read({ [history, runID] () async throws(BatonError) -> RunSnapshot? in try await history.run(runID)?.run }) { [self] result in
            switch result {
            case let .success(run):
                var response = Response(id: exchange.id)
                response.run = run
                response.outputEnd = state.access { $0.next }
                response.outputDropped = dropped
                exchange.finish(response)
            case let .failure(error): exchange.fail(error)
            }
        }
    }

    /// The part of a chunk before `position` (all of it when nil), or nil when none is.
    private static func cut(_ chunk: OutputChunk, below position: Int64?) -> OutputChunk? {
        guard let position, chunk.end > position else { return chunk }
        guard chunk.start < position else { return nil }
        var cut = chunk
        cut.bytes.removeLast(Int(chunk.end - position))
        return cut
    }

    static func event(_ id: RequestID?, _ chunk: OutputChunk) -> Response {
        var response = Response(id: id, ok: nil)
        response.event = "output"
        response.chunk = chunk
        return response
    }
}
