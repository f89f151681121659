import BatonCore
import BatonIPC
import FoundationEssentials

/// A connection to batond from Swift: press an action and await its outcome, or follow it as an
/// `AsyncSequence`; query status and history. One connection carries every call at once, each
/// matched to its answer by the protocol's `id` (docs/protocol.md).
///
/// Cancelling the task of a call leaves the run: batond cancels nothing when a caller goes away
/// (other callers may share the run); `cancel(run:)` is the explicit stop. When the connection
/// ends, every call waiting on it throws `.unavailable` and later calls do too at once: a
/// reconnect is the caller's choice, by making a new client.
public final class BatonClient: Sendable {
    /// Where the client connected (the socket's path), for messages.
    public let socket: String
    let connection: Connection

    /// Connects to batond's socket: `socket`, else where the `baton` CLI looks (`$BATON_SOCKET`,
    /// the user's own daemon's socket when it exists, else the system daemon's). Throws
    /// `.unavailable` naming the path when batond cannot be reached.
    public convenience init(socket: String? = nil) throws(BatonClientError) {
        let path = socket ?? SocketPath.search()
        self.init(transport: try SocketTransport(path: path), name: path)
    }

    /// A client over another transport (a test's fake, a forwarded stream); `name` is for messages.
    public init(transport: any BatonTransport, name: String) {
        socket = name
        connection = Connection(transport: transport)
    }

    // Ends the connection: calls still waiting (only possible from other tasks holding no
    // reference to the client, e.g. an unawaited handle's outcome) throw `.unavailable`.
    deinit { connection.transport.close() }

    /// Ends the connection now; every call waiting on it throws `.unavailable`.
    public func close() {
        connection.transport.close()
    }

    /// Triggers `action` and waits for its run to end: its outcome, also when another trigger's
    /// run is shared (`join`). Throws `.cancelled(by:run:)` when the run ended cancelled (unless
    /// `throwingOnCancel` is false), `.failed` when it failed and `throwingOnFailure` is set, and
    /// batond's refusals (`.busy`, `.forbidden`, `.unknownAction`, `.badParam`, …). `force` runs
    /// even inside the action's cooldown, where the action allows it; otherwise a trigger inside
    /// it returns the last success with decision `.cooled`. Cancelling the task leaves the run
    /// running (it throws `CancellationError`).
    public func run(_ action: String, params: [String: String] = [:], policy: Policy? = nil, force: Bool = false,
                    throwingOnCancel: Bool = true, throwingOnFailure: Bool = false) async throws -> RunOutcome {
        let response = try await call(Self.trigger(action, params: params, policy: policy, force: force))
        return try Self.ended(try RunOutcome(response), throwingOnCancel: throwingOnCancel, throwingOnFailure: throwingOnFailure)
    }

    /// Triggers `action` and answers once its run is durably queued (`detach`), without following
    /// it: the run as it then is, with the decision (a join's run may be loading already). The
    /// refusals are those of `run`.
    public func detach(_ action: String, params: [String: String] = [:], policy: Policy? = nil,
                       force: Bool = false, slot: Timestamp? = nil) async throws -> RunOutcome {
        var request = Self.trigger(action, params: params, policy: policy, force: force, slot: slot)
        request.detach = true
        return try RunOutcome(try await call(request))
    }

    /// Triggers `action` and returns at once: the handle's `updates` are the run's phases and
    /// progress as batond commits them, then the run at its end; its `outcome` is the end, with
    /// the errors of `run`.
    /// `slot` makes it the firing of a schedule slot: triggers of one action and slot make one run,
    /// and a slot whose run ended runs nothing (decision `.slotRan`, with that run).
    public func trigger(_ action: String, params: [String: String] = [:], policy: Policy? = nil, force: Bool = false,
                        slot: Timestamp? = nil, throwingOnCancel: Bool = true, throwingOnFailure: Bool = false) -> RunHandle {
        let (updates, continuation) = AsyncThrowingStream<RunUpdate, any Error>.makeStream()
        let answer = Answer<RunOutcome>()
        let sink = Sink(event: { response in
            if let update = RunUpdate(response) { continuation.yield(update) }
        }, end: { result in
            let outcome = Result { () throws -> RunOutcome in
                try Self.ended(try RunOutcome(try Self.answer(result)), throwingOnCancel: throwingOnCancel,
                               throwingOnFailure: throwingOnFailure)
            }
            // The end comes as the final answer, not as an event: it is the last update.
            if case let .success(response) = result, response.ok == true, let run = response.run {
                continuation.yield(RunUpdate(run: run, transition: nil))
            }
            continuation.finish(throwing: outcome.refusal)
            answer.finish(outcome)
        })
        // Sent before the handle exists: whoever leaves, leaves a request that was sent (or failed at once).
        let id = connection.handle(.call(Self.trigger(action, params: params, policy: policy, force: force, slot: slot), sink))
        return RunHandle(updates: updates, answer: answer) { [connection] in
            if let id { connection.handle(.leave(id)) }
        }
    }

    /// Sends `request` and awaits its final answer; `events` gets each event line before it.
    /// A failed answer throws its `BatonClientError`; a cancelled task leaves the request.
    func call(_ request: Request, events: @escaping @Sendable (Response) -> Void = { _ in }) async throws -> Response {
        // The request's id, taken before it is sent: a cancellation that comes first (even before
        // the request is sent) leaves by it; the connection's multiplexer sorts out which came first.
        let id = connection.reserve()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Response, any Error>) in
                let sink = Sink(event: events) { result in continuation.resume(with: Result { try Self.answer(result) }) }
                connection.handle(.call(request, sink, reserved: id))
            }
        } onCancel: { [connection] in
            connection.handle(.leave(id))
        }
    }

    /// The final answer, or the error it stands for.
    static func answer(_ result: Result<Response, RequestEnding>) throws -> Response {
        switch result {
        case .failure(.left): throw CancellationError()
        case let .failure(.unavailable(reason)): throw BatonClientError.unavailable(reason)
        case .failure(.restarting): throw BatonClientError.restarting(BatonClientError.notTaken)
        case let .success(response):
            if response.ok == false {
                throw response.error.map(BatonClientError.init) ?? .internal("batond refused the request without saying why")
            }
            return response
        }
    }

    /// The outcome, or the error a cancelled or failed run is, where the caller asked.
    static func ended(_ outcome: RunOutcome, throwingOnCancel: Bool, throwingOnFailure: Bool) throws(BatonClientError) -> RunOutcome {
        switch outcome.phase {
        case .cancelled where throwingOnCancel: throw .cancelled(by: outcome.run.cancelledBy, run: outcome.run)
        case .failure where throwingOnFailure: throw .failed(outcome)
        default: return outcome
        }
    }

    static func trigger(_ action: String, params: [String: String], policy: Policy?, force: Bool, slot: Timestamp? = nil) -> Request {
        Request(op: .trigger, action: action, params: params.isEmpty ? nil : params, policy: policy, force: force ? true : nil,
                slot: slot?.rawValue)
    }
}

extension RunUpdate {
    /// The update an event line carries, if it is one (`watching` is not).
    init?(_ response: Response) {
        guard response.event == "update", let run = response.run else { return nil }
        self.init(run: run, transition: response.transition)
    }
}

extension Result {
    /// The error of a failure, nil for a success.
    var refusal: Failure? {
        if case let .failure(error) = self { return error }
        return nil
    }
}
