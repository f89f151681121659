import BatonCore
import Synchronization

/// One request and the connection to answer it on: sends the final answer (or error) exactly
/// once, and ends the request then. Whether it is parked (`park`) is its own, so that however it
/// ends (`finish` or `fail`, from any path) the connection's count of parked requests goes back.
struct Exchange: Sendable {
    let request: Request
    let connection: any Caller
    /// Shared by the copies of this exchange (a struct handed to closures): a flag that each
    /// change swaps, answering what it was, so no lock.
    private let parked = Flag()

    init(request: Request, connection: any Caller) {
        self.request = request
        self.connection = connection
    }

    var id: RequestID? { request.id }
    var peer: Peer { connection.peer }

    /// The request now follows a stream (`Caller.park`); once at most, undone by `finish`/`fail`.
    func park() {
        if !parked.value.exchange(true, ordering: .acquiringAndReleasing) { connection.park() }
    }

    func finish(_ response: Response) {
        finish(line: response.jsonLine())
    }

    /// The final answer, already written as a line (`RenderedRuns`).
    func finish(line: [UInt8]) {
        if parked.value.exchange(false, ordering: .acquiringAndReleasing) { connection.unpark() }
        connection.send(line)
        connection.endRequest()
    }

    func fail(_ error: BatonError) {
        finish(.failure(request.id, WireError(error)))
    }

    /// An event before the final answer.
    func event(_ response: Response) {
        connection.send(response.jsonLine())
    }

    /// An event already written as a line.
    func event(line: [UInt8]) {
        connection.send(line)
    }

    /// A flag the copies of one exchange share.
    final class Flag: Sendable {
        let value = Atomic(false)
    }
}

/// Relays a followed run's updates to a client as events, then the final answer once the run's
/// end is durable (or `shutting_down` if batond stops first).
/// Both are the loop's: the dispatcher answers a trigger and calls its followers there.
final class RunRelay: Sendable {
    private let exchange: Exchange
    /// The answer so far (decision, shared) and the run as last seen.
    private let answer: LoopOwned<Response>
    /// Where its lines' snapshots are written once.
    private let rendered: RenderedRuns

    init(_ exchange: Exchange, reactor: Reactor, rendered: RenderedRuns) {
        self.exchange = exchange
        self.rendered = rendered
        answer = LoopOwned(Response(id: exchange.id), on: reactor)
    }

    /// What the final answer says besides the run (a trigger's decision).
    func set(_ fill: (inout Response) -> Void) { answer.access(fill) }

    /// The conductor's follower for this client.
    var follower: Conductor.Follower {
        { [self] update in
            guard let update else { return end() }
            answer.access { $0.run = update.run }
            guard !update.run.phase.isTerminal else { return }
            exchange.event(line: rendered.updateLine(exchange.id, update))
            // The client knows the run now: a restart in place may end the request here, and
            // the client waits for the run on the new batond.
            // Parked from the first update on (`Exchange.park` is once; its finish/fail unparks).
            exchange.park()
        }
    }

    private func end() {
        // Moved out, not copied: the relay's answer is over.
        let final = answer.access { answer in
            var final = Response(id: nil)
            swap(&final, &answer)
            return final
        }
        guard let run = final.run, run.phase.isTerminal else {
            let id = final.run.map { "run \($0.id)" } ?? "the run"
            return exchange.fail(.stopped("batond stopped before \(id) ended; it stays in the history"))
        }
        exchange.finish(line: rendered.line(final, last: true))
    }
}
