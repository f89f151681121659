import BatonCore

/// The requests one connection carries, as a value: each gets the next id, its events and its
/// final answer go to its sink by that id, and a lost connection ends every one still waiting.
/// `BatonClient` holds it under a lock and performs the effects after releasing it.
struct Multiplexer<Sink> {
    enum Event {
        /// A request to send, answered to `sink`; with the id `reserve` took for it, if any.
        case call(Request, Sink, reserved: Int64? = nil)
        /// A line from batond.
        case line(Response)
        /// The caller of request `id` stopped waiting (its task was cancelled); batond is not told.
        case leave(Int64)
        /// The connection ended.
        case lost(String)
    }

    enum Effect {
        /// Start reading the connection (before the first request's line is written).
        case start
        /// Write this request, which carries id `id`.
        case write(id: Int64, Request)
        /// An event line of a request still waiting.
        case event(Sink, Response)
        /// The final answer of a request, which is no longer waiting.
        case answer(Sink, Response)
        /// A request that will get no answer, and why.
        case fail(Sink, Ending)
    }

    typealias Ending = RequestEnding

    /// The requests waiting for their final answer, by id. Each sink leaves it exactly once,
    /// with an `answer` or a `fail`: nothing is delivered to it after that.
    private(set) var pending: [Int64: Sink] = [:]
    private var nextID: Int64 = 1
    private var started = false
    /// Set once the connection ended: later calls fail at once (a reconnect is a new client).
    private(set) var lostReason: String?
    /// The requests waiting that batond has sent a line for (an event): it took them.
    private var taken: Set<Int64> = []
    /// batond said it restarts in place (`restarting`): it takes nothing more on this connection.
    private var restarted = false
    /// Ids `reserve` took whose request has not come yet, and those of them whose caller left first.
    private var reserved: Set<Int64> = []
    private var leftFirst: Set<Int64> = []

    /// Takes the id the caller's next request will carry (`.call(…, reserved:)`), before it is
    /// sent: a caller that leaves before it was sent (a cancelled task) leaves by it.
    mutating func reserve() -> Int64 {
        defer { nextID += 1 }
        reserved.insert(nextID)
        return nextID
    }

    mutating func handle(_ event: Event) -> [Effect] {
        switch event {
        case let .call(request, sink, reservedID):
            let left = reservedID.map { reserved.remove($0) != nil && leftFirst.remove($0) != nil } ?? false
            if restarted { return [.fail(sink, .restarting)] }
            if let lostReason { return [.fail(sink, .unavailable(lostReason))] }
            let id = reservedID ?? nextID
            if reservedID == nil { nextID += 1 }
            var request = request
            request.id = .number(id)
            defer { started = true }
            let opening: [Effect] = started ? [] : [.start]
            // Its caller left before it was sent: sent all the same, then ended as a leave right after would.
            if left { return opening + [.write(id: id, request), .fail(sink, .left)] }
            pending[id] = sink
            return opening + [.write(id: id, request)]
        case let .line(response) where response.restarting == true && response.id == nil:
            return restarting()
        case let .line(response):
            // A refusal without an id answers the connection (a connection limit): every request
            // gets it, and later ones are failed with its message, since batond closes next.
            if response.refusesConnection {
                if lostReason == nil { lostReason = response.error?.message ?? "batond refused the connection" }
                defer { pending = [:] }
                return pending.sorted { $0.key < $1.key }.map { .answer($0.value, response) }
            }
            guard case let .number(id)? = response.id, let sink = pending[id] else { return [] }
            guard response.ok != nil else {
                taken.insert(id)
                return [.event(sink, response)]
            }
            pending[id] = nil
            taken.remove(id)
            return [.answer(sink, response)]
        case let .leave(id):
            if reserved.contains(id) {
                leftFirst.insert(id)
                return []
            }
            taken.remove(id)
            guard let sink = pending.removeValue(forKey: id) else { return [] }
            return [.fail(sink, .left)]
        case let .lost(reason):
            if lostReason == nil { lostReason = reason }
            let ended = pending.sorted { $0.key < $1.key }.map { Effect.fail($0.value, .unavailable(lostReason!)) }
            pending = [:]
            taken = []
            return ended
        }
    }

    /// batond's last line on the connection, before it restarts in place: a request it sent a
    /// line for was taken and is ended here (followed: the caller follows on, on a new client); one
    /// it sent nothing for was never read, and may be sent again (`.restarting`).
    private mutating func restarting() -> [Effect] {
        restarted = true
        if lostReason == nil { lostReason = Self.restartedReason }
        defer { pending = [:]; taken = [] }
        return pending.sorted { $0.key < $1.key }.map { id, sink in
            taken.contains(id) ? .fail(sink, .unavailable(Self.restartedReason)) : .fail(sink, .restarting)
        }
    }

    static var restartedReason: String { "batond restarted or stopped while this was followed (its last line); a new connection reaches the next batond" }
}

/// Why a request got no final answer.
enum RequestEnding: Error, Equatable {
    /// Its caller stopped waiting.
    case left
    /// The connection ended first.
    case unavailable(String)
    /// batond restarted in place before it read the request: it was not taken, and may be sent again.
    case restarting
}

extension Response {
    /// Whether this is batond's refusal of the connection itself (`busy` with no id: a
    /// connection limit), sent before it closes the connection; other lines without an id
    /// (a request batond could not read) answer nobody in particular and are passed over.
    var refusesConnection: Bool { id == nil && ok == false && error?.code == .busy }
}
